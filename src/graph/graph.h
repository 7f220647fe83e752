// The in-memory model every stage after import works on: typed tensors with
// static shapes, and nodes in a valid execution order. It knows nothing of
// ONNX files, memory plans or OpenCL.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace texplan {

// Every failure a user can cause ends in one of these: a one-line message
// that names the model, the node or tensor, and the reason.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class DataType : uint8_t { Float32, Float16, Float64, Int8, UInt8, Int32, Int64, Bool };
size_t element_size(DataType t);
const char* to_string(DataType t);
inline bool is_float(DataType t) { return t == DataType::Float32 || t == DataType::Float16 || t == DataType::Float64; }

using Shape = std::vector<int64_t>;
// Number of elements; throws Error if a dim is negative or the product overflows.
int64_t element_count(const Shape& s);
std::string to_string(const Shape& s);  // "1x3x224x224"
std::string human_bytes(int64_t bytes);  // "3.06 MiB"

// Host-side tensor value: constants, weights, inputs and reference results.
// Construction allocates element_count(shape) * element_size(dtype) bytes,
// unless a HostTensorLimit on this thread forbids it (see below).
struct HostTensor {
  DataType dtype = DataType::Float32;
  Shape shape;
  std::vector<uint8_t> bytes;  // element_count(shape) * element_size(dtype)

  HostTensor() = default;
  HostTensor(DataType t, Shape s);
  int64_t count() const { return element_count(shape); }
  template <class T> T* data() { return reinterpret_cast<T*>(bytes.data()); }
  template <class T> const T* data() const { return reinterpret_cast<const T*>(bytes.data()); }
  // Values of an integer tensor (Int64/Int32/...) widened to int64.
  std::vector<int64_t> as_int64() const;
  std::vector<float> as_float() const;
};

// While one lives, HostTensors made on this thread may hold at most `bytes`
// bytes; a larger one throws Error before allocating. The importer sets it
// while folding constants, so a hostile model cannot make it allocate
// terabytes. Scopes nest; the innermost wins.
class HostTensorLimit {
 public:
  explicit HostTensorLimit(int64_t bytes);
  ~HostTensorLimit();
  HostTensorLimit(const HostTensorLimit&) = delete;
  HostTensorLimit& operator=(const HostTensorLimit&) = delete;
  static int64_t current();  // 0: no limit
  bool exceeded() const;     // a HostTensor was refused while this scope lived

 private:
  int64_t previous_;
  uint64_t refusals_at_start_;
};

struct Attribute {
  enum class Kind { Int, Float, String, Ints, Floats, Strings, Tensor } kind = Kind::Int;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  std::shared_ptr<HostTensor> tensor;

  // Attributes made in code (optimizer passes, tests, benches).
  static Attribute of_int(int64_t v);
  static Attribute of_float(float v);
  static Attribute of_string(std::string v);
  static Attribute of_ints(std::vector<int64_t> v);
  static Attribute of_floats(std::vector<float> v);
  static Attribute of_strings(std::vector<std::string> v);
  static Attribute of_tensor(HostTensor v);
};

// The strided view an operand of a product (MatMul, FusedMatMul) is read
// through, set by optimize's strided_product_operands where a chain of
// Slices, Transposes and Reshapes would otherwise copy it: element
// (i_0, ..., i_r-1) of the logical operand of `shape` is element
// offset + sum(i_d * strides[d]) of the input tensor, flat.
struct OperandView {
  int64_t offset = 0;
  Shape shape;
  std::vector<int64_t> strides;
};

