#include "optimize/optimize.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <set>
#include <tuple>
#include <utility>

#include "optimize/passes.h"
#include "optimize/sharing.h"
#include "optimize/usage.h"

namespace texplan {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

void mark_concats(Graph& g, const std::vector<int>& chosen) {
  for (auto& n : g.nodes)
    if (n.op_type == "Concat") n.decisions.elided = false;
  for (int k : chosen) g.nodes[k].decisions.elided = true;
}

// Elides every concat that can be, then drops each one whose elision does not
// lower the bound (a slice kept alive for the whole concat can cost more
// than the copy saves, e.g. U-Net's skip connections).
void elide_concats(Graph& g) {
  mark_concats(g, {});
  std::vector<int> chosen = elidable_concats(g);
  mark_concats(g, chosen);
  int64_t best = graph_lower_bound(g);
  // One bound per elided concat: beyond a few million steps of work, only all
  // against none (planning time stays bounded on huge graphs).
  if (double(chosen.size()) * double(g.nodes.size()) > 4e6) {
    mark_concats(g, {});
    if (graph_lower_bound(g) >= best) mark_concats(g, chosen);
    return;
  }
  const std::vector<int> tried = chosen;
  for (int k : tried) {
    if (std::find(chosen.begin(), chosen.end(), k) == chosen.end()) continue;
    std::vector<char> allowed(g.nodes.size(), 0);
    for (int c : chosen) allowed[c] = c != k;
    mark_concats(g, {});
    std::vector<int> without = elidable_concats(g, allowed);
    mark_concats(g, without);
    const int64_t bytes = graph_lower_bound(g);
    if (bytes < best) {
      best = bytes;
      chosen = without;
    } else {
      mark_concats(g, chosen);
    }
  }
}

}  // namespace

OptimizeOptions::Order parse_order(const std::string& s) {
  if (s == "file") return OptimizeOptions::Order::File;
  if (s == "memory") return OptimizeOptions::Order::Memory;
  throw Error("unknown order '" + s + "' (expects file or memory)");
}

// strided_product_operands, each view kept only where the bound does not
// rise (a view keeps its whole source alive until the product; BERT's q and
// k may be views while v, read last, stays a copy), else a shorter chain
// tried: decided first on a copy without the large constants' values (the
// pass reads only the chains' small Slice and Gather parameters), then the
// same views set in g. `products`: MatMul and FusedMatMul take views too,
// not only FusedAttention. Returns the nodes it dropped.
static int strided_operands_within_bound(Graph& g, bool products) {
  auto reads_views = [products](const Node& n) {
    return n.op_type == "FusedAttention" || (products && (n.op_type == "MatMul" || n.op_type == "FusedMatMul"));
  };
  // Only these read operands through views: without one, no graph copies.
  if (std::none_of(g.nodes.begin(), g.nodes.end(), reads_views)) return 0;
  constexpr size_t kSmall = 4096;
  std::vector<HostTensor> large(g.tensors.size());
  std::vector<char> moved(g.tensors.size(), 0);
  for (size_t i = 0; i < g.tensors.size(); ++i)
    if (g.tensors[i].value.bytes.size() > kSmall) large[i] = std::move(g.tensors[i].value), moved[i] = 1;
  Graph trial = g;
  for (size_t i = 0; i < g.tensors.size(); ++i)
    if (moved[i]) g.tensors[i].value = std::move(large[i]);
  const int64_t bound = graph_lower_bound(g);
  auto fits = [&](const Graph& with) {
    Graph pruned = with;
    pruned.remove_dead_nodes();
    return graph_lower_bound(pruned) <= bound;
  };
  std::set<std::tuple<std::string, int, int>> kept;  // product, slot, the tensor its view reads
  auto keep_all = [&](const Graph&, const Node& n, int slot) {
    if (!reads_views(n)) return false;
    kept.insert({n.name, slot, n.inputs[size_t(slot)]});
    return true;
  };
  // Every view at once first: views that only fit together (two reading one
  // source, which then outlives neither copy) are found only that way.
  Graph all = trial;
  if (strided_product_operands(all, keep_all) == 0) return 0;
  if (!fits(all)) {
    // Each trial costs a copy of the graph and its bound: a graph with
    // thousands of product chains keeps copies past the first kMaxTrials.
    constexpr int kMaxTrials = 512;
    int trials = 0;
    kept.clear();
    strided_product_operands(trial, [&](const Graph& with, const Node& n, int slot) {
      return reads_views(n) && ++trials <= kMaxTrials && fits(with) && keep_all(with, n, slot);
    });
  }
  if (kept.empty()) return 0;
  const int nodes = int(g.nodes.size());
  strided_product_operands(g, [&](const Graph&, const Node& n, int slot) {
    return kept.count({n.name, slot, n.inputs[size_t(slot)]}) > 0;
  });
  g.remove_dead_nodes();
  return nodes - int(g.nodes.size());
}

