// Builds small ONNX models in tests, so the suite needs no model files.
#pragma once
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace texplan::test {

struct OnnxBuilder {
  onnx::ModelProto m;
  OnnxBuilder(int64_t opset = 13) {
    m.set_ir_version(7);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m.mutable_graph()->set_name("g");
  }
  static void set_type(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims,
                       int elem = onnx::TensorProto::FLOAT) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* s = tt->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = s->add_dim();
      if (d >= 0) dim->set_dim_value(d);
      else dim->set_dim_param("N");
    }
  }
  OnnxBuilder& input(const std::string& n, const std::vector<int64_t>& dims, int elem = onnx::TensorProto::FLOAT) {
    set_type(m.mutable_graph()->add_input(), n, dims, elem);
    return *this;
  }
  OnnxBuilder& output(const std::string& n) {
    m.mutable_graph()->add_output()->set_name(n);
    return *this;
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                        const std::string& name = "") {
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + out[0] : name);
    for (auto& i : in) n->add_input(i);
    for (auto& o : out) n->add_output(o);
    return n;
  }
  static void attr_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  }
  static void attr_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  onnx::TensorProto* initializer(const std::string& n, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(n);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (auto d : dims) t->add_dims(d);
    for (auto x : v) t->add_float_data(x);
    return t;
  }
  onnx::TensorProto* initializer_i64(const std::string& n, const std::vector<int64_t>& dims,
                                     const std::vector<int64_t>& v) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(n);
    t->set_data_type(onnx::TensorProto::INT64);
    for (auto d : dims) t->add_dims(d);
    for (auto x : v) t->add_int64_data(x);
    return t;
  }
  // Writes dir/name/name.onnx and returns its path.
  std::string save(const std::filesystem::path& dir, const std::string& name) const {
    std::filesystem::create_directories(dir / name);
    auto p = dir / name / (name + ".onnx");
    std::ofstream f(p, std::ios::binary);
    m.SerializeToOstream(&f);
    return p.string();
  }
};

// A folder for one test's files, removed when the test process exits (each
// CTest case is its own process); TEXPLAN_KEEP_TEST_DIRS set keeps them.
inline std::filesystem::path temp_dir(const std::string& tag) {
  struct Made {
    std::vector<std::filesystem::path> dirs;
    ~Made() {
      if (std::getenv("TEXPLAN_KEEP_TEST_DIRS")) return;
      std::error_code ec;
      for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
    }
  };
  static Made made;
  auto d = std::filesystem::temp_directory_path() / ("texplan-test-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  if (std::find(made.dirs.begin(), made.dirs.end(), d) == made.dirs.end()) made.dirs.push_back(d);
  return d;
}

}  // namespace texplan::test
