#include "optimize/storage.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "optimize/passes.h"
#include "optimize/usage.h"

namespace texplan {

TextureMode parse_texture_mode(const std::string& s) {
  if (s == "none") return TextureMode::None;
  if (s == "auto") return TextureMode::Auto;
  if (s == "pools") return TextureMode::Pools;
  if (s == "views") return TextureMode::Views;
  throw Error("textures: '" + s + "': give none, auto, pools or views");
}

const char* to_string(TextureMode m) {
  switch (m) {
    case TextureMode::None: return "none";
    case TextureMode::Auto: return "auto";
    case TextureMode::Pools: return "pools";
    case TextureMode::Views: return "views";
  }
  return "?";
}

TextureMode resolve(TextureMode m, const plan::DeviceProfile& dev) {
  if (!dev.image_support) return TextureMode::None;
  if (m != TextureMode::Auto) return m;
  TextureMode a = parse_texture_mode(dev.auto_textures.empty() ? "none" : dev.auto_textures);
  return a == TextureMode::Auto ? TextureMode::None : a;
}

std::string strategy_for(TextureMode m, const std::string& strategy) {
  return m == TextureMode::Views ? "texture-views" : strategy;
}

const char* to_string(TextureLayout l) { return l == TextureLayout::WideRows ? "wide-rows" : "nc4hw4-rows"; }

LayoutPolicy parse_layout_policy(const std::string& s) {
  if (s == "cost") return LayoutPolicy::Cost;
  if (s == "rows") return LayoutPolicy::Rows;
  if (s == "wide") return LayoutPolicy::WideRows;
  throw Error("texture layout: '" + s + "': give cost, rows or wide");
}

namespace {

bool is_act(const Graph& g, int t) { return t >= 0 && !g.tensors[t].is_constant; }
bool is_4d_float(const Tensor& t) { return t.shape.size() == 4 && t.dtype == DataType::Float32; }

// Whether extent `e` fits the images of `mode` on `dev`.
bool fits(const plan::TextureExtent& e, const plan::DeviceProfile& dev, TextureMode mode, std::string* why) {
  if (e.width <= 0 || e.height <= 0) {
    *why = "empty";
    return false;
  }
  if (mode == TextureMode::Views && !dev.image2d_from_buffer) {
    if (e.width * e.height > dev.max_image1d_buffer_pixels) {
      *why = std::to_string(e.width * e.height) + " pixels exceed the 1D image limit " +
             std::to_string(dev.max_image1d_buffer_pixels);
      return false;
    }
    return true;
  }
  if (e.width > dev.max_image2d_width || e.height > dev.max_image2d_height) {
    *why = "image " + std::to_string(e.width) + "x" + std::to_string(e.height) + " exceeds " + dev.name + "'s limit " +
           std::to_string(dev.max_image2d_width) + "x" + std::to_string(dev.max_image2d_height);
    return false;
  }
  return true;
}

struct LayoutChoice {
  TextureLayout layout = TextureLayout::Rows;
  int32_t fold = 1;
};

// The layout of 4D tensor `t` as a texture: of the layouts (and WideRows'
// folds 1..H) `opt.layouts` allows that fit the limits, the one of the
// smallest footprint on `dev`; on a tie Rows (its 2D windows suit texture
// caches), then the smaller fold. Null with `why` when none fits.
std::optional<LayoutChoice> choose_layout(const Tensor& t, const plan::DeviceProfile& dev, TextureMode mode,
                                          const StorageOptions& opt, std::string* why) {
  std::optional<LayoutChoice> best;
  int64_t best_bytes = 0;
  auto consider = [&](TextureLayout l, int32_t fold) {
    const plan::TextureExtent e = texture_extent(t.shape, opt.element_bytes, l, fold);
    std::string reason;
    if (!fits(e, dev, mode, &reason)) {
      if (why->empty()) *why = reason;
      return false;
    }
    const int64_t bytes = plan::texture_footprint_bytes(e, dev);
    if (!best || bytes < best_bytes) best = LayoutChoice{l, fold}, best_bytes = bytes;
    return true;
  };
  if (opt.layouts != LayoutPolicy::WideRows) consider(TextureLayout::Rows, 1);
  if (opt.layouts != LayoutPolicy::Rows) {
    // Wider folds only where rows are pitched (elsewhere they cannot save),
    // up to the width limit, and where textures are packed by their bytes:
    // views, or wide rows asked for. Texture pools share whole images, which
    // one width per shape suits better than each tensor's least padding
    // (googlenet on adreno: 7.79 MiB of pools unfolded, 9.27 MiB folded).
    const int64_t H = t.shape[2];
    const bool pitched = dev.image2d_from_buffer && dev.image_pitch_alignment > 0;
    const bool packed = mode == TextureMode::Views || opt.layouts == LayoutPolicy::WideRows;
    for (int32_t k = 1; k <= (pitched && packed ? H : 1); ++k) {
      const plan::TextureExtent e = texture_extent(t.shape, opt.element_bytes, TextureLayout::WideRows, k);
      if (k > 1 && e.width > dev.max_image2d_width) break;
      if (k > 1 && (H + k - 1) / k == (H + k - 2) / (k - 1)) continue;  // as many image rows as k - 1: no fewer bytes
      consider(TextureLayout::WideRows, k);
    }
  }
  return best;
}

}  // namespace

namespace {

// Rewrites `g` for the node forms `tex_node`: conversions where producer and
// consumer disagree. Fills sa.texture, sa.layout (by `layout_of`) and
// sa.conversions.
template <class LayoutOf>
void rewrite(Graph& g, const std::vector<char>& tex_node, const std::vector<char>& eligible, StorageAssignment& sa,
             const LayoutOf& layout_of) {
  const size_t nn = g.nodes.size();
  sa.texture.assign(g.tensors.size(), 0);
  sa.conversions = 0;
  // A tensor is born a texture when a texture node writes it and it may be
  // one. Readers of the other form get a converted copy, made just before
  // the first of them runs; a texture node's output that must stay a buffer
  // (graph output, shared storage) is written as a texture and converted
  // right after.
  std::vector<Node> order;
  std::map<int, int> as_texture, as_buffer;  // tensor -> its converted copy
  auto converted = [&](int t, bool to_texture) {
    auto& memo = to_texture ? as_texture : as_buffer;
    auto it = memo.find(t);
    if (it != memo.end()) return it->second;
    Tensor c;
    c.name = g.tensors[t].name + (to_texture ? "@texture" : "@buffer");
    c.dtype = g.tensors[t].dtype;
    c.shape = g.tensors[t].shape;
    c.storage_exponent = g.tensors[t].storage_exponent;
    int id = g.add_tensor(c);
    sa.texture.push_back(to_texture);
    Node conv;
    conv.name = c.name;
    conv.op_type = to_texture ? "BufferToTexture" : "TextureToBuffer";
    conv.inputs = {t};
    conv.outputs = {id};
    order.push_back(std::move(conv));
    ++sa.conversions;
    memo[t] = id;
    return id;
  };
  std::vector<char> born_texture(g.tensors.size(), 0);
  for (size_t k = 0; k < nn; ++k) {
    Node n = g.nodes[k];
    const bool tex = tex_node[k];
    for (int& t : n.inputs) {
      if (!is_act(g, t) || !is_4d_float(g.tensors[t])) continue;
      if (tex != bool(born_texture[t])) t = converted(t, tex);
    }
    std::vector<std::pair<int, int>> after;  // (texture written, buffer wanted)
    if (tex) {
      for (int& t : n.outputs) {
        if (t < 0) continue;
        if (eligible[t]) {
          born_texture[t] = 1;
        } else {
          Tensor c;
          c.name = g.tensors[t].name + "@texture";
          c.dtype = g.tensors[t].dtype;
          c.shape = g.tensors[t].shape;
          c.storage_exponent = g.tensors[t].storage_exponent;
          int id = g.add_tensor(c);
          sa.texture.push_back(1);
          born_texture.push_back(1);
          after.push_back({id, t});
          as_texture[t] = id;
          t = id;
        }
      }
    }
    order.push_back(std::move(n));
    for (auto [from, to] : after) {
      Node conv;
      conv.name = g.tensors[to].name + "@buffer";
      conv.op_type = "TextureToBuffer";
      conv.inputs = {from};
      conv.outputs = {to};
      order.push_back(std::move(conv));
      ++sa.conversions;
    }
    born_texture.resize(g.tensors.size(), 0);
  }
  for (size_t t = 0; t < born_texture.size() && t < sa.texture.size(); ++t) sa.texture[t] |= born_texture[t];
  sa.layout.assign(g.tensors.size(), TextureLayout::Rows);
  sa.fold.assign(g.tensors.size(), 1);
  for (size_t t = 0; t < sa.texture.size(); ++t)
    if (sa.texture[t]) std::tie(sa.layout[t], sa.fold[t]) = layout_of(g.tensors[t]);
  g.nodes = std::move(order);
  for (Tensor& t : g.tensors)
    if (!t.is_constant) t.producer = -1;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int t : g.nodes[k].outputs)
      if (t >= 0) g.tensors[t].producer = int(k);
}

// The optimizer's storage-sharing marks of node `n` that its texture form
// drops: texture kernels do not run in place (an image is read and written
// through different objects), and a zero-copy concat in texture form is a
// copy (a texture Concat).
void drop_sharing_marks(Node& n) {
  n.decisions.in_place = false;
  n.decisions.elided = false;
}

// Tensors that may be textures in `g`: 4D fp32 activations of their own
// storage (no alias shares it), not graph inputs or outputs, not too big.
std::vector<char> texture_eligible(const Graph& g, const std::vector<char>& too_big) {
  const std::vector<int> root = alias_roots(g);
  std::vector<int> sharers(g.tensors.size(), 0);
  for (size_t t = 0; t < root.size(); ++t) ++sharers[root[t]];
  std::vector<char> eligible(g.tensors.size(), 0);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& x = g.tensors[t];
    if (x.is_constant || x.is_input || x.is_output || !is_4d_float(x) || too_big[t]) continue;
    eligible[t] = root[t] == int(t) && sharers[t] == 1;
  }
  return eligible;
}

}  // namespace