// A FusedAttention's form (attention_form()): Y = softmax(scale * Q K^T + M) V
// over the last two axes, M the optional additive mask (input 3). Set by
// optimize's fuse_attention; read by the reference, the lowering, profile
// and the fp16 range pass (docs/fused-ops.md#fusedattention).
struct AttentionForm {
  float scale = 1.0f;
  // Input 1 holds K^T [..., D, Sk] (the score product's right operand as
  // the graph had it), not K [..., Sk, D]: no Transpose needed either way.
  bool k_transposed = false;
  // A row whose every score is -inf (all its keys masked) gives zeros, not
  // NaN: torch's export of a boolean mask, Where(IsNaN(P), 0, P).
  bool masked_rows_zero = false;
  // Y stored as Transpose(Y, output_perm) would hold it, its last axis
  // last: the heads' rows interleaved as the out-projection reads them,
  // the Transpose after the node dropped (optimize's
  // transposes_into_attention_outputs). Empty: Y as computed.
  std::vector<int64_t> output_perm;
};

// Recurrent cells (RNN, GRU, LSTM) as ONNX defines them: their gates, in
// ONNX's order (GRU z r h, LSTM i o f c), and the activations texplan runs.
enum class Recurrence : uint8_t { Rnn, Gru, Lstm };
enum class CellActivation : uint8_t { Sigmoid, Tanh, Relu };
inline int64_t gate_count(Recurrence k) { return k == Recurrence::Rnn ? 1 : k == Recurrence::Gru ? 3 : 4; }

// A RecurrentSteps' cell (recurrent_cell()): one direction of an RNN, GRU or
// LSTM over all its steps, the input's products already made. Inputs: XW
// [T, B, G*H] (X W^T plus the biases that do not depend on the state), R^T
// [H, G*H] (the state's product's right operand), and optionally GRU's Rb_h
// [H], initial h [B, H], LSTM's initial c [B, H] and peepholes P [3*H]
// (i o f). Outputs: Y [T, B, H], every step's
// h at its step's index, and LSTM's last c [B, H]. Set by import's
// lower_recurrent_ops; read by the reference, the validator, the lowering
// and profile (docs/optimizations.md#import-rewrites-srcimportrewritesh).
struct RecurrentCell {
  Recurrence kind = Recurrence::Lstm;
  std::vector<CellActivation> activations;  // RNN f; GRU f, g; LSTM f, g, h
  bool reverse = false;  // from the last step to the first
  float clip = 0;        // 0: none; else gate inputs clipped to [-clip, clip]
  bool input_forget = false;  // LSTM: f = 1 - i
  // GRU always has it: r multiplies (h R_h^T + Rb_h). (The other GRU form
  // needs r of every unit before that product: import unrolls it.)
  bool linear_before_reset = false;
};
// The largest state (batch x hidden floats) a RecurrentSteps takes: its
// kernel keeps one in each work-group's local memory (16 KiB).
constexpr int64_t kMaxRecurrentState = 4096;

// An elementwise program that a FusedConv applies to X before the product:
// conv(P(X, V1, ..., Vk), W) with operand x0 = X's element and x<j> = Vj at
// its input channel. V1..Vk (one value per input channel, [C, 1, 1] or
// [1, C, 1, 1], shared by every image) are the node's last k inputs,
// after its epilogue's (docs/fused-ops.md#channel-program-decisionschannel_program): DenseNet's
// BatchNormalization + Relu before each 1x1 conv, its copy never stored.
//
// With `depthwise`, X itself is first a depthwise convolution of input 0
// (one filter per channel, weights [C, 1, KH, KW] the last input, after
// V1..Vk), the program then over its sums: a MobileNet block's depthwise
// conv with its bias and activation (x0 + V1, Clip) taken into the
// projection, its output never stored (docs/fused-ops.md#depthwise-input-channelprogramdepthwise).
// The conv's own X is the depthwise output; input 0 is that conv's input.
struct ChannelDepthwise {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pads[4] = {0, 0, 0, 0};  // ONNX's order: top, left, bottom, right
};
// With `gate`, the last operand Vk is no input but computed in the conv's
// kernel from three (two without a bias): h [1, J, 1, 1], W [C, J, 1, 1]
// and b [C] in its place, Vk[c] = G(sum_j W[c, j] h[j] + b[c]) with G the
// gate's program (over x0): squeeze-and-excitation's second fully connected
// layer and its Sigmoid, taken into the projection that its scale feeds,
// so that layer's kernel never runs (docs/fused-ops.md#channel-gates).
struct ChannelGate {
  std::vector<std::string> program;  // graph/epilogue.h's form, over x0
  bool bias = true;
};
struct ChannelProgram {
  std::vector<std::string> program;  // graph/epilogue.h's form
  int operands = 0;                  // k
  std::optional<ChannelDepthwise> depthwise;
  std::optional<ChannelGate> gate;
  // The node's inputs after its epilogue's: the operands, the gate's in
  // place of the last, the depthwise weights.
  size_t trailing_inputs() const {
    return size_t(operands) + (gate ? (gate->bias ? 2 : 1) : 0) + (depthwise ? 1 : 0);
  }
};

