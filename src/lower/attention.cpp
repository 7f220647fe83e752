// FusedAttention (docs/fused-ops.md#fusedattention): softmax(scale Q K^T + M) V
// in one kernel whose scores never leave it. GPUs and other devices take
// attention.cl's work-group per block of query rows (K and V tiles in local
// memory); CPU devices cpu_attention.cl's rows per work-item
// (lower/opencl_cpu/attention.cpp). Q, K and V are read through their
// operand views (graph.h) where the optimizer gave them.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "lower/opencl_cpu/lowerings.h"
#include "lower/ops.h"

namespace texplan::lower {
namespace {

// An operand as the kernels read it: its buffer at its view's offset, its
// logical shape and element strides.
struct Operand {
  TensorArg arg;
  Shape shape;
  std::vector<int64_t> strides;
};

Operand operand(NodeBuilder& b, int i) {
  const std::optional<OperandView> v = operand_view(b.node, i);
  Operand o{b.arg_in(i), v ? v->shape : b.in(i).shape, v ? v->strides : contiguous_strides(b.in(i).shape)};
  if (v) o.arg.offset = i32(int64_t(o.arg.offset) + v->offset);
  return o;
}

// Strides of a rank 2-4 operand as (batch, head, row, column): the dims
// before the last two are (batch, head), missing ones stride 0.
void split_strides(const std::vector<int64_t>& st, cl_int& sb, cl_int& sh, cl_int& sr, cl_int& sc) {
  const size_t r = st.size();
  sb = r >= 4 ? i32(st[r - 4]) : 0;
  sh = r >= 3 ? i32(st[r - 3]) : 0;
  sr = i32(st[r - 2]);
  sc = i32(st[r - 1]);
}

// attention.cl's blocks: 32 query rows (a warp), 4 work-items per row,
// key tiles as wide as the registers of a row (its Q, its output and a
// score per key of its share) and the device's local memory allow. Grids
// of fewer groups than compute units (BERT-class: 128 queries of 4 heads
// are 16 groups) take fewer rows per group and more items per row, down to
// 8 x 16: eight items in a row read the same key, one float4 broadcast per
// quarter warp (docs/fused-ops.md#fusedattention).
struct GpuBlocks {
  int bm = 32, split = 4, bn = 64;
  void fill(int64_t queries, int64_t batches, int64_t cu) {
    while (bm > 8 && ceil_div(queries, bm) * batches < cu) bm /= 2, split *= 2;
  }
  int64_t local_bytes(int64_t dh4, int64_t dv4) const {
    const int64_t tiles = int64_t(bn) * (dh4 + dv4) * 4 + int64_t(bm) * bn;
    return 4 * (std::max(tiles, int64_t(bm) * dv4 * 4) + 2 * int64_t(bm) * split);
  }
};

// attention.cl's short form: a work-group of this many items, one key each
// (two past it), over this many query rows (its AS_WG and AS_BM).
constexpr int64_t kShortAttentionKeys = 128, kShortAttentionRows = 8;

// KernelChoice::attention's "BMxSPLIT" into `g`; throws Error on another form.
void parse_attention_blocks(const std::string& blocks, GpuBlocks& g) {
  int bm = 0, split = 0;
  char x = 0, rest = 0;
  const bool parsed = std::sscanf(blocks.c_str(), "%d%c%d%c", &bm, &x, &split, &rest) == 3 && x == 'x';
  const bool power = split > 0 && (split & (split - 1)) == 0;
  if (!parsed || (bm != 8 && bm != 16 && bm != 32) || !power || bm * split < 32 || bm * split > 512)
    throw Error("no attention blocks " + blocks + " (BMxSPLIT: BM 8, 16 or 32, SPLIT a power of two, 32 to 512 items)");
  g.bm = bm, g.split = split;
}

}  // namespace

void check_attention_blocks(const std::string& blocks) {
  GpuBlocks g;
  if (!blocks.empty() && blocks != "short" && blocks != "tiled") parse_attention_blocks(blocks, g);
}

bool lower_fused_attention(NodeBuilder& b) {
  const std::optional<AttentionForm> form = attention_form(b.node);
  if (!form || b.inputs() < 3 || b.inputs() > 4 || !b.has_in(0) || !b.has_in(1) || !b.has_in(2)) return false;
  const bool has_mask = b.has_in(3);
  for (int i = 0; i < b.inputs(); ++i)
    if (b.has_in(i) && (b.in(i).dtype != DataType::Float32 || b.in_window(i))) return false;
  if (b.out(0).dtype != DataType::Float32 || b.out_window(0)) return false;
  Operand q = operand(b, 0), k = operand(b, 1), v = operand(b, 2);
  const size_t rank = q.shape.size();
  if (rank < 2 || rank > 4 || k.shape.size() != rank || v.shape.size() != rank) return false;
  if (form->k_transposed) {  // K^T [.., D, Sk]: read as K [.., Sk, D] through swapped strides
    std::swap(k.shape[rank - 2], k.shape[rank - 1]);
    std::swap(k.strides[rank - 2], k.strides[rank - 1]);
  }
  const Shape batch(q.shape.begin(), q.shape.end() - 2);
  // Y as computed, and its strides in the output as stored.
  Shape y = b.out(0).shape;
  std::vector<int64_t> y_strides = contiguous_strides(y);
  if (!form->output_perm.empty()) {
    const std::vector<int64_t>& perm = form->output_perm;
    if (perm.size() != rank || perm.back() != int64_t(rank) - 1) return false;
    const Shape& stored = b.out(0).shape;
    const std::vector<int64_t> cs = contiguous_strides(stored);
    for (size_t d = 0; d < rank; ++d) {
      if (perm[d] < 0 || perm[d] >= int64_t(rank)) return false;
      y[size_t(perm[d])] = stored[d], y_strides[size_t(perm[d])] = cs[d];
    }
  }
  for (const Shape* s : std::initializer_list<const Shape*>{&k.shape, &v.shape, &y})
    if (s->size() != rank || !std::equal(batch.begin(), batch.end(), s->begin())) return false;
  const int64_t Sq = q.shape[rank - 2], D = q.shape[rank - 1], Sk = k.shape[rank - 2], Dv = v.shape[rank - 1];
  if (k.shape[rank - 1] != D || v.shape[rank - 2] != Sk || y[rank - 2] != Sq || y[rank - 1] != Dv) return false;
  if (D > kMaxAttentionHeadDim || Dv > kMaxAttentionHeadDim) return false;
  const int64_t batches = element_count(batch);
  if (batches * Sq * Dv == 0) return true;
  if (Sk == 0) return false;  // softmax over no keys: left to the reference

  AttentionParams p;
  p.heads = i32(rank >= 3 ? batch.back() : 1);
  p.sq = i32(Sq), p.sk = i32(Sk), p.dh = i32(D), p.dv = i32(Dv), p.has_mask = has_mask;
  p.masked_rows_zero = form->masked_rows_zero;
  split_strides(q.strides, p.q_sb, p.q_sh, p.q_si, p.q_sd);
  split_strides(k.strides, p.k_sb, p.k_sh, p.k_sj, p.k_sd);
  split_strides(v.strides, p.v_sb, p.v_sh, p.v_sj, p.v_sd);
  cl_int y_sd = 0;
  split_strides(y_strides, p.y_sb, p.y_sh, p.y_si, y_sd);
  TensorArg mask = q.arg;  // any valid buffer when there is none
  if (has_mask) {
    Shape scores = batch;
    scores.push_back(Sq);
    scores.push_back(Sk);
    const Shape& ms = b.in(3).shape;
    if (ms.size() > rank) return false;
    for (size_t d = 0; d < ms.size(); ++d)
      if (ms[d] != 1 && ms[d] != scores[rank - ms.size() + d]) return false;
    split_strides(broadcast_strides(ms, scores), p.m_sb, p.m_sh, p.m_si, p.m_sj);
    mask = b.arg_in(3);
  }
  p.scale = float(double(form->scale) / std::log(2.0));  // the kernels take powers of two
  const TensorArg out = b.arg_out(0);
  p.qo = q.arg.offset, p.ko = k.arg.offset, p.vo = v.arg.offset, p.mo = mask.offset, p.yo = out.offset;
  const AttentionLaunch a{MemArg{q.arg.mem}, MemArg{k.arg.mem}, MemArg{v.arg.mem}, MemArg{mask.mem},
                          MemArg{out.mem}, p, batches};
  if (b.device_type() == "cpu" && !b.gpu_kernels_forced()) return lower_attention_cpu(b, a);

  const int64_t dh4 = ceil_div(D, 4), dv4 = ceil_div(Dv, 4);
  // Short key sequences hold all their scores in local memory
  // (attention.cl ATT_SHORT); KernelChoice::attention "BMxSPLIT" names the
  // tiled kernel's blocks instead, "tiled" its blocks by the grid, "short" this one.
  const std::string& named = b.kernel_choice.attention;
  const bool short_fits = Sk <= 2 * kShortAttentionKeys && D <= 128 && Dv <= 128;
  // By default wherever it fits: one key an item up to 128 (BERT-mini 0.93x
  // of the tiled kernel), two up to 256 (ViT-B/16's 197: its 12 attentions
  // 0.544 -> 0.496 ms; docs/kernel-choices.md#fusedattention-on-gpus-with-every-score-in-local-memory).
  if ((named.empty() || named == "short") && short_fits) {
    const int64_t kpt = ceil_div(Sk, kShortAttentionKeys);
    // V's block in local memory where it takes at most 32 KB (the kernel's
    // other arrays take up to 11 KB more).
    const int64_t v_bytes = kpt * kShortAttentionKeys * dv4 * 16;
    const bool v_local = v_bytes <= 32768 && v_bytes + 12288 <= b.local_mem_bytes();
    const std::string defines = "-DATT_SHORT -DATT_DH4=" + std::to_string(dh4) + " -DATT_DV4=" + std::to_string(dv4) +
                                " -DATT_KPT=" + std::to_string(kpt) +
                                " -DAS_WG=" + std::to_string(kShortAttentionKeys) +
                                " -DAS_BM=" + std::to_string(kShortAttentionRows) + (v_local ? " -DAS_VLOCAL" : "");
    const Range r = group_range({size_t(ceil_div(Sq, kShortAttentionRows)), size_t(batches)},
                                {size_t(kShortAttentionKeys), 1});
    b.launch(Source("attention.cl", defines), "attention_short", r, a.q, a.k, a.v, a.mask, a.y, p);
    return true;
  }
  GpuBlocks g;
  if (!named.empty() && named != "short" && named != "tiled") parse_attention_blocks(named, g);
  else g.fill(Sq, batches, std::max(1, b.compute_units()));
  g.bn = std::max(g.split, std::max(D, Dv) <= 64 ? 64 : std::max(D, Dv) <= 128 ? 32 : 16);
  while (g.bn > std::max(g.split, g.bm / 2) && g.local_bytes(dh4, dv4) > b.local_mem_bytes()) g.bn /= 2;
  if (g.local_bytes(dh4, dv4) > b.local_mem_bytes()) return false;
  const std::string defines = "-DATT_DH4=" + std::to_string(dh4) + " -DATT_DV4=" + std::to_string(dv4) +
                              " -DATT_BM=" + std::to_string(g.bm) + " -DATT_SPLIT=" + std::to_string(g.split) +
                              " -DATT_BN=" + std::to_string(g.bn);
  const Range r = group_range({size_t(ceil_div(Sq, g.bm)), size_t(batches)}, {size_t(g.bm * g.split), 1});
  b.launch(Source("attention.cl", defines), "attention", r, a.q, a.k, a.v, a.mask, a.y, p);
  return true;
}

}  // namespace texplan::lower
