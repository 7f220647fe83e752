// texplan's Python module (pybind11): plan a model, run it, read and write
// tensors as numpy arrays. The pure-Python package python/texplan/ re-exports
// these names; see its docstring for the user's view.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

#include "device/device.h"
#include "import/onnx_import.h"
#include "pipeline/pipeline.h"
#include "report/report.h"
#include "report/timeline.h"
#include "runtime/session.h"

namespace py = pybind11;
using namespace texplan;

namespace {

// Sessions on one device share its OpenCL queue (session.h): runs are
// serialized here, with the GIL released while the device works.
std::mutex g_run_mutex;

// A bad argument (ValueError) and a missing file (FileNotFoundError): the
// module's exception translator raises these Python exceptions for them,
// texplan.Error for every other Error.
struct BadArgument : Error {
  using Error::Error;
};
struct MissingFile : Error {
  using Error::Error;
};

void need_existing(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (path.empty()) throw BadArgument(what + ": empty path");
  if (!std::filesystem::exists(path, ec)) throw MissingFile(what + ": '" + path + "': no such file or folder");
}

void need_one_of(const std::string& value, const std::vector<std::string>& allowed, const std::string& what) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  throw BadArgument(what + ": '" + value + "': give one of " + list);
}

// off, auto or RxC (optimize/patch.h), as ValueError otherwise.
void need_patch(const std::string& patch, const std::string& what) {
  try {
    parse_patch(patch);
  } catch (const Error& e) {
    throw BadArgument(what + ": " + e.what());
  }
}

void need_texture_mode(const std::string& textures) {
  need_one_of(textures, {"none", "auto", "pools", "views"}, "textures");
}