// ShuffleNet's channel shuffle of two halves, Concat(a, b) -> Reshape [N,
// 2, C, H, W] -> Transpose(0, 2, 1, 3, 4) -> Reshape [N, 2C, H, W], written
// by the FusedConv computing one half (docs/fused-ops.md#shuffled-output):
// its Y has twice its conv's channels, the conv's channel c at Y's channel
// 2c + slot, and the node's last epilogue input (the other half, of the
// conv's shape, which the program does not read) copied to channel
// 2c + 1 - slot. The Concat, both Reshapes and the Transpose run nothing.
struct ShuffledOutput {
  int slot = 1;  // 0: the conv's output is the Concat's first input
};

// LayerNormalization over Y's last axis, taken into the FusedMatMul that
// produces it (BERT's post-norm layers: the sum of an out-projection or an
// MLP's second product and its residual, read by nothing else): Y =
// (Z - mean(Z)) / sqrt(var(Z) + epsilon) * gamma + beta row by row, Z the
// product's program. gamma and beta ([N], beta -1 where absent) are the
// node's last two inputs, after the epilogue's (docs/fused-ops.md#row-norm).
struct RowNorm {
  float epsilon = 1e-5f;
};

// What the optimizer decided about a node, for the stages after it. Only
// code sets these, never a model file: an attribute of a similar name in a
// model is an ordinary attribute (and import's schema check refuses it).
struct NodeDecisions {
  // A Concat whose producers write their slices of its output: it runs
  // nothing. Set by optimize's concat elision, dropped by storage
  // assignment (texture form) and patching (inputs not its own); read by
  // optimize/sharing.cpp, storage assignment and the offloader (skips it).
  bool elided = false;
  // The node may write its output over an input (sharing.h decides which).
  // Set by optimize (may_run_in_place) and patching (PatchWrite), dropped by
  // storage assignment (texture form); read by sharing and storage.
  bool in_place = false;
  // A Slice or Gather whose output is a view of its input at this byte offset; -1:
  // none. Set by optimize's slices_to_views (kept where the bound does not
  // rise); read by sharing.
  int64_t view_offset = -1;
  // A FusedConv whose last input scales X's channels (channel_scaled()).
  // Set by fuse's channel_scales_into_convs; read by the reference, the
  // runtime's conv kernels, patching, storage and the offload partition.
  bool channel_scaled = false;
  // Product operands read through strides, by input index (operand_view()).
  // Set by optimize's strided_product_operands; read by the reference, the
  // runtime's product kernels, profile and the offload partition.
  std::map<int, OperandView> operand_views;
  // A FusedAttention's scale and K layout (attention_form()).
  std::optional<AttentionForm> attention;
  // A RecurrentSteps' cell (recurrent_cell()).
  std::optional<RecurrentCell> recurrent_cell;
  // A FusedConv's program over X's channels (channel_program()). Set by
  // optimize's channel_programs_into_convs; read by the reference, the GPU
  // GEMM lowering, half_range, and the passes that refuse it (patching,
  // textures, offload).
  std::optional<ChannelProgram> channel_program;
  // A FusedConv whose Y is a channel shuffle of its conv's output and another
  // tensor (shuffled_output()). Set by optimize's
  // channel_shuffles_into_convs; read by the reference, the GPU lowering,
  // sharing (never in place), profile and the passes that refuse it
  // (patching, textures, offload).
  std::optional<ShuffledOutput> shuffled_output;
  // A FusedMatMul whose output rows are then layer-normalized (row_norm()).
  // Set by optimize's layer_norms_into_products; read by the reference, the
  // GPU lowering, and the passes that refuse it (offload, half storage).
  std::optional<RowNorm> row_norm;
};

