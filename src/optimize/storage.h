// Storage assignment: for every tensor, a flat buffer or a 2D texture
// (image), decided once, here, from the device profile and the texture
// kernels that exist. The planner and the runtime only read the decision.
//
//   Graph g = import_onnx(path);                       // (optimized)
//   StorageAssignment sa = assign_storage(g, dev, TextureMode::Pools);
//   PlanInput pin = make_usage_records(g, {.storage = &sa});
//
// Texture layouts of a 4D NCHW activation (texture_extent in usage.h), a
// choice per tensor. Channels are packed by 4 into RGBA pixels, C4 =
// ceil(C/4) slices, lane k = channel 4*c4 + k, and
//   Rows:     pixel (x, y) = (w, (n * C4 + c4) * H + h)   extent W x N*C4*H
//   WideRows: pixel (x, y) = ((h % k * W + w) * C4 + c4, n * ceil(H/k) + h / k)
//                                                   extent k*W*C4 x N*ceil(H/k)
// with `fold` k >= 1 rows of H side by side in one image row.
// Rows (NC4HW4): W is the innermost, contiguous dim of NCHW, so
// neighbouring work-items (along x) read neighbouring pixels, and a 3x3
// window is a 3x3 block of the image, which is what 2D texture caches are
// built for. But an image over a buffer pads every row to the device's pitch
// alignment (Adreno: 64 pixels), so a 14-wide row costs 4.6x its pixels and
// a 7-wide one 9.1x. WideRows (TVM's texture-nhwc, k = 1) puts a whole row
// of H in one image row, long enough that the padding is a few percent; the
// slices of one pixel are neighbours, which a convolution's loop over input
// slices reads in order. Folding k rows of H into one image row makes the
// row a whole number of pitches where k = 1 does not (73 x 16 slices: 1168
// pixels, 4.1% padding; k = 4: 4672 pixels, none). assign_storage picks per
// tensor the layout and fold of the smallest footprint (row pitch * height,
// plan::texture_footprint_bytes) that fits the image limits, Rows and then
// the smaller fold on a tie (folds in views only, or with
// LayoutPolicy::WideRows: texture pools keep k = 1, see choose_layout);
// every texture kernel reads and writes all of them, so a layout never
// needs a conversion.
// Lanes of the last slice beyond C are zero: every texture kernel writes
// them as 0, so consumers may multiply them with no mask (a NaN there would
// poison a dot product).
// Convolution weights are packed by 4 output channels: [OC4][C/g][KH][KW]
// float4, lane k = output channel 4*oc4 + k, zero beyond OC, so one read
// gives the weights of the four output channels of one output pixel.
//
// A node runs in texture form (reads and writes its 4D activations as
// textures) when KernelCatalog::texture_kernel says a kernel covers it, the mode is not
// None, and it is not a lone island (at least one neighbour runs in texture
// form too: two conversions around one node never pay). Where a tensor's
// producer and consumer disagree, an explicit conversion node is inserted
// into the graph, so the planner sees it as a step with its own tensor:
//   BufferToTexture  X (NCHW buffer) -> Y (texture of X's shape)
//   TextureToBuffer  X (texture)     -> Y (NCHW buffer)
// Graph inputs and outputs, and tensors that share storage with another
// (aliases, in-place, zero-copy concat), stay buffers. A 4D tensor whose
// image exceeds the device's limits in every layout (2D: width or height;
// 1D views: pixels) stays a buffer and every node touching it runs in buffer form: the
// documented fallback, listed in `fallbacks`.
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"
#include "optimize/kernel_catalog.h"
#include "plan/memory_plan.h"

namespace texplan {

// none: buffers only. pools: textures in dedicated image2d pools
// (tvm-texture-pools). views: textures as image views over the one buffer
// arena (image2d-from-buffer where the device has it, else image1d_buffer).
// auto: what the profile's `auto_textures` says for this device.
enum class TextureMode { None, Auto, Pools, Views };
TextureMode parse_texture_mode(const std::string& s);  // throws Error on anything else
const char* to_string(TextureMode m);
// Auto resolved through the profile (`auto_textures`); None without image support.
TextureMode resolve(TextureMode m, const plan::DeviceProfile& dev);
// The planning strategy a mode needs ("texture-views" for Views, else `strategy`).
std::string strategy_for(TextureMode m, const std::string& strategy);

enum class TextureLayout : uint8_t { Rows, WideRows };
const char* to_string(TextureLayout l);  // "nc4hw4-rows", "wide-rows"
// How assign_storage picks layouts: by footprint (Cost), or one layout for
// every texture where it fits the limits (comparisons, kernel tests).
enum class LayoutPolicy { Cost, Rows, WideRows };
LayoutPolicy parse_layout_policy(const std::string& s);  // "cost", "rows", "wide"; throws Error on anything else

struct StorageAssignment {
  TextureMode mode = TextureMode::None;  // resolved: None, Pools or Views
  std::vector<char> texture;             // per tensor id: 1 = texture
  std::vector<TextureLayout> layout;     // per tensor id: the texture's layout (Rows for buffers)
  std::vector<int32_t> fold;             // per tensor id: WideRows' k (1 otherwise)
  int conversions = 0;                   // BufferToTexture/TextureToBuffer nodes inserted
  std::vector<std::string> fallbacks;    // "tensor: reason" for 4D tensors kept as buffers by the limits
  bool is_texture(int t) const { return t >= 0 && size_t(t) < texture.size() && texture[t]; }
  TextureLayout layout_of(int t) const {
    return t >= 0 && size_t(t) < layout.size() ? layout[t] : TextureLayout::Rows;
  }
  int32_t fold_of(int t) const { return t >= 0 && size_t(t) < fold.size() ? fold[t] : 1; }
  int textures_in(TextureLayout l) const {
    int n = 0;
    for (size_t t = 0; t < texture.size(); ++t) n += texture[t] && layout_of(int(t)) == l;
    return n;
  }
};

struct StorageOptions {
  // Views: regions whose conversions, lost sharing (in place, zero-copy
  // concat) or texture footprints raise the lower bound by more than 0.5%
  // stay buffers (views are for memory; pools for speed keep them).
  bool memory_aware = true;
  LayoutPolicy layouts = LayoutPolicy::Cost;
  // Bytes of one stored float (4: fp32, 2: fp16 storage); a pixel is 4 of them.
  int element_bytes = 4;
};

// Decides every tensor's storage and layout and inserts the conversion
// nodes into `g` (tensors named "<name>@texture" / "<name>@buffer"), with
// the texture kernels of `kernels` (the lowering's kernel_catalog()). Lower
// bounds count every texture at its footprint on `dev`
// (plan::lower_bound_bytes(recs, dev)).
StorageAssignment assign_storage(Graph& g, const plan::DeviceProfile& dev, TextureMode mode,
                                 const KernelCatalog& kernels, const StorageOptions& opt = {});

}  // namespace texplan
