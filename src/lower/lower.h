// The lowering stage's interface: one graph node lowered to prepared OpenCL
// kernel launches (NodeBuilder, lower_node), what the session calls. The
// operator families' lowerings live in one file each (lower/*.cpp, their
// shared helpers in lower/ops.h), the ones for OpenCL CPU devices such as
// PoCL in lower/opencl_cpu/. A lowering sets every kernel argument once; a
// run only enqueues.
#pragma once
#include <CL/cl.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "device/device.h"
#include "graph/graph.h"
#include "lower/kernel_choice.h"
#include "optimize/kernel_catalog.h"

namespace texplan::lower {

// Kernels index tensors with 32-bit ints (fast on GPUs); dims beyond this
// rank are rejected (the node falls back to the CPU).
constexpr int kMaxRank = 8;
// Passed by value; matches `Dims` in src/kernels/common.cl. Right-aligned:
// unused leading dims are 1 (sizes) or 0 (strides).
struct Dims {
  cl_int d[kMaxRank];
};

// The scalars of the convolution and GEMM kernels as one argument each;
// match ConvParams and GemmParams in src/kernels/common.cl. Each kernel
// argument costs time at every launch
// (docs/kernel-choices.md#kernel-scalars-in-one-struct).
struct ConvParams {
  cl_int xo = 0, wo = 0, bo = 0, yo = 0;  // element offsets of X, W, the bias, Y
  cl_int has_bias = 0, c = 0, h = 0, w = 0, oc = 0, oh = 0, ow = 0, kh = 0, kw = 0, sh = 1, sw = 1, ph = 0,
         pw = 0, dh = 1, dw = 1, groups = 1;
  cl_int pool_h = 0, pool_w = 0;  // POOL2: the pooled output
  cl_int splits = 1, kslice = 0;  // SPLITK
};
struct GemmParams {
  cl_int ao = 0, bo = 0, co = 0, yo = 0;  // element offsets of A, B, C, Y
  cl_int m = 0, n = 0, k = 0, a_sm = 0, a_sk = 0, b_sk = 0, b_sn = 0, c_sm = 0, c_sn = 0, has_c = 0;
  cl_int splits = 1, kslice = 0;  // SPLITK
  cl_float alpha = 1, beta = 1;
  Dims batch{}, a_sb{}, b_sb{}, c_sb{};
};

// RecurrentSteps' scalars; match RecurrentParams in src/kernels/common.cl.
struct RecurrentParams {
  cl_int xwo = 0, ro = 0, rbo = 0, h0o = 0, c0o = 0, po = 0, yo = 0, co = 0;
  cl_int steps = 0, batch = 0, hidden = 0, upg = 0;
  cl_int reverse = 0, has_rb = 0, has_h0 = 0, has_c0 = 0, has_p = 0, input_forget = 0, node = 0;
  cl_float clip = 0;
};
// FusedAttention's scalars; match AttentionParams in src/kernels/common.cl.
struct AttentionParams {
  cl_int qo = 0, ko = 0, vo = 0, mo = 0, yo = 0;
  cl_int heads = 1, sq = 0, sk = 0, dh = 0, dv = 0, has_mask = 0, masked_rows_zero = 0;
  cl_int q_sb = 0, q_sh = 0, q_si = 0, q_sd = 0;
  cl_int k_sb = 0, k_sh = 0, k_sj = 0, k_sd = 0;
  cl_int v_sb = 0, v_sh = 0, v_sj = 0, v_sd = 0;
  cl_int m_sb = 0, m_sh = 0, m_si = 0, m_sj = 0;
  cl_int y_sb = 0, y_sh = 0, y_si = 0;
  cl_float scale = 1;
};

// Where a tensor lives: a pool (or weight) buffer and a byte offset in it.
struct Location {
  cl_mem mem = nullptr;
  int64_t byte_offset = 0;
};

// A tensor as a kernel argument: two arguments, the buffer and the offset in
// elements of the tensor's type.
struct TensorArg {
  cl_mem mem;
  cl_int offset;
};

// A texture as a kernel argument (TEXR/TEXW in texture_common.cl): the
// image, the pixel where the tensor starts in it, and its layout (wide rows:
// the tensor's H and C4 and the fold; NC4HW4 rows: 0, 0, 1).
struct TextureArg {
  cl_mem mem = nullptr;
  cl_int base = 0;
  cl_int layout_h = 0, layout_c4 = 0, layout_fold = 1;
};

// A bare memory object as a kernel argument: an image, or a buffer read
// from its start (packed weights).
struct MemArg {
  cl_mem mem;
};

struct Launch {
  cl_kernel kernel = nullptr;
  std::string name;
  cl_uint dims = 1;
  size_t global[3] = {1, 1, 1};
  size_t local[3] = {1, 1, 1};
  bool has_local = false;
  cl_uint args = 0;  // arguments set so far
  std::vector<cl_mem> mems;  // the memory objects among them
  // splitk_zero: the `zero_count` elements it zeroes from `zeroes`.
  // splitk_finish: the index of its arguments (Z, zo, ztotal) that zero
  // such a range too, or -1 (absorb_zeroing).
  TensorArg zeroes{nullptr, 0};
  int64_t zero_count = 0;
  int zero_args = -1;
};

// Merges `zero` (a splitk_zero launch) into `finish` (a splitk_finish
// launch enqueued right before it): one launch fewer where the two split
// products follow each other. The caller proves that nothing between them
// touches the zeroed range (runtime/session_lowering.cpp).
void absorb_zeroing(Launch& finish, const Launch& zero);

struct Range {
  cl_uint dims = 1;
  size_t global[3] = {1, 1, 1};
  size_t local[3] = {1, 1, 1};
  bool has_local = false;
};
// n work-items in groups of `group` (global rounded up; kernels bound-check).
Range linear_range(int64_t n, size_t group = 128);
// CPU devices (PoCL): `n` work-items that each do a row's or tile's worth of
// vector work, in groups of up to 64 and at least 16 groups where n allows
// (the groups are what PoCL spreads over its threads). lower/shape.cpp.
Range cpu_item_range(int64_t n);
// Whole work-groups: `groups` (x,y,z) of `local` (x,y,z).
Range group_range(std::vector<size_t> groups, std::vector<size_t> local);

int64_t ceil_div(int64_t a, int64_t b);
// Checked narrowing for kernel arguments; throws Error if out of int range.
cl_int i32(int64_t v);

// A kernel file and the build options of the variant wanted; `prelude` is
// generated OpenCL C placed before the file (fused epilogues, epilogue_cl.h).
struct Source {
  Source(const char* f) : file(f) {}
  Source(const char* f, std::string d, std::string p = "") : file(f), defines(std::move(d)), prelude(std::move(p)) {}
  const char* file;
  std::string defines;
  std::string prelude;
};

// Everything lowering one node sees: its tensors, their device locations,
// and a way to create prepared launches.
class NodeBuilder {
 public:
  NodeBuilder(runtime::Device& dev, const Graph& g, const Node& n, std::function<Location(int)> locate)
      : node(n), dev_(dev), g_(g), locate_(std::move(locate)) {}
  ~NodeBuilder();  // releases launches not taken by the caller
  NodeBuilder(const NodeBuilder&) = delete;
  NodeBuilder& operator=(const NodeBuilder&) = delete;