StorageAssignment assign_storage(Graph& g, const plan::DeviceProfile& dev, TextureMode requested,
                                 const KernelCatalog& kernels, const StorageOptions& opt) {
  StorageAssignment sa;
  sa.mode = resolve(requested, dev);
  sa.texture.assign(g.tensors.size(), 0);
  sa.layout.assign(g.tensors.size(), TextureLayout::Rows);
  sa.fold.assign(g.tensors.size(), 1);
  if (sa.mode == TextureMode::None) return sa;
  // Every tensor that gets here fits in some layout (too_big below). By
  // shape, once: the bound's trials ask again for the same tensors.
  std::map<Shape, LayoutChoice> chosen;
  auto layout_of = [&](const Tensor& t) {
    auto it = chosen.find(t.shape);
    if (it == chosen.end()) {
      std::string why;
      it = chosen.emplace(t.shape, choose_layout(t, dev, sa.mode, opt, &why).value_or(LayoutChoice{})).first;
    }
    return std::make_pair(it->second.layout, it->second.fold);
  };

  // Candidates are judged on `open`: `g` with the sharing marks dropped
  // wherever a texture kernel could take the node. A zero-copy concat is a
  // candidate only when its producers all have texture kernels: kept
  // elided, every producer would write a texture and convert it into its
  // slice of the buffer.
  Graph open = without_values(g);
  for (Node& n : open.nodes)
    if (n.decisions.in_place && kernels.texture_kernel(open, n)) n.decisions.in_place = false;
  for (Node& n : open.nodes) {
    if (n.op_type != "Concat" || !n.decisions.elided) continue;
    Node copy = n;
    copy.decisions.elided = false;
    bool producers = kernels.texture_kernel(open, copy);
    for (int t : n.inputs)
      producers = producers && t >= 0 && open.tensors[t].producer >= 0 &&
                  kernels.texture_kernel(open, open.nodes[open.tensors[t].producer]);
    if (producers) n.decisions.elided = false;
  }

  // 4D tensors beyond the image limits stay buffers.
  std::vector<char> too_big(g.tensors.size(), 0);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& x = g.tensors[t];
    if (x.is_constant || x.is_input || x.is_output || !is_4d_float(x)) continue;
    std::string why;
    if (!choose_layout(x, dev, sa.mode, opt, &why)) {
      too_big[t] = 1;
      sa.fallbacks.push_back(x.name + ": " + why + ", kept as a buffer");
    }
  }

  // Node forms: texture where a kernel covers the node and no tensor it
  // touches is beyond the image limits; then lone islands go back to buffers.
  const size_t nn = g.nodes.size();
  const auto consumers = open.consumers();
  auto without_islands = [&](std::vector<char> forms) {
    std::vector<char> kept = forms;
    for (size_t k = 0; k < nn; ++k) {
      if (!forms[k]) continue;
      bool neighbour = false;
      for (int t : open.nodes[k].inputs)
        if (t >= 0 && open.tensors[t].producer >= 0 && forms[open.tensors[t].producer]) neighbour = true;
      for (int t : open.nodes[k].outputs)
        if (t >= 0)
          for (int c : consumers[t]) neighbour = neighbour || forms[c];
      kept[k] = neighbour;
    }
    return kept;
  };
  std::vector<char> tex_node(nn, 0);
  for (size_t k = 0; k < nn; ++k) {
    const Node& n = open.nodes[k];
    if (!kernels.texture_kernel(open, n)) continue;
    bool ok = true;
    for (int t : n.inputs) ok = ok && !(t >= 0 && too_big[t]);
    for (int t : n.outputs) ok = ok && !(t >= 0 && too_big[t]);
    tex_node[k] = ok;
  }
  tex_node = without_islands(tex_node);

  // `g` for the node forms `forms`: the texture nodes lose their sharing
  // marks, the buffer nodes keep theirs.
  auto apply_forms = [&](Graph& h, const std::vector<char>& forms) {
    for (size_t k = 0; k < nn; ++k)
      if (forms[k]) drop_sharing_marks(h.nodes[k]);
  };
  auto bound = [&](const std::vector<char>& forms) {
    Graph h = without_values(g);
    apply_forms(h, forms);
    StorageAssignment trial = sa;
    rewrite(h, forms, texture_eligible(h, too_big), trial, layout_of);
    UsageOptions uo;
    uo.storage = &trial;
    uo.float_storage = opt.element_bytes == 2 ? DataType::Float16 : DataType::Float32;
    return plan::lower_bound_bytes(make_usage_records(h, uo).records, dev);
  };

  // Views (memory first): texture form must not raise the lower bound.
  // Two starts: every candidate in texture form, and the candidates that
  // would drop a sharing mark (in place, zero-copy concat) left in buffer
  // form. From each, regions of texture nodes (connected through their
  // tensors) go back to buffers one after another while that lowers the
  // bound by more than 0.5% (their conversions' copies sit at the peak of
  // live bytes). The lower result wins; the first on a tie (more textures).
  // Each trial is O(n log n); at most 2 * (regions + 1) of them.
  auto regions_of = [&](const std::vector<char>& forms, int* count) {
    std::vector<int> region(nn, -1);
    int regions = 0;
    for (size_t k = 0; k < nn; ++k) {
      if (!forms[k] || region[k] >= 0) continue;
      std::vector<int> stack = {int(k)};
      region[k] = regions;
      while (!stack.empty()) {
        int m = stack.back();
        stack.pop_back();
        std::vector<int> next;
        for (int t : open.nodes[m].inputs)
          if (t >= 0 && open.tensors[t].producer >= 0) next.push_back(open.tensors[t].producer);
        for (int t : open.nodes[m].outputs)
          if (t >= 0) next.insert(next.end(), consumers[t].begin(), consumers[t].end());
        for (int o : next)
          if (forms[o] && region[o] < 0) region[o] = regions, stack.push_back(o);
      }
      ++regions;
    }
    *count = regions;
    return region;
  };
  auto revert_costly_regions = [&](std::vector<char> forms, int64_t* best) {
    int regions = 0;
    const std::vector<int> region = regions_of(forms, &regions);
    *best = bound(forms);
    if (regions > 256) return forms;
    for (int r = 0; r < regions; ++r) {
      std::vector<char> trial = forms;
      for (size_t k = 0; k < nn; ++k)
        if (region[k] == r) trial[k] = 0;
      int64_t b = bound(trial);
      if (b < *best - *best / 200) *best = b, forms = std::move(trial);  // more than 0.5% lower
    }
    return forms;
  };
  if (opt.memory_aware && sa.mode == TextureMode::Views) {
    std::vector<char> keeping = tex_node;
    for (size_t k = 0; k < nn; ++k)
      if (g.nodes[k].decisions.in_place || g.nodes[k].decisions.elided) keeping[k] = 0;
    keeping = without_islands(keeping);
    int64_t all_bound = 0, keeping_bound = 0;
    std::vector<char> all = revert_costly_regions(tex_node, &all_bound);
    keeping = revert_costly_regions(keeping, &keeping_bound);
    auto count = [](const std::vector<char>& f) { return std::count(f.begin(), f.end(), 1); };
    // The lower bound wins; on a tie, more nodes in texture form.
    const bool keep = keeping_bound < all_bound || (keeping_bound == all_bound && count(keeping) > count(all));
    tex_node = keep ? keeping : all;
  }
  apply_forms(g, tex_node);
  rewrite(g, tex_node, texture_eligible(g, too_big), sa, layout_of);
  return sa;
}

std::string unique_tensor_name(const Graph& g, const std::string& base) {
  std::string name = base;
  for (int i = 1; g.find(name) >= 0; ++i) name = base + "_" + std::to_string(i);
  return name;
}

int add_int64_constant(Graph& g, const std::string& base, const std::vector<int64_t>& v) {
  Tensor t;
  t.name = unique_tensor_name(g, base);
  t.dtype = DataType::Int64;
  t.shape = {int64_t(v.size())};
  t.is_constant = t.has_data = true;
  t.value = HostTensor(DataType::Int64, t.shape);
  std::copy(v.begin(), v.end(), t.value.data<int64_t>());
  return g.add_tensor(std::move(t));
}

Graph without_values(const Graph& g) {
  Graph h;
  h.model_name = g.model_name;
  h.opset = g.opset;
  h.nodes = g.nodes;
  h.inputs = g.inputs;
  h.outputs = g.outputs;
  h.tensors.reserve(g.tensors.size());
  for (const Tensor& t : g.tensors) h.tensors.push_back(without_value(t));
  h.rebuild_index();
  return h;
}

}  // namespace texplan
