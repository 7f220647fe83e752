// SVG by hand: no library, one pass over the report. See timeline.h for what
// the picture shows.
#include "report/timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "graph/safe_file.h"

namespace texplan::report {

namespace {

// Picture geometry (px).
constexpr double kWidth = 1200, kLeft = 86, kRight = 24, kPlotH = 250, kPanelTop = 30, kPanelBottom = 46,
                 kPanelGap = 14;
constexpr double kPlotW = kWidth - kLeft - kRight;

// Tableau-like colours that stay apart on screen and in grey print; the last
// one is for "other".
const char* kColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
                          "#b07aa1", "#ff9da7", "#9c755f", "#6a3d9a", "#8cd17d", "#bab0ac"};
constexpr int kNamedColours = 11;

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  return o;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  std::string s = b;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

// 1, 2 or 5 times a power of ten, so that `range` spans about `ticks` steps.
double nice_step(double range, int ticks) {
  if (range <= 0) return 1;
  double raw = range / ticks, p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

struct Unit {
  const char* name;
  double bytes;
};
// The axis unit: MiB from 1 MiB up (GiB from 1 GiB), KiB or B below.
Unit axis_unit(double max_bytes) {
  if (max_bytes >= 1024.0 * 1024 * 1024) return {"GiB", 1024.0 * 1024 * 1024};
  if (max_bytes >= 1024.0 * 1024) return {"MiB", 1024.0 * 1024};
  if (max_bytes >= 1024.0) return {"KiB", 1024.0};
  return {"B", 1};
}

// Bytes a placed tensor covers in its pool: a texture view covers whole
// pitched rows; everything else its own size.
int64_t covered_bytes(const json& t) {
  if (t.contains("row_pitch") && t.contains("height")) return t["row_pitch"].get<int64_t>() * t["height"].get<int64_t>();
  return t["bytes"].get<int64_t>();
}

struct Palette {
  std::map<std::string, int> colour_of_op;  // op -> index into kColours
  std::vector<std::string> named;           // ops with their own colour, most tensors first
  bool other = false;                        // some ops share the "other" colour
  int of(const std::string& op) const {
    auto it = colour_of_op.find(op);
    return it == colour_of_op.end() ? kNamedColours : it->second;
  }
};

Palette make_palette(const json& tensors) {
  std::map<std::string, int64_t> count;
  for (const auto& t : tensors) ++count[t.value("op", std::string("?"))];
  std::vector<std::pair<std::string, int64_t>> v(count.begin(), count.end());
  std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second > b.second; });
  Palette p;
  for (size_t i = 0; i < v.size(); ++i) {
    if (int(i) < kNamedColours - (v.size() > size_t(kNamedColours) ? 1 : 0)) {
      p.colour_of_op[v[i].first] = int(i);
      p.named.push_back(v[i].first);
    } else {
      p.other = true;
    }
  }
  return p;
}

// Live bytes per step (the lower-bound curve), over steps [0, steps).
std::vector<int64_t> live_bytes(const json& tensors, int64_t steps) {
  std::vector<int64_t> diff(size_t(steps) + 1, 0);
  for (const auto& t : tensors) {
    diff[size_t(t["first"].get<int64_t>())] += t["bytes"].get<int64_t>();
    diff[size_t(t["last"].get<int64_t>()) + 1] -= t["bytes"].get<int64_t>();
  }
  std::vector<int64_t> live(static_cast<size_t>(steps), 0);
  int64_t cur = 0;
  for (int64_t s = 0; s < steps; ++s) live[size_t(s)] = cur += diff[size_t(s)];
  return live;
}

