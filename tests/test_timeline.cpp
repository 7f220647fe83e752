// Memory pictures: the SVG's structure (one rectangle per tensor per panel,
// the lower-bound curve), the CLI option, and that headless Chromium renders
// the SVG and the HTML page into a picture that is not blank.
#include <gtest/gtest.h>

#include "shell.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "report/timeline.h"
#include "onnx_builder.h"

namespace fs = std::filesystem;
using namespace texplan;
using report::json;

namespace {

const std::string kTiny = std::string(TEXPLAN_SOURCE_DIR) + "/examples/models/tiny_cnn";

using Result = texplan::test::ShellResult;
using texplan::test::sh;

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

json tiny_report(const std::string& target = "pocl", TextureMode textures = TextureMode::None) {
  plan::DeviceProfile dev = plan::DeviceProfile::load(target);
  report::PlanOptions opt;
  opt.textures = textures;
  // With textures, no in-place nodes: views would keep tiny_cnn in buffers
  // (texture kernels do not run in place, and that would cost 16 KiB).
  opt.optimize.inplace = textures == TextureMode::None;
  return report::plan_model(kTiny, dev, opt);
}

// The text of each <g class="panel" ...> ... </g> group, by strategy.
std::map<std::string, std::string> panels(const std::string& svg) {
  std::map<std::string, std::string> out;
  std::regex open("<g class=\"panel\" data-strategy=\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), open); it != std::sregex_iterator(); ++it) {
    size_t begin = size_t(it->position(0));
    size_t end = svg.find("<polyline class=\"lower-bound\"", begin);
    end = svg.find("</g>\n", end);  // the panel closes after its curve and peak line
    out[(*it)[1]] = svg.substr(begin, end - begin);
  }
  return out;
}

bool well_formed_xml(const fs::path& p) {
  Result r = sh("python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' " + p.string());
  return r.code == 0;
}

// Decodes an 8-bit RGB(A) PNG with the standard library only and prints
// "WIDTH HEIGHT COLOURS RED BLUE": the distinct colours, and the pixels of
// the lower-bound curve's red and of the Conv blue.
const char* kPngCheck = R"PY(
import struct, sys, zlib
d = open(sys.argv[1], 'rb').read()
assert d[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat = 8, b''
while pos < len(d):
    n, = struct.unpack('>I', d[pos:pos + 4]); kind = d[pos + 4:pos + 8]; data = d[pos + 8:pos + 8 + n]; pos += 12 + n
    if kind == b'IHDR': w, h, depth, ctype = struct.unpack('>IIBB', data[:10])
    elif kind == b'IDAT': idat += data
assert depth == 8 and ctype in (2, 6), (depth, ctype)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, i, colours, red, blue = bytearray(stride), 0, set(), 0, 0
for y in range(h):
    f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    if f == 2:
        line = bytearray((a + b) & 255 for a, b in zip(line, prev))
    elif f:
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0; b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 3: line[x] = (line[x] + ((a + b) >> 1)) & 255
            else:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        px = bytes(line[x:x + 3]); colours.add(px)
        if abs(px[0] - 214) < 12 and abs(px[1] - 39) < 12 and abs(px[2] - 40) < 12: red += 1
        if px == b'\x4e\x79\xa7': blue += 1
    prev = line
print(w, h, len(colours), red, blue)
)PY";

std::string chromium() {
  for (const char* c : {"chromium", "chromium-browser", "google-chrome"})
    if (sh(std::string("command -v ") + c).code == 0) return c;
  return "";
}

// Screenshot of `file` at 1200x800; returns the PNG check's numbers.
std::vector<long> render(const std::string& browser, const fs::path& file, const fs::path& dir) {
  fs::path png = dir / (file.filename().string() + ".png");
  fs::path profile = dir / ("profile-" + file.filename().string());
  Result r = sh("timeout 120 " + browser +
                " --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update"
                " --no-first-run --hide-scrollbars --user-data-dir=" + profile.string() + " --screenshot=" +
                png.string() + " --window-size=1200,800 file://" + fs::absolute(file).string());
  EXPECT_TRUE(fs::exists(png)) << r.out;
  if (!fs::exists(png)) return {};
  fs::path script = dir / "png_check.py";
  std::ofstream(script) << kPngCheck;
  Result c = sh("python3 " + script.string() + " " + png.string());
  EXPECT_EQ(c.code, 0) << c.out;
  std::istringstream in(c.out);
  std::vector<long> v;
  for (long x; in >> x;) v.push_back(x);
  EXPECT_EQ(v.size(), 5u) << c.out;
  return v;
}

}  // namespace

TEST(Timeline, OneRectanglePerTensorPerPanelAndTheLowerBoundCurve) {
  json r = tiny_report();
  const std::string svg = report::timeline_svg(r);
  auto ps = panels(svg);
  size_t planned = 0;
  for (const auto& s : r["strategies"]) {
    if (!s.contains("tensors")) {
      // Skipped strategies are named, not drawn.
      EXPECT_NE(svg.find(s["name"].get<std::string>() + ": not drawn"), std::string::npos);
      continue;
    }
    ++planned;
    const std::string name = s["name"];
    SCOPED_TRACE(name);
    ASSERT_TRUE(ps.count(name));
    EXPECT_EQ(count(ps[name], "<rect class=\"tensor\""), r["records"].get<size_t>());
    EXPECT_EQ(count(ps[name], "<title>"), r["records"].get<size_t>());
    EXPECT_EQ(count(ps[name], "<polyline class=\"lower-bound\""), 1u);
    EXPECT_NE(ps[name].find(human_bytes(s["total_bytes"])), std::string::npos);
  }
  EXPECT_EQ(ps.size(), planned);
  EXPECT_GE(planned, 5u);
  EXPECT_EQ(count(svg, "<rect class=\"tensor\""), planned * r["records"].get<size_t>());
  // Axis labels and legend.
  EXPECT_NE(svg.find("execution step"), std::string::npos);
  EXPECT_NE(svg.find("offset (KiB)"), std::string::npos);  // tiny_cnn peaks at 48 KiB
  EXPECT_NE(svg.find(">FusedConv</text>"), std::string::npos);  // the optimizer fuses Conv+Relu
  EXPECT_NE(svg.find("hatched: texture"), std::string::npos);
}