  const Node& node;
  std::vector<Launch> launches;  // take with std::swap to own the kernels

  int64_t opset() const { return g_.opset; }
  int inputs() const { return int(node.inputs.size()); }
  bool has_in(int i) const { return i < inputs() && node.inputs[i] >= 0; }
  const Tensor& in(int i) const { return g_.tensors.at(node.inputs.at(i)); }
  const Tensor& out(int i) const { return i == 0 && out_part_ ? out_part_->tensor : g_.tensors.at(node.outputs.at(i)); }
  // Value of input i if it is a constant with data, else null.
  const HostTensor* constant(int i) const;
  TensorArg arg_in(int i) const { return arg(node.inputs.at(i)); }
  TensorArg arg_out(int i) const;
  // Windows (graph.h TensorWindow: a patch's part of a larger tensor): a
  // lowering whose kernels address tensor `t` through its storage's strides
  // takes the window (the strides; contiguous ones for a tensor that is no
  // window). The session refuses a node whose windows were not all taken.
  bool is_window(int t) const { return g_.tensors.at(t).window.has_value(); }
  bool in_window(int i) const { return has_in(i) && is_window(node.inputs.at(i)); }
  bool out_window(int i) const { return (i == 0 && out_part_) || is_window(node.outputs.at(i)); }
  std::vector<int64_t> take_window(int t);
  std::vector<int64_t> take_in_window(int i) { return take_window(node.inputs.at(i)); }
  std::vector<int64_t> take_out_window(int i);
  // Windowed inputs and outputs of the node that no kernel took.
  std::vector<int> untaken_windows() const;
  // Output 0 written as every other plane of its tensor (a FusedConv's
  // ShuffledOutput, graph.h: its conv's channels): from here on out(0) has
  // `shape` (4D), arg_out(0) starts `shift` elements in, and its element i
  // lies at i + (i / plane) * plane from there, plane = H x W. A window the
  // kernels must take with take_out_interleave (window_output does), not
  // take_out_window.
  void write_output_interleaved(const Shape& shape, int64_t shift);
  // The plane of output 0 so written, now taken; 0 where it is not.
  int64_t take_out_interleave();
  bool output_interleave_taken() const { return out_part_ && out_part_->taken; }