std::string tooltip(const json& t, const json& pool) {
  std::ostringstream o;
  const bool tex = t.value("storage", std::string("buffer")) == "texture";
  o << t["name"].get<std::string>() << "\n";
  o << "op " << t.value("op", std::string("?")) << ", " << (tex ? "texture" : "buffer");
  if (tex && t.contains("width")) o << " " << t["width"].get<int64_t>() << "x" << t["height"].get<int64_t>() << " px";
  o << "\n" << human_bytes(t["bytes"]) << " (" << t["bytes"].get<int64_t>() << " B)";
  if (t.contains("row_pitch")) o << ", as a view with row pitch " << t["row_pitch"].get<int64_t>() << " B";
  o << "\nsteps " << t["first"].get<int64_t>() << ".." << t["last"].get<int64_t>();
  o << "\npool " << t["pool"].get<int64_t>();
  if (!pool.is_null()) o << " (" << pool.value("kind", std::string("buffer")) << ")";
  o << ", offset " << t["offset"].get<int64_t>() << " B";
  return o.str();
}

void legend(std::ostream& o, const Palette& pal, double y0, double& height) {
  double x = kLeft, y = y0;
  auto item = [&](const std::string& swatch, const std::string& label) {
    double w = 22 + 7.2 * double(label.size()) + 16;
    if (x + w > kWidth - kRight) x = kLeft, y += 20;
    o << "<g transform=\"translate(" << num(x) << "," << num(y) << ")\">" << swatch << "<text x=\"20\" y=\"11\">"
      << esc(label) << "</text></g>\n";
    x += w;
  };
  for (const auto& op : pal.named)
    item("<rect width=\"14\" height=\"12\" fill=\"" + std::string(kColours[pal.of(op)]) + "\"/>", op);
  if (pal.other) item("<rect width=\"14\" height=\"12\" fill=\"" + std::string(kColours[kNamedColours]) + "\"/>", "other ops");
  item("<rect width=\"14\" height=\"12\" fill=\"#999\"/>", "solid: buffer");
  item("<rect width=\"14\" height=\"12\" fill=\"url(#tex" + std::to_string(kNamedColours) + ")\"/>", "hatched: texture");
  item("<path d=\"M0 6H14\" class=\"lb-swatch\"/>", "live bytes per step (lower-bound curve)");
  item("<path d=\"M0 6H14\" class=\"peak-swatch\"/>", "lower bound (peak)");
  height = y + 20 - y0;
}

