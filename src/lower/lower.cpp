#include "lower/ops.h"

#include <algorithm>
#include <climits>
#include <map>

#include "lower/tuning.h"
#include "optimize/sharing.h"
#include "reference/common.h"

namespace texplan::lower {

Range linear_range(int64_t n, size_t group) {
  Range r;
  r.global[0] = size_t(std::max<int64_t>(1, ceil_div(n, int64_t(group)))) * group;
  r.local[0] = group;
  r.has_local = true;
  return r;
}

Range group_range(std::vector<size_t> groups, std::vector<size_t> local) {
  Range r;
  r.dims = cl_uint(groups.size());
  for (size_t k = 0; k < groups.size(); ++k) {
    r.global[k] = std::max<size_t>(1, groups[k]) * local[k];
    r.local[k] = local[k];
  }
  r.has_local = true;
  return r;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

cl_int i32(int64_t v) {
  if (v > INT_MAX || v < INT_MIN) throw Error("value " + std::to_string(v) + " exceeds the kernels' 32-bit indexing");
  return cl_int(v);
}

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t k = s.size(); k-- > 0;) {
    st[k] = acc;
    acc *= s[k];
  }
  return st;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> own = contiguous_strides(in), st(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k)
    if (in[k] != 1) st[lead + k] = own[k];
  return st;
}

Strided collapse(Strided s) {
  Strided r;
  r.strides.resize(s.strides.size());
  for (size_t k = 0; k < s.dims.size(); ++k) {
    if (s.dims[k] == 1) continue;
    bool merge = !r.dims.empty();
    // Mergeable when every operand steps over the previous dim exactly as
    // if the two were one: stride[prev] == stride[k] * dims[k].
    for (size_t o = 0; merge && o < s.strides.size(); ++o)
      merge = r.strides[o].back() == s.strides[o][k] * s.dims[k];
    if (merge) {
      r.dims.back() *= s.dims[k];
      for (size_t o = 0; o < s.strides.size(); ++o) r.strides[o].back() = s.strides[o][k];
    } else {
      r.dims.push_back(s.dims[k]);
      for (size_t o = 0; o < s.strides.size(); ++o) r.strides[o].push_back(s.strides[o][k]);
    }
  }
  return r;
}

Dims to_dims(const std::vector<int64_t>& v, int64_t pad) {
  if (v.size() > size_t(kMaxRank)) throw Error("rank " + std::to_string(v.size()) + " exceeds the kernels' limit");
  Dims d;
  size_t lead = kMaxRank - v.size();
  for (size_t k = 0; k < size_t(kMaxRank); ++k) d.d[k] = k < lead ? cl_int(pad) : i32(v[k - lead]);
  return d;
}

NodeBuilder::~NodeBuilder() {
  for (Launch& l : launches) clReleaseKernel(l.kernel);
  for (cl_mem m : buffers) clReleaseMemObject(m);
}

MemArg NodeBuilder::upload(const void* data, size_t bytes) {
  cl_int s = CL_SUCCESS;
  cl_mem m = clCreateBuffer(dev_.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, std::max<size_t>(bytes, 1),
                            const_cast<void*>(data), &s);
  if (s != CL_SUCCESS) throw Error("uploading " + std::to_string(bytes) + " bytes of packed weights: " + runtime::cl_error_name(s));
  buffers.push_back(m);
  return {m};
}

MemArg NodeBuilder::semaphores(size_t count) {
  const std::vector<cl_int> zeros(std::max<size_t>(count, 1), 0);
  cl_int s = CL_SUCCESS;
  cl_mem m = clCreateBuffer(dev_.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, zeros.size() * sizeof(cl_int),
                            const_cast<cl_int*>(zeros.data()), &s);
  if (s != CL_SUCCESS) throw Error("allocating " + std::to_string(count) + " split-K semaphores: " + runtime::cl_error_name(s));
  buffers.push_back(m);
  return {m};
}

MemArg NodeBuilder::upload_floats(const float* data, size_t count) {
  if (!half) return upload(data, count * sizeof(float));
  std::vector<uint16_t> h(count);
  reference::floats_to_halves(data, h.data(), count);
  return upload(h.data(), count * sizeof(uint16_t));
}

MemArg NodeBuilder::packed(const std::string& key, const std::function<std::vector<float>()>& make) {
  auto it = packed_.find(key);
  if (it != packed_.end() && std::find(buffers.begin(), buffers.end(), it->second) != buffers.end()) return {it->second};
  const std::vector<float> v = make();
  const MemArg m = upload_floats(v.data(), v.size());
  packed_[key] = m.mem;
  return m;
}