py::object to_python(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

py::dtype numpy_dtype(DataType t) {
  switch (t) {
    case DataType::Float32: return py::dtype("float32");
    case DataType::Float16: return py::dtype("float16");
    case DataType::Float64: return py::dtype("float64");
    case DataType::Int8: return py::dtype("int8");
    case DataType::UInt8: return py::dtype("uint8");
    case DataType::Int32: return py::dtype("int32");
    case DataType::Int64: return py::dtype("int64");
    case DataType::Bool: return py::dtype("bool");
  }
  throw Error("unknown data type");
}

DataType texplan_dtype(const py::dtype& d) {
  const char k = d.kind();
  const auto n = d.itemsize();
  if (k == 'f' && n == 4) return DataType::Float32;
  if (k == 'f' && n == 2) return DataType::Float16;
  if (k == 'f' && n == 8) return DataType::Float64;
  if (k == 'i' && n == 1) return DataType::Int8;
  if (k == 'u' && n == 1) return DataType::UInt8;
  if (k == 'i' && n == 4) return DataType::Int32;
  if (k == 'i' && n == 8) return DataType::Int64;
  if (k == 'b') return DataType::Bool;
  throw py::type_error("numpy dtype " + py::cast<std::string>(py::str(py::handle(d))) + " has no texplan equivalent");
}

// numpy -> HostTensor of type `want` (the model's type for that input), made
// contiguous; one copy into the tensor's bytes. A numpy array must have that
// dtype already (no silent cast of float64 to float32); a list or scalar
// has none to get wrong and is converted.
HostTensor from_numpy(const py::handle& obj, DataType want, const std::string& what) {
  if (py::isinstance<py::array>(obj)) {
    const std::string got = py::str(obj.attr("dtype")), expected = py::str(numpy_dtype(want));
    if (got != expected)
      throw py::type_error(what + ": expected dtype " + expected + ", got " + got + " (convert it with .astype(np." +
                           expected + "))");
  }
  py::array a = py::array::ensure(obj);
  if (!a) throw py::type_error(what + ": not convertible to a numpy array");
  py::array c = py::array::ensure(a.attr("astype")(numpy_dtype(want), py::arg("copy") = false),
                                  py::array::c_style | py::array::forcecast);
  Shape shape(c.shape(), c.shape() + c.ndim());
  HostTensor t(want, shape);
  if (size_t(c.nbytes()) != t.bytes.size()) throw Error(what + ": size mismatch");
  std::memcpy(t.bytes.data(), c.data(), t.bytes.size());
  return t;
}

// HostTensor -> numpy without a copy: the array owns the moved tensor.
py::array to_numpy(HostTensor&& t) {
  auto* owned = new HostTensor(std::move(t));
  py::capsule owner(owned, [](void* p) { delete static_cast<HostTensor*>(p); });
  std::vector<py::ssize_t> shape(owned->shape.begin(), owned->shape.end());
  return py::array(numpy_dtype(owned->dtype), shape, {}, owned->bytes.data(), owner);
}

struct TensorInfo {
  std::string name;
  Shape shape;
  DataType dtype;
};

py::dict info_dict(const TensorInfo& i) {
  py::dict d;
  d["name"] = i.name;
  d["shape"] = py::tuple(py::cast(i.shape));
  d["dtype"] = numpy_dtype(i.dtype);
  return d;
}

// ONNX's name of a tensor type, as onnxruntime's NodeArg.type gives it.
std::string onnx_type_name(DataType t) {
  switch (t) {
    case DataType::Float32: return "tensor(float)";
    case DataType::Float16: return "tensor(float16)";
    case DataType::Float64: return "tensor(double)";
    case DataType::Int8: return "tensor(int8)";
    case DataType::UInt8: return "tensor(uint8)";
    case DataType::Int32: return "tensor(int32)";
    case DataType::Int64: return "tensor(int64)";
    case DataType::Bool: return "tensor(bool)";
  }
  throw Error("unknown data type");
}

// A graph input or output as onnxruntime's NodeArg describes it: shape
// entries are ints, a symbolic dimension's name (str), or None.
struct NodeArg {
  std::string name;
  py::list shape;
  std::string type;
  DataType dtype;
};

NodeArg node_arg(const InputSignature& sig) {
  NodeArg a{sig.name, py::list(), onnx_type_name(sig.dtype), sig.dtype};
  for (size_t k = 0; k < sig.dims.size(); ++k) {
    if (sig.dims[k] >= 0) a.shape.append(sig.dims[k]);
    else if (!sig.symbols[k].empty()) a.shape.append(sig.symbols[k]);
    else a.shape.append(py::none());
  }
  return a;
}

// The model's input signatures with what `import` fixes (dims by name,
// whole input shapes) filled in.
std::vector<InputSignature> fixed_signatures(std::vector<InputSignature> sigs, const ImportOptions& import) {
  for (InputSignature& sig : sigs) {
    if (auto it = import.input_shapes.find(sig.name); it != import.input_shapes.end()) {
      sig.dims = it->second;
      sig.symbols.assign(sig.dims.size(), "");
      sig.has_shape = true;
      continue;
    }
    for (size_t k = 0; k < sig.dims.size(); ++k)
      if (auto d = import.dims.find(sig.symbols[k]); sig.dims[k] < 0 && d != import.dims.end()) sig.dims[k] = d->second;
  }
  return sigs;
}

// ValueError unless `shape` fits `sig` (its rank, every fixed dimension).
void need_shape(const InputSignature& sig, const Shape& shape, const std::string& what) {
  if (!sig.has_shape) return;
  bool fits = shape.size() == sig.dims.size();
  for (size_t k = 0; fits && k < shape.size(); ++k) fits = sig.dims[k] < 0 || sig.dims[k] == shape[k];
  if (!fits) throw BadArgument(what + ": expected shape " + sig.to_string() + ", got " + to_string(shape));
}

// A model imported with its weights, planned for a device, and ready to run
// (the sequence of `texplan run`).
class PySession {
 public:
  PySession(const std::string& path, const std::string& device_spec, const std::string& strategy,
            const std::string& textures, ImportOptions shapes, size_t cache_size, const std::string& patch,
            runtime::Precision precision, bool program_cache)
      : strategy_(strategy) {
    runtime::DeviceOptions device_options;
    device_options.program_cache = program_cache;
    device_ = runtime::open_device(device_spec, device_options);
    CompileOptions o;
    o.strategy = strategy;
    o.textures = textures;
    o.patch = patch;
    o.session.precision = precision;
    session_ = std::make_unique<ModelSession>(path, device_, o, shapes, cache_size);
    model_ = session_->model_name();
    for (const auto& i : session_->inputs()) inputs_.push_back({i.name, i.dims, i.dtype});
    input_sigs_ = fixed_signatures(session_->inputs(), shapes);
    output_sigs_ = session_->declared_outputs();
  }

  py::dict run(const py::object& feeds) {
    std::vector<HostTensor> in;
    if (py::isinstance<py::dict>(feeds)) {
      py::dict d = feeds.cast<py::dict>();
      for (const auto& [k, v] : d) {
        std::string key = py::str(k);
        bool known = false;
        for (const auto& i : inputs_) known = known || i.name == key;
        if (!known) throw BadArgument(model_ + ": no input named '" + key + "'" + input_names());
      }
      for (const auto& i : inputs_)
        if (!d.contains(i.name)) throw BadArgument(model_ + ": input '" + i.name + "' not given" + input_names());
      for (size_t k = 0; k < inputs_.size(); ++k) in.push_back(input(k, d[py::str(inputs_[k].name)]));
    } else {
      if (!py::isinstance<py::sequence>(feeds) || py::isinstance<py::str>(feeds) || py::isinstance<py::bytes>(feeds))
        throw py::type_error(model_ + ": inputs: give a dict {name: array} or a list of arrays" + input_names());
      py::sequence seq = feeds.cast<py::sequence>();
      if (seq.size() != inputs_.size())
        throw BadArgument(model_ + ": " + std::to_string(inputs_.size()) + " input(s) expected, " +
                    std::to_string(seq.size()) + " given" + input_names());
      for (size_t k = 0; k < inputs_.size(); ++k) in.push_back(input(k, seq[k]));
    }
    std::vector<HostTensor> out;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(g_run_mutex);
      out = session_->run(in);
    }
    const auto names = session_->outputs();
    py::dict result;
    for (size_t k = 0; k < out.size() && k < names.size(); ++k)
      result[py::str(names[k].first)] = to_numpy(std::move(out[k]));
    return result;
  }

  // Input k from Python: its dtype (TypeError) and shape (ValueError) checked.
  HostTensor input(size_t k, const py::handle& obj) const {
    const std::string what = model_ + ": input '" + inputs_[k].name + "'";
    HostTensor t = from_numpy(obj, inputs_[k].dtype, what);
    need_shape(input_sigs_[k], t.shape, what);
    return t;
  }

  std::string input_names() const {
    std::string s = " (inputs:";
    for (const auto& i : inputs_) s += " " + i.name;
    return s + ")";
  }

  std::string model_, strategy_;
  std::vector<TensorInfo> inputs_;  // shape: -1 where the dimension is symbolic
  std::vector<InputSignature> input_sigs_;  // with the dims and input shapes the session fixes
  std::vector<InputSignature> output_sigs_;  // as the file declares them
  std::shared_ptr<runtime::Device> device_;
  std::unique_ptr<ModelSession> session_;
};

}  // namespace

