// PatchWrite (optimize/patch.h): one patch's tile copied into the full
// tensor of a segment output, by the strided copy kernel.
#include "lower/ops.h"

namespace texplan::lower {

bool lower_patch_write(NodeBuilder& b) {
  const Node& n = b.node;
  const int patch = b.inputs() - 1;  // [P] or [F, P]
  const Shape& y = b.out(0).shape;
  const Shape& p = b.in(patch).shape;
  const std::vector<int64_t> tile = n.get_ints("tile"), source = n.get_ints("source");
  if (y.size() != 4 || p.size() != 4 || tile.size() != 4 || source.size() != 2 || patch > 1)
    throw Error("PatchWrite needs 4D tensors, tile [y0, x0, h, w] and source [y, x]");
  if (tile[0] < 0 || tile[1] < 0 || tile[0] + tile[2] > y[2] || tile[1] + tile[3] > y[3] || source[0] < 0 ||
      source[1] < 0 || source[0] + tile[2] > p[2] || source[1] + tile[3] > p[3])
    throw Error("PatchWrite's tile lies outside its tensors");
  const DataType t = b.out(0).dtype;
  // Not in place (the planner declined): F first, then the tile over it.
  if (patch == 1) {
    const TensorArg f = b.arg_in(0), out = b.arg_out(0);
    if (f.mem != out.mem || f.offset != out.offset) launch_copy(b, f, out, t, {{element_count(y)}, {{1}, {1}}});
  }
  const std::vector<int64_t> ys = contiguous_strides(y), ps = contiguous_strides(p);
  TensorArg src = b.arg_in(patch), dst = b.arg_out(0);
  src.offset = i32(src.offset + source[0] * ps[2] + source[1] * ps[3]);
  dst.offset = i32(dst.offset + tile[0] * ys[2] + tile[1] * ys[3]);
  launch_copy(b, src, dst, t, {{y[0], y[1], tile[2], tile[3]}, {ys, ps}});
  return true;
}

}  // namespace texplan::lower