void launch_conv_kernel(NodeBuilder& b, const Source& src, const char* name, const Range& r, const TensorArg& w,
                        const TensorArg& bias, ConvParams p) {
  const TensorArg x = b.arg_in(0), y = b.arg_out(0);
  p.xo = x.offset, p.wo = w.offset, p.bo = bias.offset, p.yo = y.offset;
  b.launch(src, name, r, MemArg{x.mem}, MemArg{w.mem}, MemArg{bias.mem}, MemArg{y.mem}, p);
}

void launch_gemm_kernel(NodeBuilder& b, const Source& src, const char* name, const Range& r, const TensorArg& A,
                        const TensorArg& B, const TensorArg& C, const TensorArg& Y, GemmParams p) {
  p.ao = A.offset, p.bo = B.offset, p.co = C.offset, p.yo = Y.offset;
  b.launch(src, name, r, MemArg{A.mem}, MemArg{B.mem}, MemArg{C.mem}, MemArg{Y.mem}, p);
}

const HostTensor* NodeBuilder::constant(int i) const {
  if (!has_in(i)) return nullptr;
  const Tensor& t = in(i);
  return t.is_constant && t.has_data ? &t.value : nullptr;
}

std::vector<int64_t> NodeBuilder::take_window(int t) {
  if (is_window(t) && std::find(taken_.begin(), taken_.end(), t) == taken_.end()) taken_.push_back(t);
  return storage_strides(g_, t);
}

TensorArg NodeBuilder::arg_out(int i) const {
  TensorArg a = arg(node.outputs.at(i));
  if (i == 0 && out_part_) a.offset += i32(out_part_->shift);
  return a;
}

std::vector<int64_t> NodeBuilder::take_out_window(int i) {
  if (i == 0 && out_part_) throw Error("output 0 is written every other plane, not through a window's strides");
  return take_window(node.outputs.at(i));
}

void NodeBuilder::write_output_interleaved(const Shape& shape, int64_t shift) {
  OutputPart p{without_value(g_.tensors.at(node.outputs.at(0))), shift};
  p.tensor.shape = shape;
  out_part_ = std::move(p);
}

int64_t NodeBuilder::take_out_interleave() {
  if (!out_part_) return 0;
  out_part_->taken = true;
  const Shape& s = out_part_->tensor.shape;
  return s[2] * s[3];
}

std::vector<int> NodeBuilder::untaken_windows() const {
  std::vector<int> left;
  for (const auto* list : {&node.inputs, &node.outputs})
    for (int t : *list)
      if (t >= 0 && is_window(t) && std::find(taken_.begin(), taken_.end(), t) == taken_.end() &&
          std::find(left.begin(), left.end(), t) == left.end())
        left.push_back(t);
  return left;
}

std::string window_prelude() {
  return "#undef YI\n#undef YRUN\n#undef YWIN_PARAMS\n"
         "#define YWIN_PARAMS , Dims ywin_dims, Dims ywin_strides\n"
         "#define YI(i) strided_offset((i), ywin_dims, ywin_strides)\n"
         "#define YRUN(i, n) ((i) % ywin_dims.d[MAXR - 1] + (n) <= ywin_dims.d[MAXR - 1])\n";
}

Epilogue fused_epilogue(const NodeBuilder& b) {
  Epilogue e = Epilogue::parse(b.node);
  if (b.tf32 && b.out(0).stored_tf32) {
    using K = EpilogueOperand::Kind;
    const EpilogueOperand last = e.code.empty() ? EpilogueOperand{K::Input, 0, 0} : EpilogueOperand{K::Temp, int(e.code.size()) - 1, 0};
    e.code.push_back({"RoundTf32", {last}});
  }
  return e;
}

void window_output(NodeBuilder& b, FusedTail& tail) {
  if (tail.window || !b.out_window(0)) return;
  tail.window = true;
  std::string prelude;
  if (const int64_t plane = b.take_out_interleave()) {
    // Every other plane: one division a store where strided_offset over
    // [N, C, H, W] takes three, and YRUN lets the CPU kernels store a
    // plane's runs as vectors. The plane goes in ywin_dims' last dim.
    tail.ywin_dims = to_dims({plane}, 1);
    tail.ywin_strides = to_dims({1}, 1);
    prelude = "#undef YI\n#undef YRUN\n#undef YWIN_PARAMS\n"
              "#define YWIN_PARAMS , Dims ywin_dims, Dims ywin_strides\n"
              "#define YI(i) ((i) + (i) / ywin_dims.d[MAXR - 1] * ywin_dims.d[MAXR - 1])\n"
              "#define YRUN(i, n) ((i) % ywin_dims.d[MAXR - 1] + (n) <= ywin_dims.d[MAXR - 1])\n";
  } else {
    tail.ywin_dims = to_dims(b.out(0).shape, 1);
    tail.ywin_strides = to_dims(b.take_out_window(0), 0);
    prelude = window_prelude();
  }
  tail.prelude += "\n" + prelude;
  if (!tail.residual_prelude.empty()) tail.residual_prelude += "\n" + prelude;
}