PYBIND11_MODULE(_texplan, m) {
  m.doc() = "texplan: run neural networks on OpenCL in the least device memory (C++ core)";
  m.attr("__version__") = TEXPLAN_VERSION;
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  error.attr("__doc__") = "A failure that is not a bad argument (ValueError, TypeError) or a missing file "
                          "(FileNotFoundError): the model, the plan or the device; the message names the model, "
                          "node or tensor.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const MissingFile& e) {
      PyErr_SetString(PyExc_FileNotFoundError, e.what());
    } catch (const BadArgument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const Error& e) {
      error(e.what());
    } catch (const plan::PlanError& e) {
      error(e.what());
    }
  });

  m.def(
      "plan",
      [](const std::string& path, const std::string& strategy, const std::string& target, const std::string& textures,
         bool tensors, const std::string& patch, const std::string& precision) {
        need_existing(path, "plan");
        need_patch(patch, "plan: patch");
        need_one_of(precision, {"fp32", "tf32", "fp16"}, "plan: precision");
        if (strategy != "all") {
          std::vector<std::string> names = plan::strategy_names();
          if (std::find(names.begin(), names.end(), "best") == names.end()) names.push_back("best");
          need_one_of(strategy, names, "plan: strategy");
        }
        need_texture_mode(textures);
        nlohmann::json r;
        {
          py::gil_scoped_release release;
          plan::DeviceProfile dev = runtime::load_profile(target);
          report::PlanOptions opt;
          if (strategy != "all") opt.strategies = {strategy};
          opt.textures = parse_texture_mode(textures);
          opt.include_tensors = tensors;
          opt.patch = patch;
          opt.float_storage = runtime::float_storage(runtime::parse_precision(precision));
          r = report::plan_model(path, dev, opt);
          if (r["strategies"].size() == 1) {  // the chosen plan's numbers at the top
            const auto& s = r["strategies"][0];
            if (s.value("skipped", false)) throw Error(s.value("error", std::string("strategy ") + strategy + " failed"));
            for (const char* k : {"total_bytes", "buffer_bytes", "texture_bytes", "ratio", "valid", "error"})
              if (s.contains(k)) r[k] = s[k];
            r["strategy"] = s["name"];
          }
        }
        return to_python(r);
      },
      py::arg("path"), py::arg("strategy") = "best", py::arg("target") = "pocl", py::arg("textures") = "none",
      py::arg("tensors") = true, py::arg("patch") = "off", py::arg("precision") = "fp32",
      "Plans the activation memory of a model (.onnx file or model folder) and returns the report as a dict "
      "(the JSON of `texplan plan --json`, docs/plan-json.md). strategy: a name or 'all'; target: pocl, h100, "
      "adreno, a profile .json path, or opencl; textures: none, auto, pools or views (docs/strategies.md); tensors: "
      "include per-tensor placements; patch: off, auto or a grid 'RxC': the first stages run patch by patch "
      "(docs/patching.md).");

  m.def(
      "timeline",
      [](const py::object& report, const std::string& path) {
        if (!py::isinstance<py::dict>(report)) throw py::type_error("timeline: report: give the dict plan() returned");
        if (!path.ends_with(".svg") && !path.ends_with(".html") && !path.ends_with(".htm"))
          throw BadArgument("timeline: '" + path + "': give a .svg or .html file name");
        std::string text = py::str(py::module_::import("json").attr("dumps")(report));
        const nlohmann::json j = nlohmann::json::parse(text);
        try {
          report::check_timeline_report(j);
        } catch (const Error& e) {
          throw BadArgument(e.what());
        }
        report::write_timeline(j, path);
      },
      py::arg("report"), py::arg("path"),
      "Draws a plan() report (made with tensors=True) as a .svg or self-contained .html picture.");

  m.def(
      "load_tensor",
      [](const std::string& path) {
        need_existing(path, "load_tensor");
        return to_numpy(load_tensor_pb(path));
      },
      py::arg("path"),
      "Reads a serialized onnx.TensorProto (.pb, as in test_data_set_0/) into a numpy array.");
  m.def(
      "save_tensor",
      [](const py::array& a, const std::string& name, const std::string& path) {
        save_tensor_pb(from_numpy(a, texplan_dtype(a.dtype()), name), name, path);
      },
      py::arg("array"), py::arg("name"), py::arg("path"), "Writes a numpy array as a serialized onnx.TensorProto.");

  m.def(
      "devices",
      [] {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& d : runtime::list_devices())
          out.push_back({{"spec", "opencl:" + std::to_string(d.index)},
                         {"name", d.name},
                         {"platform", d.platform},
                         {"type", d.type},
                         {"version", d.version},
                         {"compute_units", d.compute_units},
                         {"profile", nlohmann::json::parse(d.profile.to_json())}});
        return to_python(out);
      },
      "Lists the OpenCL devices with the planner's profile of each.");

  py::class_<NodeArg>(m, "NodeArg",
                      "A graph input or output as onnxruntime's NodeArg describes it: name, shape (ints, the "
                      "names of symbolic dimensions as str, None where unnamed) and type ('tensor(float)').")
      .def_readonly("name", &NodeArg::name, "the tensor's name in the model")
      .def_readonly("shape", &NodeArg::shape, "the declared shape: int, or str for a symbolic dimension, or None")
      .def_readonly("type", &NodeArg::type, "the ONNX type name, as onnxruntime gives it: 'tensor(float)', ...")
      .def_property_readonly("dtype", [](const NodeArg& a) { return numpy_dtype(a.dtype); },
                             "the numpy dtype an input must have (run() does not cast)")
      .def("__repr__", [](const NodeArg& a) {
        return "NodeArg(name='" + a.name + "', type='" + a.type + "', shape=" + std::string(py::repr(a.shape)) + ")";
      });

  py::class_<PySession>(m, "Session",
                        "A model imported with its weights, planned and ready to run on an OpenCL device.\n\n"
                        "    s = texplan.Session('examples/models/tiny_cnn', device='pocl')\n"
                        "    out = s.run({'input': x})   # {output name: numpy array}\n\n"
                        "A model with symbolic dimensions (a batch exported as 'batch') is specialized once per\n"
                        "distinct input shape when run, and the last cache_size specializations are kept;\n"
                        "dims={'batch': 1} or input_shapes={'input': (1, 3, 224, 224)} fix dimensions for all.\n"
                        "Built kernels are kept on disk for the next process ($TEXPLAN_CACHE_DIR, else\n"
                        "~/.cache/texplan/programs); program_cache=False compiles them from source.")
      .def(py::init([](const std::string& path, const std::string& device, const std::string& strategy,
                       const std::string& textures, const std::map<std::string, int64_t>& dims,
                       const std::map<std::string, std::vector<int64_t>>& input_shapes, int64_t cache_size,
                       const std::string& patch, const std::string& precision, bool program_cache) {
             need_existing(path, "Session");
             need_texture_mode(textures);
             need_patch(patch, "Session: patch");
             need_one_of(precision, {"fp32", "tf32", "fp16"}, "Session: precision");
             if (cache_size < 1) throw BadArgument("Session: cache_size must be at least 1");
             ImportOptions shapes;
             for (const auto& [k, v] : dims) {
               if (v < 1) throw BadArgument("Session: dims['" + k + "'] = " + std::to_string(v) + ": must be at least 1");
               shapes.dims[k] = v;
             }
             for (const auto& [k, v] : input_shapes) shapes.input_shapes[k] = v;
             py::gil_scoped_release release;
             return std::make_unique<PySession>(path, device, strategy, textures, std::move(shapes), size_t(cache_size),
                                                patch, runtime::parse_precision(precision), program_cache);
           }),
           py::arg("path"), py::arg("device") = "pocl", py::arg("strategy") = "best", py::arg("textures") = "none",
           py::arg("dims") = std::map<std::string, int64_t>{},
           py::arg("input_shapes") = std::map<std::string, std::vector<int64_t>>{}, py::arg("cache_size") = 4,
           py::arg("patch") = "off", py::arg("precision") = "fp32", py::arg("program_cache") = true)
      .def("run", &PySession::run, py::arg("inputs"),
           "Runs the model. inputs: {name: array} or a list in input order; each numpy array must have its "
           "input's dtype (TypeError otherwise: no silent cast) and a shape that fits it (ValueError). Returns "
           "{output name: numpy array} (the arrays own the results, no copy). New input shapes of a model with "
           "symbolic dimensions are specialized (planned) on first use. For onnxruntime's run(output_names, "
           "feeds) returning a list, use texplan.InferenceSession.")
      .def(
          "run",
          [](PySession&, const py::object&, const py::object&) -> py::dict {
            throw py::type_error(
                "Session.run(inputs) takes one dict {name: array} or list; run(output_names, feeds) as onnxruntime "
                "calls it is texplan.InferenceSession's");
          },
          py::arg("output_names"), py::arg("feeds"), "Refuses onnxruntime's form (TypeError): see InferenceSession.")
      .def(
          "get_inputs",
          [](const PySession& s) {
            std::vector<NodeArg> v;
            for (const auto& sig : s.input_sigs_) v.push_back(node_arg(sig));
            return v;
          },
          "The model's inputs as NodeArgs, in input order (dimensions fixed by dims= or input_shapes= as ints).")
      .def(
          "get_outputs",
          [](const PySession& s) {
            std::vector<NodeArg> v;
            for (const auto& sig : s.output_sigs_) v.push_back(node_arg(sig));
            return v;
          },
          "The model's outputs as NodeArgs, in output order, as the file declares them.")
      .def_property_readonly("model", [](const PySession& s) { return s.model_; }, "the model's name")
      .def_property_readonly("strategy", [](const PySession& s) { return s.strategy_; }, "the planning strategy")
      .def_property_readonly("inputs",
                             [](const PySession& s) {
                               py::list l;
                               for (const auto& i : s.inputs_) {
                                 py::dict d = info_dict(i);
                                 py::list shape;
                                 for (int64_t v : i.shape) shape.append(v >= 0 ? py::object(py::int_(v)) : py::none());
                                 d["shape"] = py::tuple(shape);  // None where symbolic
                                 l.append(d);
                               }
                               return l;
                             },
                             "[{name, shape, dtype}] as the model declares them (None for a symbolic dimension)")
      .def_property_readonly("outputs",
                             [](const PySession& s) {
                               py::list l;
                               const auto dtypes = s.session_->output_dtypes();
                               const auto outs = s.session_->outputs();
                               for (size_t k = 0; k < outs.size(); ++k)
                                 l.append(info_dict({outs[k].first, outs[k].second, dtypes[k]}));
                               return l;
                             },
                             "[{name, shape, dtype}] of the last specialization run (empty before the first run "
                             "of a model with symbolic dimensions)")
      .def_property_readonly("device", [](const PySession& s) { return s.device_->info().name; },
                             "the OpenCL device's name")
      .def_property_readonly("lower_bound_bytes",
                             [](const PySession& s) { return s.session_->current_model().lower_bound_bytes; },
                             "the least activation memory any plan of the current specialization needs")
      .def_property_readonly("plan_bytes",
                             [](const PySession& s) { return s.session_->current_model().plan.total_bytes(); },
                             "the activation bytes of the current specialization's plan")
      .def_property_readonly("activation_bytes", [](const PySession& s) { return s.session_->current().activation_bytes(); },
                             "device bytes of the memory pools the current specialization allocated")
      .def_property_readonly("weight_bytes", [](const PySession& s) { return s.session_->current().weight_bytes(); },
                             "device bytes of the uploaded weights and constants")
      .def_property_readonly("last_run_ms", [](const PySession& s) { return s.session_->current().last_run_ms(); },
                             "wall time of the last run in ms, transfers included")
      .def_property_readonly("fallback_nodes", [](const PySession& s) { return s.session_->current().fallback_nodes(); },
                             "nodes that run on the CPU reference, 'name (op)'")
      .def_property_readonly("compilations", [](const PySession& s) { return s.session_->compilations(); },
                             "how many specializations were planned so far")
      .def_property_readonly("specializations",
                             [](const PySession& s) {
                               py::list l;
                               for (const auto& sp : s.session_->specializations()) {
                                 py::dict d;
                                 py::list shapes;
                                 for (const auto& x : sp.input_shapes) shapes.append(py::tuple(py::cast(x)));
                                 d["input_shapes"] = shapes;
                                 d["plan_bytes"] = sp.plan_bytes;
                                 d["lower_bound_bytes"] = sp.lower_bound_bytes;
                                 d["compile_ms"] = sp.compile_ms;
                                 d["runs"] = sp.runs;
                                 l.append(d);
                               }
                               return l;
                             },
                             "the cached specializations, most recently used first: input_shapes, plan_bytes, "
                             "lower_bound_bytes, compile_ms, runs")
      .def("__repr__", [](const PySession& s) {
        const auto sp = s.session_->specializations();
        return "<texplan.Session " + s.model_ + " on " + s.device_->info().name + ", " +
               (sp.empty() ? std::string("not specialized yet")
                           : human_bytes(sp.front().plan_bytes) + " of activations (" + s.strategy_ + ")") +
               ">";
      });
}