  int compute_units() const { return dev_.info().compute_units; }
  int64_t local_mem_bytes() const { return dev_.info().local_mem_bytes; }
  const std::string& device_type() const { return dev_.info().type; }  // "gpu", "cpu", ...
  const runtime::Device& device() const { return dev_; }
  // Variants named for measurements and tests (SessionOptions::kernel_choice);
  // the default chooses by shape, device and tuning cache.
  KernelChoice kernel_choice;
  // texplan's GPU kernels on every device (KernelChoice::conv set): the
  // lowerings skip their CPU-device (PoCL) forms.
  bool gpu_kernels_forced() const { return !kernel_choice.conv.empty(); }
  // Matrix products (conv, GEMM) may round inputs to tf32 on tensor cores
  // (SessionOptions::precision; set only where the device has them): lower/mma.h.
  bool tf32 = false;
  bool used_tf32 = false;  // set by a lowering that prepared tf32 kernels
  bool used_split_k = false;  // set by a lowering that split a product over K (launch_splitk_zero, SPLITK_ONE)
  // Float32 tensors (activations, weights, packed weights) are stored as
  // IEEE half (Precision::Fp16): kernels are built with -DTEXPLAN_HALF
  // (common.cl's real_t, LD, ST), and a kernel file without that form
  // throws NoHalfKernel (the session runs the node on the CPU instead).
  bool half = false;
  // Bytes of one element of dtype `t` in device memory.
  size_t stored_size(DataType t) const { return half && t == DataType::Float32 ? 2 : element_size(t); }
  // Kernels whose indices are data (Gather) report an index out of range in
  // the session's fault flags (src/kernels/shape.cl index_fault), which the
  // session reads with a run's outputs and raises: the flags and this
  // node's id. Unset (builders outside a session): such nodes fall back.
  struct FaultFlags {
    cl_mem mem = nullptr;
    cl_int node = 0;
  };
  std::function<FaultFlags()> index_faults;

  // Prepares kernel `name` from src/kernels/`src.file` with `args`
  // (TensorArg, MemArg, int, float, Dims, ConvParams, GemmParams, AttentionParams,
  // RecurrentParams) for the
  // given range.
  template <class... A>
  void launch(const Source& src, const char* name, const Range& r, const A&... args) {
    Launch& l = new_launch(src, name, r);
    (set_arg(l, l.args, args), ...);
  }
  // Appends arguments to the last prepared launch (a variable tail, such as
  // a fused epilogue's extra inputs).
  void more_args(const TensorArg& t) { set_arg(launches.back(), launches.back().args, t); }
  void more_args(const TextureArg& t) { set_arg(launches.back(), launches.back().args, t); }
  void more_args(const Dims& d) { set_arg(launches.back(), launches.back().args, d); }
  void more_args(const MemArg& m) { set_arg(launches.back(), launches.back().args, m); }
  void more_args(const cl_int& v) { set_arg(launches.back(), launches.back().args, v); }
  void more_args(const float& v) { set_arg(launches.back(), launches.back().args, v); }