void window_input(NodeBuilder& b, FusedTail& tail) {
  if (tail.xwindow || !b.in_window(0)) return;
  const Shape& x = b.in(0).shape;
  const std::vector<int64_t> s = b.take_in_window(0);
  if (x.size() != 4 || s[3] != 1 || (x[0] > 1 && s[0] != x[1] * s[1]))
    throw Error("input " + b.in(0).name + " is a window its kernels cannot address (planes not evenly apart)");
  tail.xwindow = true;
  tail.xwin_plane = i32(s[1]), tail.xwin_row = i32(s[2]), tail.xwin_w = i32(x[3]);
  const std::string p =
      "#undef XPLANE\n#undef XROW\n#undef XCOL\n#undef XCOLRUN\n#undef XWIN_PARAMS\n"
      "#define XWIN_PARAMS , int xwin_plane, int xwin_row, int xwin_w\n"
      "#define XPLANE(H, W) xwin_plane\n#define XROW(W) xwin_row\n"
      "#define XCOL(n) (((n) / xwin_w) * xwin_row + (n) % xwin_w)\n"
      "#define XCOLRUN(n, len) ((n) % xwin_w + (len) <= xwin_w)\n";
  tail.prelude += "\n" + p;
  if (!tail.residual_prelude.empty()) tail.residual_prelude += "\n" + p;
}

TensorArg NodeBuilder::arg(int tensor) const {
  const Tensor& t = g_.tensors.at(tensor);
  Location l = locate_(tensor);
  int64_t es = int64_t(stored_size(t.dtype));
  if (l.byte_offset % es != 0)
    throw Error("tensor " + t.name + " at byte offset " + std::to_string(l.byte_offset) +
                " is not aligned to its element size");
  return {l.mem, i32(l.byte_offset / es)};
}

Launch& NodeBuilder::new_launch(const Source& src, const char* name, const Range& r) {
  if (half && !half_kernel_file(src.file)) throw NoHalfKernel{src.file};
  cl_int s = CL_SUCCESS;
  const std::string options = src.defines + (half ? " -DTEXPLAN_HALF" : "") +
                              (kernel_choice.unoptimized_programs ? " -cl-opt-disable" : "");
  const cl_program program = dev_.program(src.file, options, src.prelude);
  cl_kernel k = clCreateKernel(program, name, &s);
  if (s != CL_SUCCESS) throw Error(std::string("clCreateKernel(") + name + "): " + runtime::cl_error_name(s));
  Launch& l = launches.emplace_back();
  l.kernel = k;
  l.name = name;
  l.dims = r.dims;
  for (int d = 0; d < 3; ++d) l.global[d] = r.global[d], l.local[d] = r.local[d];
  l.has_local = r.has_local;
  return l;
}

void NodeBuilder::set_raw(Launch& l, cl_uint& index, size_t size, const void* value) {
  cl_int s = clSetKernelArg(l.kernel, index, size, value);
  if (s != CL_SUCCESS)
    throw Error("clSetKernelArg(" + l.name + ", " + std::to_string(index) + "): " + runtime::cl_error_name(s));
  ++index;
}

void absorb_zeroing(Launch& finish, const Launch& zero) {
  cl_uint i = cl_uint(finish.zero_args);
  const cl_int count = i32(zero.zero_count);
  for (auto [size, value] : {std::pair<size_t, const void*>{sizeof(cl_mem), &zero.zeroes.mem},
                             {sizeof(cl_int), &zero.zeroes.offset}, {sizeof(cl_int), &count}}) {
    cl_int s = clSetKernelArg(finish.kernel, i++, size, value);
    if (s != CL_SUCCESS) throw Error(std::string("clSetKernelArg(splitk_finish, zeroing): ") + runtime::cl_error_name(s));
  }
  const size_t group = finish.has_local ? finish.local[0] : 1;
  finish.global[0] = std::max(finish.global[0], size_t(ceil_div(zero.zero_count, int64_t(group))) * group);
  finish.mems.push_back(zero.zeroes.mem);
  finish.zero_args = -1;  // one range per launch
}