// One strategy: its rectangles, axes, pool bands and the lower-bound curve.
void panel(std::ostream& o, const json& r, const json& s, const Palette& pal, int64_t steps,
           const std::vector<int64_t>& live, double top) {
  const std::string name = s["name"].get<std::string>();
  const int64_t lb = r["lower_bound_bytes"].get<int64_t>();
  const int64_t total = s["total_bytes"].get<int64_t>();
  const json& tensors = s["tensors"];
  const json& pools = s["pools"];

  // Pools stacked bottom-up in report order.
  std::map<int64_t, int64_t> base;
  std::map<int64_t, json> pool_of;
  int64_t stacked = 0;
  for (const auto& p : pools) {
    base[p["id"].get<int64_t>()] = stacked;
    pool_of[p["id"].get<int64_t>()] = p;
    stacked += p["bytes"].get<int64_t>();
  }
  const double ymax = std::max<double>({double(stacked), double(total), double(lb), 1.0}) * 1.06;
  const Unit unit = axis_unit(ymax);
  const double x0 = kLeft, y0 = top + kPanelTop, y1 = y0 + kPlotH;
  auto X = [&](double step) { return x0 + step / double(std::max<int64_t>(steps, 1)) * kPlotW; };
  auto Y = [&](double bytes) { return y1 - bytes / ymax * kPlotH; };

  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.3f", s.value("ratio", 1.0));
  o << "<g class=\"panel\" data-strategy=\"" << esc(name) << "\" data-tensors=\"" << tensors.size() << "\">\n";
  o << "<text class=\"ptitle\" x=\"" << num(x0) << "\" y=\"" << num(top + 18) << "\"><tspan font-weight=\"bold\">"
    << esc(name) << "</tspan>: " << human_bytes(total) << " (" << total << " B), " << ratio << "x the lower bound, "
    << pools.size() << (pools.size() == 1 ? " pool" : " pools")
    << (s.value("valid", false) ? ", valid" : ", INVALID: " + esc(s.value("error", std::string()))) << "</text>\n";
  o << "<rect class=\"frame\" x=\"" << num(x0) << "\" y=\"" << num(y0) << "\" width=\"" << num(kPlotW)
    << "\" height=\"" << num(kPlotH) << "\"/>\n";

  // Grid and axes.
  const double ystep = nice_step(ymax / unit.bytes, 5);
  for (double v = 0; v * unit.bytes <= ymax; v += ystep) {
    double y = Y(v * unit.bytes);
    o << "<path class=\"grid\" d=\"M" << num(x0) << " " << num(y) << "H" << num(x0 + kPlotW) << "\"/>"
      << "<text class=\"ytick\" x=\"" << num(x0 - 6) << "\" y=\"" << num(y + 4) << "\">" << num(v) << "</text>\n";
  }
  const double xstep = std::max(1.0, nice_step(double(steps), 10));
  for (double v = 0; v <= double(steps); v += xstep) {
    double x = X(v);
    o << "<path class=\"tick\" d=\"M" << num(x) << " " << num(y1) << "v5\"/>"
      << "<text class=\"xtick\" x=\"" << num(x) << "\" y=\"" << num(y1 + 17) << "\">" << num(v) << "</text>\n";
  }
  o << "<text class=\"xlabel\" x=\"" << num(x0 + kPlotW / 2) << "\" y=\"" << num(y1 + 34)
    << "\">execution step</text>\n";
  o << "<text class=\"ylabel\" transform=\"translate(" << num(x0 - 58) << "," << num(y0 + kPlotH / 2)
    << ") rotate(-90)\">offset (" << unit.name << ")</text>\n";

  // Tensors.
  o << "<g class=\"tensors" << (tensors.size() <= 3000 ? " outlined" : "") << "\">\n";
  for (size_t k = 0; k < tensors.size(); ++k) {
    const json& t = tensors[k];
    const int64_t pid = t["pool"].get<int64_t>();
    const double b = double(base.count(pid) ? base[pid] : 0) + double(t["offset"].get<int64_t>());
    const double first = double(t["first"].get<int64_t>()), last = double(t["last"].get<int64_t>());
    double x = X(first), w = std::max(0.6, X(last + 1) - x);
    double ytop = Y(b + double(covered_bytes(t))), h = std::max(0.6, Y(b) - ytop);
    const bool tex = t.value("storage", std::string("buffer")) == "texture";
    const int c = pal.of(t.value("op", std::string("?")));
    o << "<rect class=\"tensor\" data-k=\"" << k << "\" x=\"" << num(x) << "\" y=\"" << num(ytop) << "\" width=\""
      << num(w) << "\" height=\"" << num(h) << "\" fill=\""
      << (tex ? "url(#tex" + std::to_string(c) + ")" : std::string(kColours[c])) << "\"><title>"
      << esc(tooltip(t, pool_of.count(pid) ? pool_of[pid] : json())) << "</title></rect>\n";
  }
  o << "</g>\n";

  // Pool bands (only while they are few enough to label).
  if (pools.size() > 1 && pools.size() <= 40) {
    for (const auto& p : pools) {
      const int64_t pb = base[p["id"].get<int64_t>()];
      const double ytop = Y(double(pb + p["bytes"].get<int64_t>()));
      o << "<path class=\"pool\" d=\"M" << num(x0) << " " << num(ytop) << "H" << num(x0 + kPlotW) << "\"/>\n";
      if (Y(double(pb)) - ytop >= 13) {
        std::string label = "pool " + std::to_string(p["id"].get<int64_t>()) + " " + p.value("kind", std::string());
        if (p.contains("width")) label += " " + std::to_string(p["width"].get<int64_t>()) + "x" + std::to_string(p["height"].get<int64_t>());
        o << "<text class=\"plabel\" x=\"" << num(x0 + kPlotW - 4) << "\" y=\"" << num(ytop + 11) << "\">"
          << esc(label) << "</text>\n";
      }
    }
  }

  // Lower-bound curve: a step function, a vertex only where the value
  // changes. Beyond two steps per pixel it is drawn as its upper envelope
  // per pixel column, so the peak stays exact and the line stays a line.
  const int64_t columns = int64_t(kPlotW);
  const int64_t bins = steps > 2 * columns ? columns : steps;
  o << "<polyline class=\"lower-bound\" points=\"";
  int64_t prev = -1;
  for (int64_t b = 0; b < bins; ++b) {
    const int64_t s0 = b * steps / bins, s1 = std::max(s0 + 1, (b + 1) * steps / bins);
    const int64_t v = *std::max_element(live.begin() + s0, live.begin() + s1);
    if (v != prev) {
      if (prev >= 0) o << num(X(double(s0))) << "," << num(Y(double(prev))) << " ";
      o << num(X(double(s0))) << "," << num(Y(double(v))) << " ";
      prev = v;
    }
  }
  o << num(X(double(steps))) << "," << num(Y(double(std::max<int64_t>(prev, 0)))) << "\"/>\n";
  o << "<path class=\"peak\" d=\"M" << num(x0) << " " << num(Y(double(lb))) << "H" << num(x0 + kPlotW) << "\"/>"
    << "<text class=\"peaklabel\" x=\"" << num(x0 + 4) << "\" y=\"" << num(Y(double(lb)) - 4) << "\">lower bound "
    << human_bytes(lb) << "</text>\n";
  o << "</g>\n";
}