namespace {

// `o` less the rewrites whose fused forms its device does not run.
OptimizeOptions runnable(OptimizeOptions o) {
  if (!o.device_forms) return o;
  const FusedForms& f = *o.device_forms;
  o.pool_fusion = o.pool_fusion && f.conv_maxpool;
  o.channel_scale_fusion = o.channel_scale_fusion && f.channel_scaled_conv;
  o.channel_program_fusion = o.channel_program_fusion && f.channel_program_conv;
  o.channel_gate_fusion = o.channel_gate_fusion && o.channel_program_fusion && f.channel_gate_channels > 0;
  o.depthwise_input_fusion = o.depthwise_input_fusion && f.depthwise_input_conv;
  o.mlp_fusion = o.mlp_fusion && f.mlp;
  o.channel_shuffle_fusion = o.channel_shuffle_fusion && f.shuffled_output_conv;
  o.row_norm_fusion = o.row_norm_fusion && f.row_norm_product;
  o.strided_operands = o.strided_operands && f.strided_operands;
  o.attention_fusion = o.attention_fusion && f.attention_head_dim > 0;
  return o;
}

}  // namespace

OptimizeReport optimize(Graph& g, const OptimizeOptions& given) {
  const OptimizeOptions opt = runnable(given);
  const auto start = Clock::now();
  OptimizeReport r;
  r.nodes_before = int(g.nodes.size());
  r.raw_lower_bound_bytes = graph_lower_bound(g);
  if (opt.fuse) {
    r.viewed_nodes = elements_in_place_to_views(g);
    r.folded_pads = pads_into_windows(g);
    r.fused_layernorm = fuse_layer_norm(g);
    if (opt.attention_fusion)
      r.fused_attention = fuse_attention(g, opt.device_forms ? opt.device_forms->attention_head_dim : INT64_MAX);
    // Gates: the device's bounds, none, or (the CPU executor) any.
    GateBounds gates{0, 0};
    if (opt.channel_gate_fusion)
      gates = opt.device_forms ? GateBounds{opt.device_forms->channel_gate_channels, opt.device_forms->channel_gate_weights}
                               : GateBounds{INT64_MAX, INT64_MAX};
    const FuseCounts c = fuse(g, opt.pool_fusion, opt.channel_scale_fusion, opt.channel_program_fusion, gates,
                              opt.depthwise_input_fusion, opt.mlp_fusion);
    r.fused_conv = c.conv;
    r.fused_matmul = c.matmul;
    r.fused_elementwise = c.elementwise;
    r.fused_gather = c.gathers;
    r.folded_batchnorm = c.batchnorm;
    r.fused_pool = c.pool;
    r.fused_channel_scales = c.channel_scales;
    r.fused_channel_programs = c.channel_programs;
    r.fused_channel_gates = c.channel_gates;
    r.fused_depthwise_inputs = c.depthwise_inputs;
    r.fused_mlps = c.mlps;
    // FusedAttention's kernels read strides on every device; products' only
    // where the device's forms say so.
    if (opt.strided_operands || (given.strided_operands && r.fused_attention > 0))
      r.viewed_nodes += strided_operands_within_bound(g, opt.strided_operands);
    if (opt.attention_output_transposes) r.viewed_nodes += transposes_into_attention_outputs(g);
    if (opt.channel_shuffle_fusion) r.fused_channel_shuffles = channel_shuffles_into_convs(g);
    if (opt.row_norm_fusion) r.fused_row_norms = layer_norms_into_products(g);
  }
  for (auto& n : g.nodes) n.decisions.in_place = opt.inplace && may_run_in_place(n);
  const int slice_views = opt.fuse ? slices_to_views(g) : 0;
  if (opt.concat_elision) elide_concats(g);
  else mark_concats(g, {});
  r.order = "file";
  if (opt.order == OptimizeOptions::Order::Memory) {
    const auto t = Clock::now();
    r.order = memory_aware_order(g, &r.order_candidates);
    if (opt.concat_elision && r.order != "file") elide_concats(g);  // decisions for the new order
    r.order_ms = ms_since(t);
  }
  r.lower_bound_bytes = graph_lower_bound(g);
  if (slice_views > 0) {
    // A view keeps its whole input alive as long as itself: kept only where
    // the bound does not rise (it never did on the zoo).
    std::vector<std::pair<size_t, int64_t>> marks;
    for (size_t k = 0; k < g.nodes.size(); ++k)
      if (g.nodes[k].decisions.view_offset >= 0) {
        marks.push_back({k, g.nodes[k].decisions.view_offset});
        g.nodes[k].decisions.view_offset = -1;
      }
    const int64_t without = graph_lower_bound(g);
    if (without < r.lower_bound_bytes) {
      r.lower_bound_bytes = without;
    } else {
      for (const auto& [k, offset] : marks) g.nodes[k].decisions.view_offset = offset;
      r.viewed_nodes += slice_views;
    }
  }
  if (r.lower_bound_bytes > r.raw_lower_bound_bytes && opt.concat_elision) {
    mark_concats(g, {});  // never worse than the graph as given
    r.lower_bound_bytes = graph_lower_bound(g);
  }
  if (r.lower_bound_bytes > r.raw_lower_bound_bytes && opt.inplace) {
    // Still worse: an output written over a view of a larger tensor keeps
    // that whole tensor alive as long as itself (an unrolled GRU's gates
    // over slices of every step's input product, which Y's steps outlive).
    // Without in-place writes, with and without concat elision, the
    // smallest bound is kept.
    std::vector<char> in_place(g.nodes.size());
    for (size_t k = 0; k < g.nodes.size(); ++k) in_place[k] = std::exchange(g.nodes[k].decisions.in_place, false);
    int64_t best = graph_lower_bound(g);
    bool elided = false;
    if (opt.concat_elision) {
      elide_concats(g);
      if (const int64_t b = graph_lower_bound(g); b < best) best = b, elided = true;
      else mark_concats(g, {});
    }
    if (best < r.lower_bound_bytes) {
      r.lower_bound_bytes = best;
    } else {
      if (elided) mark_concats(g, {});
      for (size_t k = 0; k < g.nodes.size(); ++k) g.nodes[k].decisions.in_place = in_place[k];
    }
  }
  if (opt.fuse && opt.concat_elision && opt.concat_slice_views) {
    const int made = slices_into_concats_to_views(g);
    r.viewed_nodes += made;
    if (made > 0) r.lower_bound_bytes = graph_lower_bound(g);
  }
  const StorageSharing s = storage_sharing(g);
  for (const auto& n : g.nodes) {
    if (n.decisions.elided) ++r.elided_concats;
    if (n.decisions.in_place && n.outputs.size() == 1 && n.outputs[0] >= 0 &&
        s.root[n.outputs[0]] != n.outputs[0])
      ++r.inplace;
  }
  r.nodes_after = int(g.nodes.size());
  r.total_ms = ms_since(start);
  return r;
}

