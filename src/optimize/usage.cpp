#include "optimize/usage.h"

#include <algorithm>

#include "optimize/optimize.h"
#include "optimize/sharing.h"

namespace texplan {

plan::TextureExtent texture_extent(const Shape& s, int element_bytes, TextureLayout layout, int32_t fold) {
  plan::TextureExtent e;
  const int64_t c4 = (s[1] + 3) / 4, k = std::max<int32_t>(1, fold);
  e.width = layout == TextureLayout::WideRows ? k * s[3] * c4 : s[3];
  e.height = layout == TextureLayout::WideRows ? s[0] * ((s[2] + k - 1) / k) : s[0] * c4 * s[2];
  e.pixel_bytes = 4 * element_bytes;
  return e;
}

size_t stored_element_size(DataType t, DataType float_storage) {
  return element_size(t == DataType::Float32 ? float_storage : t);
}

int64_t stored_bytes(const Tensor& t, DataType float_storage) {
  return element_count(t.shape) * int64_t(stored_element_size(t.dtype, float_storage));
}

namespace {

// Steps of the first write and the last read of each storage owner (an
// alias root): graph inputs live from step 0, graph outputs to the end.
struct OwnerSteps {
  std::vector<int32_t> first, last;
};
OwnerSteps owner_steps(const Graph& g, const std::vector<int>& root, int32_t last_step) {
  const size_t nt = g.tensors.size();
  OwnerSteps s{std::vector<int32_t>(nt, -1), std::vector<int32_t>(nt, -1)};
  for (int t : g.inputs) s.first[root[t]] = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const auto& n = g.nodes[k];
    for (int t : n.outputs) {
      if (t < 0) continue;
      int r = root[t];
      if (s.first[r] < 0) s.first[r] = int32_t(k);
      s.last[r] = std::max(s.last[r], int32_t(k));
    }
    for (int t : n.inputs) {
      if (t < 0 || g.tensors[t].is_constant) continue;
      int r = root[t];
      s.last[r] = std::max(s.last[r], int32_t(k));
    }
  }
  for (int t : g.outputs) {
    int r = root[t];
    if (g.tensors[r].is_constant) continue;
    s.last[r] = last_step;
  }
  return s;
}

bool owns_storage(const Graph& g, const std::vector<int>& root, const OwnerSteps& s, size_t t) {
  return root[t] == int(t) && !g.tensors[t].is_constant && s.first[t] >= 0;
}

}  // namespace

// The records' bound without the records: optimize asks it for every
// candidate order, and a record carries strings.
int64_t graph_lower_bound(const Graph& g) {
  const std::vector<int> root = storage_sharing(g).root;
  const OwnerSteps s = owner_steps(g, root, int32_t(std::max<size_t>(g.nodes.size(), 1)) - 1);
  std::vector<plan::Lifetime> lifetimes;
  for (size_t t = 0; t < g.tensors.size(); ++t)
    if (owns_storage(g, root, s, t))
      lifetimes.push_back({stored_bytes(g.tensors[t], DataType::Float32), s.first[t], std::max(s.last[t], s.first[t])});
  return plan::lifetimes_lower_bound_bytes(lifetimes);
}

PlanInput make_usage_records(const Graph& g, const UsageOptions& opt) {
  PlanInput p;
  p.steps = int32_t(std::max<size_t>(g.nodes.size(), 1));
  StorageSharing sharing = storage_sharing(g);
  p.alias_root = std::move(sharing.root);
  p.alias_offset = std::move(sharing.offset);
  // Sharing counts bytes of the graph's dtypes: scale Float32 offsets (views
  // and concat slices inside a tensor of their own dtype) to the storage's.
  const int64_t float_bytes = int64_t(stored_element_size(DataType::Float32, opt.float_storage));
  if (float_bytes != 4)
    for (size_t t = 0; t < p.alias_offset.size(); ++t)
      if (g.tensors[t].dtype == DataType::Float32) p.alias_offset[t] = p.alias_offset[t] / 4 * float_bytes;
  const size_t nt = g.tensors.size();
  // Storage owners in order of first use, so records follow the execution.
  const OwnerSteps steps = owner_steps(g, p.alias_root, p.steps - 1);
  const std::vector<int32_t>&first = steps.first, &last = steps.last;

  p.record_of_tensor.assign(nt, -1);
  p.texture_layout.assign(nt, TextureLayout::Rows);
  p.texture_fold.assign(nt, 1);
  if (opt.storage)
    for (size_t t = 0; t < nt; ++t)
      p.texture_layout[t] = opt.storage->layout_of(int(t)), p.texture_fold[t] = opt.storage->fold_of(int(t));
  std::vector<int> owners;
  for (size_t t = 0; t < nt; ++t)
    if (owns_storage(g, p.alias_root, steps, t)) owners.push_back(int(t));
  std::stable_sort(owners.begin(), owners.end(), [&](int a, int b) { return first[a] < first[b]; });
  p.records.reserve(owners.size());

  for (int t : owners) {
    const Tensor& x = g.tensors[t];
    plan::UsageRecord r;
    r.name = x.name;
    r.bytes = stored_bytes(x, opt.float_storage);
    r.first = first[t];
    r.last = std::max(last[t], first[t]);
    r.op = x.producer >= 0 ? g.nodes[x.producer].op_type : "input";
    if (opt.storage && opt.storage->is_texture(t)) {
      r.storage = plan::Storage::Texture;
      r.extent = texture_extent(x.shape, int(stored_element_size(x.dtype, opt.float_storage)),
                                opt.storage->layout_of(t), opt.storage->fold_of(t));
      r.bytes = r.extent.tight_bytes();
    }
    p.record_of_tensor[t] = int(p.records.size());
    p.records.push_back(std::move(r));
  }
  for (size_t t = 0; t < nt; ++t)
    if (p.record_of_tensor[t] < 0 && p.alias_root[t] != int(t)) p.record_of_tensor[t] = p.record_of_tensor[p.alias_root[t]];
  return p;
}

}  // namespace texplan