const char* kStyle = R"(
text { font-family: "DejaVu Sans", Arial, sans-serif; font-size: 12px; fill: #222; }
.title { font-size: 16px; font-weight: bold; }
.subtitle { fill: #555; }
.ptitle { font-size: 13px; }
.frame { fill: #fafafa; stroke: #888; stroke-width: 1; }
.grid { stroke: #e3e3e3; stroke-width: 1; }
.tick { stroke: #888; }
.ytick { text-anchor: end; fill: #555; font-size: 11px; }
.xtick { text-anchor: middle; fill: #555; font-size: 11px; }
.xlabel, .ylabel { text-anchor: middle; fill: #333; }
.outlined rect.tensor { stroke: #fff; stroke-width: 0.5; }
rect.tensor:hover, rect.tensor.hi { stroke: #000; stroke-width: 1.5; }
.pool { stroke: #333; stroke-width: 1; stroke-dasharray: 2 3; }
.plabel { text-anchor: end; fill: #222; font-size: 10px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
.lower-bound, .lb-swatch { fill: none; stroke: #d62728; stroke-width: 1.8; stroke-linejoin: round; }
.peak, .peak-swatch { stroke: #d62728; stroke-width: 1; stroke-dasharray: 6 4; fill: none; }
.peaklabel { fill: #d62728; font-size: 11px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
.skipped { fill: #777; font-style: italic; }
)";

}  // namespace

// Steps a report may span: a plan has about one step per node; beyond this
// (or 16 per tensor) a hand-made report would only make the picture
// allocate.
constexpr int64_t kMaxSteps = int64_t(1) << 26;
// Bytes a tensor or pool may claim: far beyond any device, and small enough
// that no sum of a report's sizes overflows.
constexpr int64_t kMaxBytes = int64_t(1) << 52;

void check_timeline_report(const json& r) {
  auto bad = [](const std::string& where, const std::string& why) {
    throw Error("timeline: report" + (where.empty() ? std::string() : ", " + where) + ": " + why);
  };
  auto integer = [&](const json& o, const char* key, const std::string& where, int64_t lo, int64_t hi,
                     bool required = true) -> int64_t {
    if (!o.contains(key)) {
      if (required) bad(where, std::string("has no '") + key + "'");
      return lo;
    }
    const json& v = o[key];
    if (!v.is_number_integer()) bad(where, std::string("'") + key + "' is not an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
      bad(where, std::string("'") + key + "' is out of range");
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
      bad(where, std::string("'") + key + "' = " + std::to_string(x) + " is outside [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
    return x;
  };
  auto text = [&](const json& o, const char* key, const std::string& where, bool required) {
    if (!o.contains(key)) {
      if (required) bad(where, std::string("has no '") + key + "'");
      return;
    }
    if (!o[key].is_string()) bad(where, std::string("'") + key + "' is not a string");
  };
  if (!r.is_object()) bad("", "is not an object (a plan() report)");
  if (!r.contains("strategies") || !r["strategies"].is_array()) bad("", "has no 'strategies' list");
  for (const char* k : {"model", "target", "textures"}) text(r, k, "", false);
  for (const auto& s : r["strategies"]) {
    if (!s.is_object()) bad("strategy", "is not an object");
    text(s, "name", "strategy", true);
    const std::string where = "strategy '" + s["name"].get<std::string>() + "'";
    text(s, "error", where, false);
    if (s.contains("valid") && !s["valid"].is_boolean()) bad(where, "'valid' is not true or false");
    for (const char* k : {"ratio", "plan_ms"})
      if (s.contains(k) && !s[k].is_number()) bad(where, std::string("'") + k + "' is not a number");
    if (!s.contains("total_bytes")) continue;
    integer(s, "total_bytes", where, 0, kMaxBytes);
    if (!s.contains("pools") || !s["pools"].is_array()) bad(where, "has no 'pools' list");
    std::map<int64_t, int64_t> pool_bytes;
    int64_t pools_total = 0;
    for (const auto& p : s["pools"]) {
      if (!p.is_object()) bad(where, "has a pool that is not an object");
      const int64_t id = integer(p, "id", where + " pool", 0, INT64_MAX);
      const std::string pw = where + " pool " + std::to_string(id);
      const int64_t bytes = integer(p, "bytes", pw, 0, kMaxBytes);
      text(p, "kind", pw, false);
      integer(p, "width", pw, 0, kMaxBytes, false);
      integer(p, "height", pw, 0, kMaxBytes, false);
      if (!pool_bytes.emplace(id, bytes).second) bad(pw, "appears twice");
      if (__builtin_add_overflow(pools_total, bytes, &pools_total) || pools_total > kMaxBytes)
        bad(where, "pools add up to more than " + std::to_string(kMaxBytes) + " bytes");
    }
    if (!s.contains("tensors")) continue;
    if (!s["tensors"].is_array()) bad(where, "'tensors' is not a list");
    const json& tensors = s["tensors"];
    const int64_t max_steps = std::min<int64_t>(kMaxSteps, std::max<int64_t>(1 << 20, 16 * int64_t(tensors.size())));
    const bool valid = s.value("valid", false);
    int64_t live_total = 0;
    for (size_t k = 0; k < tensors.size(); ++k) {
      const json& t = tensors[k];
      std::string tw = where + " tensor " + std::to_string(k);
      if (!t.is_object()) bad(tw, "is not an object");
      text(t, "name", tw, true);
      tw = where + " tensor '" + t["name"].get<std::string>() + "'";
      text(t, "op", tw, false);
      text(t, "storage", tw, false);
      const int64_t first = integer(t, "first", tw, 0, max_steps - 1);
      integer(t, "last", tw, first, max_steps - 1);
      const int64_t bytes = integer(t, "bytes", tw, 0, kMaxBytes);
      const int64_t pool = integer(t, "pool", tw, 0, INT64_MAX);
      const int64_t offset = integer(t, "offset", tw, 0, kMaxBytes);
      integer(t, "width", tw, 0, kMaxBytes, false);
      const int64_t height = integer(t, "height", tw, 0, kMaxBytes, false);
      const int64_t pitch = integer(t, "row_pitch", tw, 0, kMaxBytes, false);
      if (t.contains("row_pitch") && t.contains("height") && (height > 0 && pitch > kMaxBytes / height))
        bad(tw, "row_pitch x height is more than " + std::to_string(kMaxBytes) + " bytes");
      auto it = pool_bytes.find(pool);
      if (it == pool_bytes.end()) bad(tw, "is in pool " + std::to_string(pool) + ", which the strategy does not have");
      if (valid && (offset > it->second || covered_bytes(t) > it->second - offset))
        bad(tw, "covers [" + std::to_string(offset) + ", +" + std::to_string(covered_bytes(t)) + ") beyond pool " +
                    std::to_string(pool) + "'s " + std::to_string(it->second) + " bytes");
      if (__builtin_add_overflow(live_total, bytes, &live_total) || live_total > kMaxBytes)
        bad(where, "tensors add up to more than " + std::to_string(kMaxBytes) + " bytes");
    }
  }
  integer(r, "lower_bound_bytes", "", 0, kMaxBytes);
}

std::string timeline_svg(const json& r) {
  check_timeline_report(r);
  // Panels: strategies that were planned with per-tensor placements.
  std::vector<const json*> drawn, skipped;
  for (const auto& s : r.at("strategies"))
    (s.contains("tensors") && s.contains("total_bytes") ? drawn : skipped).push_back(&s);
  if (drawn.empty())
    throw Error("timeline: the report has no per-tensor placements" +
                std::string(r.value("records", int64_t(0)) > 200000 ? " (graphs above 200000 tensors are reported without them)"
                                                                    : ""));
  const json& tensors0 = (*drawn.front())["tensors"];
  int64_t steps = 1;
  for (const auto& t : tensors0) steps = std::max(steps, t["last"].get<int64_t>() + 1);
  const std::vector<int64_t> live = live_bytes(tensors0, steps);
  const Palette pal = make_palette(tensors0);

  std::ostringstream body;
  double y = 0;
  body << "<text class=\"title\" x=\"" << num(kLeft) << "\" y=\"22\">memory timeline: "
       << esc(r.value("model", std::string("?"))) << "</text>\n";
  body << "<text class=\"subtitle\" x=\"" << num(kLeft) << "\" y=\"40\">" << tensors0.size() << " tensors over "
       << steps << " steps, target " << esc(r.value("target", std::string("?"))) << ", textures "
       << esc(r.value("textures", std::string("none"))) << ", lower bound "
       << human_bytes(r["lower_bound_bytes"]) << " (" << r["lower_bound_bytes"].get<int64_t>()
       << " B). Each rectangle is a tensor: x = the steps it is live, y = the bytes it occupies.</text>\n";
  double lh = 0;
  legend(body, pal, 52, lh);
  y = 52 + lh + 4;
  for (const json* s : drawn) {
    panel(body, r, *s, pal, steps, live, y);
    y += kPanelTop + kPlotH + kPanelBottom + kPanelGap;
  }
  for (const json* s : skipped) {
    body << "<text class=\"skipped\" x=\"" << num(kLeft) << "\" y=\"" << num(y + 14) << "\">"
         << esc((*s)["name"].get<std::string>()) << ": not drawn ("
         << esc(s->value("error", std::string("no per-tensor placements"))) << ")</text>\n";
    y += 22;
  }
  const double height = y + 8;

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(kWidth) << "\" height=\"" << num(height)
    << "\" viewBox=\"0 0 " << num(kWidth) << " " << num(height) << "\">\n";
  o << "<style>" << kStyle << "</style>\n<defs>\n";
  for (int c = 0; c <= kNamedColours; ++c)
    o << "<pattern id=\"tex" << c << "\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" "
      << "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"" << kColours[c]
      << "\"/><path d=\"M0 0V6\" stroke=\"#fff\" stroke-width=\"2.2\"/></pattern>\n";
  o << "</defs>\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n" << body.str() << "</svg>\n";
  return o.str();
}

std::string timeline_html(const json& r) {
  check_timeline_report(r);
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>texplan: "
    << esc(r.value("model", std::string("?"))) << "</title>\n<style>\n"
    << "body { font-family: \"DejaVu Sans\", Arial, sans-serif; margin: 16px; color: #222; }\n"
    << "table { border-collapse: collapse; margin-bottom: 12px; font-size: 13px; }\n"
    << "th, td { padding: 3px 10px; border-bottom: 1px solid #ddd; } td.n { text-align: right; "
       "font-variant-numeric: tabular-nums; }\n"
    << "#fig svg { max-width: 100%; height: auto; }\n"
    << "#card { position: fixed; display: none; pointer-events: none; background: #fff; border: 1px solid #333; "
       "border-radius: 4px; padding: 6px 8px; font-size: 12px; white-space: pre; box-shadow: 2px 2px 6px #0003; }\n"
    << "</style></head><body>\n";
  o << "<table><tr><th>strategy</th><th>total</th><th>bytes</th><th>ratio to lower bound</th><th>pools</th>"
       "<th>plan ms</th><th>valid</th></tr>\n";
  for (const auto& s : r.at("strategies")) {
    o << "<tr><td>" << esc(s["name"].get<std::string>()) << "</td>";
    if (s.contains("total_bytes")) {
      char ratio[32], ms[32];
      std::snprintf(ratio, sizeof ratio, "%.3f", s.value("ratio", 1.0));
      std::snprintf(ms, sizeof ms, "%.2f", s.value("plan_ms", 0.0));
      o << "<td class=\"n\">" << human_bytes(s["total_bytes"]) << "</td><td class=\"n\">"
        << s["total_bytes"].get<int64_t>() << "</td><td class=\"n\">" << ratio << "</td><td class=\"n\">"
        << s["pools"].size() << "</td><td class=\"n\">" << ms << "</td><td>"
        << (s.value("valid", false) ? "yes" : "NO: " + esc(s.value("error", std::string()))) << "</td>";
    } else {
      o << "<td colspan=\"6\">skipped: " << esc(s.value("error", std::string())) << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</table>\n<div id=\"fig\">\n" << timeline_svg(r) << "</div>\n<div id=\"card\"></div>\n";
  // Hover card instead of the native tooltip; the same tensor is outlined in
  // every panel.
  o << R"(<script>
const card = document.getElementById('card');
for (const r of document.querySelectorAll('rect.tensor')) {
  const t = r.querySelector('title');
  if (t) { r.dataset.tip = t.textContent; t.remove(); }
}
let lit = [];
document.addEventListener('mousemove', e => {
  const r = e.target;
  if (r.classList && r.classList.contains('tensor')) {
    card.textContent = r.dataset.tip;
    card.style.display = 'block';
    const x = e.clientX + 14, y = e.clientY + 14;
    card.style.left = Math.min(x, window.innerWidth - card.offsetWidth - 8) + 'px';
    card.style.top = Math.min(y, window.innerHeight - card.offsetHeight - 8) + 'px';
    for (const h of lit) h.classList.remove('hi');
    lit = [...document.querySelectorAll('rect.tensor[data-k="' + r.dataset.k + '"]')];
    for (const h of lit) h.classList.add('hi');
  } else {
    card.style.display = 'none';
    for (const h of lit) h.classList.remove('hi');
    lit = [];
  }
});
</script>
</body></html>
)";
  return o.str();
}

void write_timeline(const json& report, const std::string& path) {
  auto ends = [&](const std::string& x) {
    if (path.size() < x.size()) return false;
    std::string tail = path.substr(path.size() - x.size());
    std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return tail == x;
  };
  std::string text;
  if (ends(".svg"))
    text = timeline_svg(report);
  else if (ends(".html") || ends(".htm"))
    text = timeline_html(report);
  else
    throw Error("timeline: '" + path + "': give a .svg or .html file name");
  write_file(path, text, "timeline");
}

}  // namespace texplan::report