std::vector<OptimizationShare> optimization_shares(const Graph& imported, const OptimizeOptions& given,
                                                   const OptimizeReport& optimized) {
  const OptimizeOptions opt = runnable(given);
  const int64_t optimized_lower_bound = optimized.lower_bound_bytes;
  std::vector<OptimizationShare> shares;
  if (imported.nodes.size() > kMaxShareNodes) return shares;
  // An optimization that changed nothing saves nothing: it is not run again
  // without it (each run is a whole optimize of the imported graph).
  auto without = [&](const std::string& name, bool changed_something, auto&& turn_off) {
    if (!changed_something) {
      shares.push_back({name, optimized_lower_bound, 0});
      return;
    }
    OptimizeOptions o = opt;
    turn_off(o);
    Graph g = imported;
    const OptimizeReport r = optimize(g, o);
    shares.push_back({name, r.lower_bound_bytes, r.lower_bound_bytes - optimized_lower_bound});
  };
  const OptimizeReport& r = optimized;
  const bool fused = r.fused_conv || r.fused_matmul || r.fused_elementwise || r.fused_gather || r.folded_batchnorm || r.fused_pool ||
                     r.fused_channel_scales || r.fused_channel_programs || r.fused_channel_gates || r.fused_depthwise_inputs || r.fused_mlps || r.fused_layernorm || r.fused_attention || r.viewed_nodes ||
                     r.nodes_after != r.nodes_before;
  const bool concats = std::any_of(imported.nodes.begin(), imported.nodes.end(),
                                   [](const Node& n) { return n.op_type == "Concat"; });
  if (opt.fuse) without("fuse", fused, [](OptimizeOptions& o) { o.fuse = false; });
  if (opt.fuse && opt.pool_fusion)
    without("pool_fusion", r.fused_pool > 0, [](OptimizeOptions& o) { o.pool_fusion = false; });
  if (opt.fuse && opt.attention_fusion)
    without("attention_fusion", r.fused_attention > 0, [](OptimizeOptions& o) { o.attention_fusion = false; });
  if (opt.inplace) without("inplace", r.inplace > 0, [](OptimizeOptions& o) { o.inplace = false; });
  if (opt.concat_elision)
    without("concat_elision", concats, [](OptimizeOptions& o) { o.concat_elision = false; });
  if (opt.order == OptimizeOptions::Order::Memory)
    without("order", r.order != "file", [](OptimizeOptions& o) { o.order = OptimizeOptions::Order::File; });
  return shares;
}

}  // namespace texplan