struct Node {
  std::string name;     // never empty: the importer names unnamed nodes "<op>_<index>"
  std::string op_type;  // ONNX operator name, e.g. "Conv"
  std::vector<int> inputs;   // tensor ids; -1 for an omitted optional input
  std::vector<int> outputs;  // tensor ids; -1 for an omitted optional output
  std::map<std::string, Attribute> attrs;  // ONNX attributes, and fused ops' own (program, tile, ...)
  NodeDecisions decisions;

  bool has(const std::string& a) const { return attrs.count(a) != 0; }
  int64_t get_int(const std::string& a, int64_t dflt) const;
  float get_float(const std::string& a, float dflt) const;
  std::string get_string(const std::string& a, const std::string& dflt) const;
  std::vector<int64_t> get_ints(const std::string& a, std::vector<int64_t> dflt = {}) const;
  std::vector<float> get_floats(const std::string& a, std::vector<float> dflt = {}) const;
  std::vector<std::string> get_strings(const std::string& a) const;
};

// A 4D NCHW tensor that lives inside another's storage as a window:
// element (n, c, h, w) is element (n, c0 + c, y0 + h, x0 + w) of `base`,
// addressed with the strides of base's storage (optimize/patch.cpp sets it:
// a patch's part of a segment output, or the part of a patch tensor that a
// consumer reads). Kernels that take windows (runtime NodeBuilder::window)
// read and write it there; optimize/sharing.cpp places it in base's bytes.
struct TensorWindow {
  int base = -1;  // tensor id
  int64_t c0 = 0, y0 = 0, x0 = 0;
  bool operator==(const TensorWindow& o) const { return base == o.base && c0 == o.c0 && y0 == o.y0 && x0 == o.x0; }
};

struct Tensor {
  std::string name;
  DataType dtype = DataType::Float32;
  Shape shape;
  bool is_input = false;     // graph input fed by the user
  bool is_output = false;    // graph output, must stay valid after the run
  bool is_constant = false;  // initializer or folded constant: not an activation
  // fp16 storage holds value * 2^storage_exponent, so activations far outside
  // half's range keep their digits (optimize/half_range.h); 0 everywhere else.
  int8_t storage_exponent = 0;
  // --precision tf32: stored rounded to tf32 by its producer, since every
  // reader is a convolution that rounds its input so anyway, and then need
  // not (optimize/tf32_storage.h).
  bool stored_tf32 = false;
  // Constant values. Empty for weights whose bytes were not loaded (planning
  // without the .onnx.data file); `has_data` tells.
  HostTensor value;
  bool has_data = false;
  int producer = -1;  // node id, -1 for inputs and constants
  std::optional<TensorWindow> window;  // none: the tensor's storage is its own or an alias's (sharing.h)

  int64_t bytes() const { return element_count(shape) * int64_t(element_size(dtype)); }
};

// Every field of `t` but its value (has_data kept): the one list of a
// tensor's metadata, so copies that leave weights behind miss no field.
Tensor without_value(const Tensor& t);

// Input `input`'s view (decisions.operand_views), or none.
std::optional<OperandView> operand_view(const Node& n, int input);
void set_operand_view(Node& n, int input, const OperandView& v);
void clear_operand_view(Node& n, int input);

