#include "cli/profile_report.h"

#include <algorithm>
#include <iomanip>
#include <map>

#include "cli/commands.h"

namespace texplan::cli {

using nlohmann::json;

namespace {
double rate(double amount, double ms, double unit) { return ms > 0 ? amount / (ms * 1e-3) / unit : 0; }
}  // namespace

json profile_report(const std::vector<std::vector<runtime::NodeTime>>& runs, const std::vector<double>& spans_ms,
                    const runtime::Ceilings& ceilings) {
  json r{{"runs", runs.size()}, {"ceilings", {{"gbps", ceilings.gbps}, {"gflops", ceilings.gflops}}}};
  json nodes = json::array();
  double device_ms = 0, kernel_ms = 0, enqueue_us = 0;  // kernel_ms: device_ms less CPU fallback nodes
  int launches = 0;
  struct Agg {
    int nodes = 0, launches = 0;
    double ms = 0, flops = 0, bytes = 0;
  };
  std::map<std::string, Agg> ops;
  if (!runs.empty()) {
    for (size_t k = 0; k < runs[0].size(); ++k) {
      const runtime::NodeTime& t = runs[0][k];
      if (t.launches == 0 && !t.cpu) continue;  // aliases and constants: no work
      std::vector<double> ms, enq;
      for (const auto& run : runs)
        if (k < run.size()) ms.push_back(run[k].ms), enq.push_back(run[k].enqueue_us);
      double m = median(ms), e = median(enq);
      std::string kernels;  // which kernels ran, in order, each once: "splitk_zero gemm splitk_finish"
      for (const auto& kt : t.kernels)
        if ((" " + kernels + " ").find(" " + kt.name + " ") == std::string::npos) kernels += (kernels.empty() ? "" : " ") + kt.name;
      nodes.push_back({{"node", t.node}, {"op", t.op}, {"ms", m}, {"launches", t.launches}, {"kernels", kernels}, {"enqueue_us", e},
                       {"flops", t.flops}, {"bytes", t.bytes}, {"gflops", rate(t.flops, m, 1e9)},
                       {"gbps", rate(t.bytes, m, 1e9)}, {"cpu", t.cpu}});
      device_ms += m, enqueue_us += e, launches += t.launches;
      if (!t.cpu) kernel_ms += m;
      Agg& a = ops[t.op];
      a.nodes += 1, a.launches += t.launches, a.ms += m, a.flops += t.flops, a.bytes += t.bytes;
    }
  }
  std::stable_sort(nodes.begin(), nodes.end(),
                   [](const json& a, const json& b) { return a["ms"].get<double>() > b["ms"].get<double>(); });
  json op_rows = json::array();
  for (auto& [op, a] : ops) {
    double gf = rate(a.flops, a.ms, 1e9), gb = rate(a.bytes, a.ms, 1e9);
    op_rows.push_back({{"op", op}, {"nodes", a.nodes}, {"launches", a.launches}, {"ms", a.ms},
                       {"share", device_ms > 0 ? a.ms / device_ms : 0}, {"flops", a.flops}, {"bytes", a.bytes},
                       {"gflops", gf}, {"gbps", gb},
                       {"flop_share_of_ceiling", ceilings.gflops > 0 ? gf / ceilings.gflops : 0},
                       {"byte_share_of_ceiling", ceilings.gbps > 0 ? gb / ceilings.gbps : 0}});
  }
  std::stable_sort(op_rows.begin(), op_rows.end(),
                   [](const json& a, const json& b) { return a["ms"].get<double>() > b["ms"].get<double>(); });
  r["device_ms"] = device_ms;
  const double span = spans_ms.empty() ? 0 : median(spans_ms);
  r["span_ms"] = span;
  r["idle_ms"] = std::max(0.0, span - kernel_ms);
  r["enqueue_us"] = enqueue_us;
  r["launches"] = launches;
  r["enqueue_us_per_launch"] = launches ? enqueue_us / launches : 0;
  r["ops"] = op_rows;
  r["nodes"] = nodes;
  return r;
}

void print_profile(const json& r, std::ostream& out, int top) {
  const double cg = r["ceilings"]["gflops"].get<double>(), cb = r["ceilings"]["gbps"].get<double>();
  out << std::fixed;
  out << "\nprofile     median of " << r["runs"].get<size_t>() << " profiled runs (OpenCL events); device ceilings "
      << std::setprecision(1) << cb << " GB/s (stream copy), " << cg << " GFLOP/s (FMA loop)\n";
  out << "            " << std::setprecision(3) << r["device_ms"].get<double>() << " ms of kernels in "
      << r["launches"].get<int>() << " launches; host enqueue " << std::setprecision(1)
      << r["enqueue_us"].get<double>() << " us (" << std::setprecision(2) << r["enqueue_us_per_launch"].get<double>()
      << " us per launch)\n";
  if (r["span_ms"].get<double>() > 0 && r["launches"].get<int>() > 0)
    out << "            first kernel start to last kernel end " << std::setprecision(3) << r["span_ms"].get<double>()
        << " ms: the device idled " << r["idle_ms"].get<double>() << " ms between kernels ("
        << std::setprecision(1) << 1e3 * r["idle_ms"].get<double>() / r["launches"].get<int>()
        << " us per launch)\n";
  out << std::left << std::setw(22) << "op" << std::right << std::setw(6) << "nodes" << std::setw(10) << "ms"
      << std::setw(8) << "share" << std::setw(10) << "GFLOP/s" << std::setw(8) << "%peak" << std::setw(10) << "GB/s"
      << std::setw(8) << "%bw" << "\n";
  for (const json& o : r["ops"]) {
    out << std::left << std::setw(22) << o["op"].get<std::string>() << std::right << std::setw(6)
        << o["nodes"].get<int>() << std::setw(10) << std::setprecision(3) << o["ms"].get<double>() << std::setw(7)
        << std::setprecision(1) << 100 * o["share"].get<double>() << "%";
    if (o["flops"].get<double>() > 0)
      out << std::setw(10) << std::setprecision(1) << o["gflops"].get<double>() << std::setw(7)
          << 100 * o["flop_share_of_ceiling"].get<double>() << "%";
    else
      out << std::setw(10) << "-" << std::setw(8) << "-";
    out << std::setw(10) << std::setprecision(1) << o["gbps"].get<double>() << std::setw(7)
        << 100 * o["byte_share_of_ceiling"].get<double>() << "%\n";
  }
  out << "\n" << std::left << std::setw(40) << "longest nodes" << std::setw(18) << "op" << std::right << std::setw(10)
      << "ms" << std::setw(10) << "GFLOP/s" << std::setw(10) << "GB/s" << std::setw(12) << "enqueue us" << "\n";
  int shown = 0;
  for (const json& n : r["nodes"]) {
    if (shown++ >= top) break;
    std::string name = n["node"].get<std::string>();
    if (name.size() > 38) name = name.substr(0, 35) + "...";
    out << std::left << std::setw(40) << name << std::setw(18)
        << (n["op"].get<std::string>() + (n["cpu"].get<bool>() ? " (cpu)" : "")) << std::right << std::setw(10)
        << std::setprecision(3) << n["ms"].get<double>() << std::setw(10) << std::setprecision(1);
    if (n["flops"].get<double>() > 0) out << n["gflops"].get<double>();
    else out << "-";
    out << std::setw(10) << n["gbps"].get<double>() << std::setw(12) << n["enqueue_us"].get<double>() << "\n";
  }
}

}  // namespace texplan::cli