bool half_kernel_file(const std::string& file) { return kernel_catalog().half_kernel_file(file); }

bool lower_patch_write(NodeBuilder& b);  // lower/patch_write.cpp

namespace {
using Lowering = bool (*)(NodeBuilder&);
const std::map<std::string, Lowering>& table() {
  static const std::map<std::string, Lowering> t = {
      {"Relu", lower_unary}, {"LeakyRelu", lower_unary}, {"Clip", lower_unary},
      {"Sigmoid", lower_unary}, {"Tanh", lower_unary}, {"HardSigmoid", lower_unary},
      {"HardSwish", lower_unary}, {"Erf", lower_unary}, {"Gelu", lower_unary},
      {"Exp", lower_unary}, {"Log", lower_unary}, {"Neg", lower_unary},
      {"Abs", lower_unary}, {"Reciprocal", lower_unary}, {"Sqrt", lower_unary},
      {"Floor", lower_unary}, {"Ceil", lower_unary}, {"Round", lower_unary}, {"Elu", lower_unary},
      {"Softplus", lower_unary}, {"Sin", lower_unary}, {"Cos", lower_unary},
      {"Add", lower_binary}, {"Sub", lower_binary}, {"Mul", lower_binary},
      {"Div", lower_binary}, {"Pow", lower_binary}, {"Max", lower_binary},
      {"Min", lower_binary}, {"Equal", lower_binary}, {"Less", lower_binary},
      {"Greater", lower_binary}, {"Where", lower_where}, {"Cast", lower_cast},
      {"Conv", lower_conv}, {"ConvTranspose", lower_conv_transpose},
      {"Gemm", lower_gemm}, {"MatMul", lower_matmul},
      {"MaxPool", lower_pool}, {"AveragePool", lower_pool},
      {"GlobalAveragePool", lower_global_pool}, {"GlobalMaxPool", lower_global_pool},
      {"ReduceMean", lower_reduce}, {"ReduceSum", lower_reduce},
      {"ReduceMax", lower_reduce}, {"ReduceMin", lower_reduce},
      {"Softmax", lower_softmax}, {"LogSoftmax", lower_softmax},
      {"BatchNormalization", lower_batch_norm}, {"LayerNormalization", lower_layer_norm},
      {"InstanceNormalization", lower_instance_norm},
      {"Identity", lower_copy}, {"Reshape", lower_copy}, {"Flatten", lower_copy},
      {"Squeeze", lower_copy}, {"Unsqueeze", lower_copy},
      {"Concat", lower_concat}, {"Split", lower_split}, {"Transpose", lower_transpose},
      {"Slice", lower_slice}, {"Expand", lower_expand}, {"Tile", lower_tile},
      {"Gather", lower_gather}, {"Pad", lower_pad}, {"Resize", lower_resize},
      {"GridSample", lower_grid_sample},
      {"FusedConv", lower_fused_conv}, {"FusedMatMul", lower_fused_matmul},
      {"FusedElementwise", lower_fused_elementwise}, {"FusedGather", lower_fused_gather},
      {"FusedConvMaxPool", lower_fused_conv_maxpool},
      {"FusedMlp", lower_fused_mlp},
      {"FusedAttention", lower_fused_attention},
      {"RecurrentSteps", lower_recurrent_steps},
      {"PatchWrite", lower_patch_write},
  };
  return t;
}
}  // namespace

bool lower_node(NodeBuilder& b) {
  auto it = table().find(b.node.op_type);
  return it != table().end() && it->second(b);
}

std::vector<std::string> kernel_ops() {
  std::vector<std::string> v;
  for (auto& [op, f] : table()) v.push_back(op);
  return v;
}

double time_candidate(NodeBuilder& b, const std::function<bool()>& emit) {
  runtime::Device* dev = tuning_device();
  if (!dev) return -1.0;
  const size_t before = b.launches.size();
  double ms = -1.0;
  // A candidate the device's compiler refuses cannot run: the others are timed.
  bool emitted = false;
  try {
    emitted = emit();
  } catch (const Error&) {
    emitted = false;
  }
  if (emitted) {
    std::vector<TimedLaunch> timed;
    for (size_t k = before; k < b.launches.size(); ++k) {
      const Launch& l = b.launches[k];
      timed.push_back({l.kernel, l.dims, l.global, l.has_local ? l.local : nullptr});
    }
    ms = time_launches(*dev, timed);
  }
  for (size_t k = before; k < b.launches.size(); ++k) clReleaseKernel(b.launches[k].kernel);
  b.launches.resize(before);
  return ms;
}

}  // namespace texplan::lower
