// Memory pictures of a plan report (plan_report() with include_tensors):
// every tensor a rectangle spanning its steps [first, last + 1) on x and the
// bytes it occupies on y, pools stacked bottom-up in one address range, so a
// panel is as tall as the plan's total bytes. Colour: the producing operator;
// hatching: textures. Over it, the lower-bound curve (live bytes per step)
// and its peak as a dashed line. One panel per strategy, stacked.
//
//   json report = plan_model("squeezenet1_1", dev, {});   // every strategy
//   write_timeline(report, "squeezenet.svg");             // or .html
//
// The SVG has one <rect class="tensor"> per tensor per panel (each with a
// <title> for hover text) and one <polyline class="lower-bound"> per panel.
// The HTML page is self-contained (inline SVG, CSS and a few lines of script
// for a hover card with name, op, bytes, steps, pool and offset).
#pragma once
#include <string>

#include "report/report.h"

namespace texplan::report {

// Throws Error naming the first field that is missing, of the wrong type or
// out of range: every tensor's steps 0 <= first <= last within a sane step
// count, sizes >= 0, its pool one of the strategy's and (in a valid plan)
// its bytes within that pool; sums that cannot overflow. The drawing trusts
// nothing else, so a hand-made report cannot make it write out of bounds.
void check_timeline_report(const json& report);

std::string timeline_svg(const json& report);
std::string timeline_html(const json& report);

// Format by extension: ".svg" or ".html"/".htm". Throws Error for another
// extension, a report without per-tensor placements, or an unwritable path.
void write_timeline(const json& report, const std::string& path);

}  // namespace texplan::report