// A FusedConv whose last input S, one value per input channel, scales X
// first: conv(X * S, W) (decisions.channel_scaled, set by optimize's
// channel_scales_into_convs; docs/fused-ops.md).
bool channel_scaled(const Node& n);
void set_channel_scaled(Node& n);

// A FusedConv's channel program (NodeDecisions::channel_program); none on
// any other node.
std::optional<ChannelProgram> channel_program(const Node& n);
// Inputs of n that are operands of its own kernel, before any channel
// scale or channel program operands (and depthwise weights), or a row
// normalization's gamma and beta, at the end.
size_t operand_inputs_end(const Node& n);

// A FusedConv's shuffled output (NodeDecisions::shuffled_output); none on
// any other node. Its companion (the other half) is input
// operand_inputs_end(n) - 1.
std::optional<ShuffledOutput> shuffled_output(const Node& n);

// A FusedMatMul's row normalization (NodeDecisions::row_norm); none on any
// other node.
std::optional<RowNorm> row_norm(const Node& n);

// A FusedAttention's form; none on any other node (or a malformed one).
std::optional<AttentionForm> attention_form(const Node& n);
// A RecurrentSteps' cell; none on any other node.
const RecurrentCell* recurrent_cell(const Node& n);

// A Transpose's perm attribute, or where it has none ONNX's default for an
// input of `rank` axes: the axes reversed. Not checked to be a permutation.
std::vector<int64_t> transpose_perm(const Node& n, size_t rank);

// A convolution's output extent along one axis: `in` pixels padded by
// `pad_total`, a kernel of `k` taps `dilation` apart, `stride`.
int64_t conv_out_extent(int64_t in, int64_t pad_total, int64_t k, int64_t stride, int64_t dilation);
// The same for spatial axis `axis` of `rank` of conv node `n`, its padding
// from the node's auto_pad and pads: ONNX's output size (the lowering, the
// profile's FLOPs and patching's windows agree on it). Stride at least 1.
int64_t conv_out_extent(const Node& n, size_t axis, size_t rank, int64_t in, int64_t k, int64_t stride,
                        int64_t dilation);
// Padding before and after one spatial axis.
struct SpatialPad {
  int64_t begin = 0, end = 0;
};
// A conv or pool node's padding along spatial axis `axis` of `rank`, from its
// `prefix`auto_pad and `prefix`pads: SAME_UPPER and SAME_LOWER pad what makes
// `out` outputs of `in`, the odd pixel at the end (UPPER) or the beginning.
SpatialPad conv_axis_pad(const Node& n, size_t axis, size_t rank, int64_t in, int64_t out, int64_t k, int64_t stride,
                         int64_t dilation, const std::string& prefix = "");

struct Graph {
  std::string model_name;  // for messages: "resnet18"
  std::string model_path;
  int64_t opset = 0;
  // Quantize-Dequantize pairs import turned into float arithmetic: a
  // quantized model, whose outputs can differ from another runtime's by a
  // quantization step where a value lands near a rounding boundary.
  int quantized_pairs = 0;
  std::vector<Tensor> tensors;
  std::vector<Node> nodes;  // in execution order (topologically sorted)
  std::vector<int> inputs;  // tensor ids of user-fed inputs
  std::vector<int> outputs;

  int add_tensor(Tensor t);  // name must be unique
  int find(const std::string& name) const;  // -1 if absent
  // Consumers of each tensor (node ids), recomputed on demand.
  std::vector<std::vector<int>> consumers() const;
  // Sorts nodes topologically (stable w.r.t. current order); throws Error
  // naming a node on the cycle if the graph is cyclic. Sets producers.
  void topological_sort();
  // Drops nodes whose outputs reach no graph output, and unused tensors.
  void remove_dead_nodes();
  // After a rewrite: drops the nodes marked in `erased` (indexed like
  // `nodes`), sorts the rest topologically and drops what became dead.
  void erase_nodes(const std::vector<char>& erased);

 private:
  std::unordered_map<std::string, int> index_;
 public:
  void rebuild_index();
};

}  // namespace texplan