  // Textures (lower/texture.cpp): the image holding tensor `t`, the pixel
  // where it starts in it and its layout (`mem` null for a buffer);
  // `images_1d` when they are image1d_buffer views (kernels -DTEX1D).
  void set_images(std::function<TextureArg(int)> image, bool one_d) { image_ = std::move(image), images_1d_ = one_d; }
  TextureArg image(int t) const { return image_ && t >= 0 ? image_(t) : TextureArg{}; }
  bool images_1d() const { return images_1d_; }
  // A read-only device buffer holding `bytes` of `data` (packed weights),
  // owned by `buffers` (take with std::swap, like `launches`).
  MemArg upload(const void* data, size_t bytes);
  // upload() of `count` floats as the node's float tensors are stored (half
  // where `half`).
  MemArg upload_floats(const float* data, size_t count);
  // upload() of the floats `make` returns, once per `key` and node (tuning's
  // candidates share it). The session keeps only the buffers that the
  // launches it takes read.
  MemArg packed(const std::string& key, const std::function<std::vector<float>()>& make);
  // A read-write device buffer of `count` ints, all 0 (split-K's
  // semaphores, gemm.cl split_start, which the kernels leave at 0; ROW_NORM's
  // semaphores and scratch row), owned by `buffers` too.
  MemArg semaphores(size_t count);
  std::vector<cl_mem> buffers;

 private:
  TensorArg arg(int tensor) const;
  Launch& new_launch(const Source& src, const char* name, const Range& r);
  void set_raw(Launch& l, cl_uint& index, size_t size, const void* value);
  void set_arg(Launch& l, cl_uint& i, const TensorArg& t) {
    if (t.mem) l.mems.push_back(t.mem);
    set_raw(l, i, sizeof(cl_mem), &t.mem);
    set_raw(l, i, sizeof(cl_int), &t.offset);
  }
  void set_arg(Launch& l, cl_uint& i, const TextureArg& t) {
    if (t.mem) l.mems.push_back(t.mem);
    set_raw(l, i, sizeof(cl_mem), &t.mem);
    for (const cl_int* v : {&t.base, &t.layout_h, &t.layout_c4, &t.layout_fold}) set_raw(l, i, sizeof(cl_int), v);
  }
  void set_arg(Launch& l, cl_uint& i, const cl_int& v) { set_raw(l, i, sizeof v, &v); }
  void set_arg(Launch& l, cl_uint& i, const float& v) { set_raw(l, i, sizeof v, &v); }
  void set_arg(Launch& l, cl_uint& i, const Dims& v) { set_raw(l, i, sizeof v, &v); }
  void set_arg(Launch& l, cl_uint& i, const ConvParams& v) { set_raw(l, i, sizeof v, &v); }
  void set_arg(Launch& l, cl_uint& i, const GemmParams& v) { set_raw(l, i, sizeof v, &v); }
  void set_arg(Launch& l, cl_uint& i, const AttentionParams& v) { set_raw(l, i, sizeof v, &v); }
  void set_arg(Launch& l, cl_uint& i, const RecurrentParams& v) { set_raw(l, i, sizeof v, &v); }
  void set_arg(Launch& l, cl_uint& i, const MemArg& m) {
    if (m.mem) l.mems.push_back(m.mem);
    set_raw(l, i, sizeof(cl_mem), &m.mem);
  }

  runtime::Device& dev_;
  const Graph& g_;
  std::function<Location(int)> locate_;
  std::function<TextureArg(int)> image_;
  bool images_1d_ = false;
  std::map<std::string, cl_mem> packed_;
  std::vector<int> taken_;
  struct OutputPart {
    Tensor tensor;
    int64_t shift = 0;
    bool taken = false;
  };
  std::optional<OutputPart> out_part_;
};

// Thrown by NodeBuilder::launch when `half` is set and kernel file `file`
// has no half-storage form (half_kernel_file); the session catches it.
struct NoHalfKernel {
  std::string file;
};
// Whether src/kernels/`file` compiles with -DTEXPLAN_HALF (its float
// tensors through real_t / LD / ST): KernelCatalog::half_kernel_files.
bool half_kernel_file(const std::string& file);

// Prepares the launches of one node. Returns false when no kernel covers the
// node (op, attributes or types): the caller runs it on the CPU instead.
bool lower_node(NodeBuilder& b);

// Nodes whose 4D activations are textures (texture_kernel, lower/ops.h:
// KernelCatalog::texture_kernel), and
// the BufferToTexture/TextureToBuffer conversions; throws Error where the
// storage assignment promised a kernel that does not cover the node.
void lower_texture(NodeBuilder& b);

// Ops with at least one OpenCL kernel (some attribute combinations may
// still fall back).
std::vector<std::string> kernel_ops();
// What this stage's kernels run (texture kernels, fused forms per device
// type, half-storage kernel files), for the optimizer (lower/catalog.cpp).
const KernelCatalog& kernel_catalog();

}  // namespace texplan::lower