TEST(Timeline, CurveFollowsLiveBytesAndPeaksAtTheLowerBound) {
  json r = tiny_report();
  const std::string svg = report::timeline_svg(r);
  const auto ps = panels(svg);
  const std::string& best = ps.at("best");
  // The plot's y axis maps 0..ymax to [bottom, bottom - 250]; the highest
  // point of the curve is the lower bound, which `best` reaches here.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(best, m, std::regex("points=\"([^\"]+)\"")));
  std::istringstream pts(m[1].str());
  double min_y = 1e9, max_y = -1e9;
  for (std::string p; pts >> p;) {
    double y = std::stod(p.substr(p.find(',') + 1));
    min_y = std::min(min_y, y), max_y = std::max(max_y, y);
  }
  std::smatch peak;
  ASSERT_TRUE(std::regex_search(best, peak, std::regex("<path class=\"peak\" d=\"M[0-9.]+ ([0-9.]+)H")));
  EXPECT_NEAR(min_y, std::stod(peak[1].str()), 0.011);  // curve top == peak line
  EXPECT_GT(max_y - min_y, 100);                        // and it varies over the run
  EXPECT_NE(best.find("lower bound " + human_bytes(r["lower_bound_bytes"])), std::string::npos);
}

TEST(Timeline, TexturesAreHatchedAndViewsCoverPitchedRows) {
  json r = tiny_report("adreno", TextureMode::Auto);
  ASSERT_GT(r["texture_records"].get<int64_t>(), 0);
  const std::string svg = report::timeline_svg(r);
  auto ps = panels(svg);
  ASSERT_TRUE(ps.count("texture-views"));  // adreno has image2d_from_buffer
  EXPECT_EQ(count(ps["texture-views"], "fill=\"url(#tex"), r["texture_records"].get<size_t>());
  EXPECT_NE(ps["texture-views"].find("as a view with row pitch"), std::string::npos);
}

TEST(Timeline, RefusesReportsWithoutTensorsAndUnknownExtensions) {
  json r = tiny_report();
  for (auto& s : r["strategies"]) s.erase("tensors");
  EXPECT_THROW(report::timeline_svg(r), Error);
  EXPECT_THROW(report::write_timeline(tiny_report(), (test::temp_dir("timeline") / "x.png").string()), Error);
}

TEST(Timeline, CliWritesSvgAndHtml) {
  fs::path dir = test::temp_dir("timeline-cli");
  Result r = sh(std::string(TEXPLAN_CLI) + " plan " + kTiny + " --timeline " + (dir / "t.svg").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(well_formed_xml(dir / "t.svg"));
  r = sh(std::string(TEXPLAN_CLI) + " plan " + kTiny + " --strategy best --timeline " + (dir / "t.html").string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream f(dir / "t.html");
  std::string html((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<g class=\"panel\""), 1u);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);  // self-contained
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
  r = sh(std::string(TEXPLAN_CLI) + " plan " + kTiny + " --timeline " + (dir / "t.txt").string());
  EXPECT_EQ(r.code, 2);  // a usage error, before planning
  EXPECT_NE(r.out.find("give a .svg, .html or .htm file name"), std::string::npos) << r.out;
}

TEST(Timeline, RendersInHeadlessChromium) {
  const std::string browser = chromium();
  if (browser.empty()) GTEST_SKIP() << "no chromium (scripts/install-deps.sh installs it)";
  fs::path dir = test::temp_dir("timeline-chromium");
  json r = tiny_report();
  report::write_timeline(r, (dir / "tiny.svg").string());
  report::write_timeline(r, (dir / "tiny.html").string());
  ASSERT_TRUE(well_formed_xml(dir / "tiny.svg"));
  for (const char* f : {"tiny.svg", "tiny.html"}) {
    SCOPED_TRACE(f);
    std::vector<long> v = render(browser, dir / f, dir);
    ASSERT_EQ(v.size(), 5u);
    EXPECT_EQ(v[0], 1200);
    EXPECT_EQ(v[1], 800);
    EXPECT_GT(v[2], 50);     // text, colours, anti-aliasing: not a blank page
    EXPECT_GT(v[3], 300);    // the red lower-bound curve and peak line
    EXPECT_GT(v[4], 5000);   // Conv rectangles
  }
  // The page's script ran: tooltips moved from <title> into data-tip.
  Result dom = sh("timeout 120 " + browser +
                  " --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update"
                  " --no-first-run --user-data-dir=" + (dir / "profile-dom").string() + " --dump-dom file://" +
                  (dir / "tiny.html").string());
  EXPECT_EQ(count(dom.out, "data-tip=\""), count(dom.out, "<rect class=\"tensor\""));
  EXPECT_GT(count(dom.out, "data-tip=\""), 0u);
}
