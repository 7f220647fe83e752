// The Offloader: partition (pattern table + cost rule + scratch records),
// preparation of CLBlast calls over the session's pools, auto's measurement,
// CLBlast's tuned parameters in the tuning cache, and the fallback rules.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "lower/ops.h"
#include "offload/offload.h"
#include "offload/work.h"

#ifdef TEXPLAN_HAVE_CLBLAST
#include <clblast.h>
#endif

namespace texplan::offload {

using lower::Launch;
using lower::Location;

Mode parse_mode(const std::string& s) {
  if (s == "none") return Mode::None;
  if (s == "clblast") return Mode::Clblast;
  if (s == "auto") return Mode::Auto;
  throw Error("--offload must be none, clblast or auto, not '" + s + "'");
}

const char* to_string(Mode m) { return m == Mode::None ? "none" : m == Mode::Clblast ? "clblast" : "auto"; }

OffloadOptions::Reject parse_reject(const std::string& s) {
  if (s == "prepare") return OffloadOptions::Reject::Prepare;
  if (s == "run") return OffloadOptions::Reject::Run;
  throw Error("--offload-reject must be prepare or run, not '" + s + "'");
}

std::string library_version() {
#ifdef TEXPLAN_HAVE_CLBLAST
  return "CLBlast " + std::to_string(CLBLAST_VERSION_MAJOR) + "." + std::to_string(CLBLAST_VERSION_MINOR) + "." +
         std::to_string(CLBLAST_VERSION_PATCH);
#else
  return "";
#endif
}

namespace {

constexpr const char* kSection = "clblast";

void warn(const std::string& what) { std::cerr << "texplan: warning: " << what << "\n"; }

std::string device_key(const runtime::Device& d) { return d.info().name + " | " + d.info().driver; }

// The name under which a signature lists the node's in-place decision: it
// was an attribute once, and keys keep it so that existing tuning caches
// still match. (A matched node carries no other decision: the partition
// refuses operand views and channel scales, and skips elided Concats.)
constexpr const char* kInPlaceKey = "texplan_inplace";

// The node's operator, operand shapes and attributes: the key of auto's
// measurement in the tuning cache.
std::string signature(const Graph& g, const Node& n) {
  std::ostringstream o;
  o << n.op_type;
  for (int t : n.inputs) o << " " << (t < 0 ? "-" : texplan::to_string(g.tensors[t].shape));
  std::map<std::string, Attribute> keyed = n.attrs;
  if (n.decisions.in_place) keyed.emplace(kInPlaceKey, Attribute::of_int(1));
  for (const auto& [name, a] : keyed) {
    o << " " << name << "=";
    switch (a.kind) {
      case Attribute::Kind::Int: o << a.i; break;
      case Attribute::Kind::Float: o << a.f; break;
      case Attribute::Kind::String: o << a.s; break;
      case Attribute::Kind::Ints: for (auto v : a.ints) o << v << ","; break;
      case Attribute::Kind::Floats: for (auto v : a.floats) o << v << ","; break;
      case Attribute::Kind::Strings: for (auto& v : a.strings) o << v << ";"; break;
      case Attribute::Kind::Tensor: o << "tensor"; break;
    }
  }
  return o.str();
}

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

#ifdef TEXPLAN_HAVE_CLBLAST
clblast::Transpose tr(bool t) { return t ? clblast::Transpose::kYes : clblast::Transpose::kNo; }

std::string status_name(clblast::StatusCode s) {
  int v = int(s);
  if (v <= 0 && v > -100) return runtime::cl_error_name(cl_int(v));
  return "CLBlast status " + std::to_string(v);
}
#endif

}  // namespace

bool Offloader::selected(const std::string& node) const {
  if (options_.only.empty()) return true;
  for (const std::string& part : options_.only)
    if (!part.empty() && node.find(part) != std::string::npos) return true;
  return false;
}

struct Offloader::Impl {
  std::vector<NodeWork> work;  // parallel to choices_
  std::string key;             // device key in the cache
  std::vector<std::string> tuned;  // kernels whose parameters came from the cache or a tune
  void note_tuned(const std::string& kernel) {  // loaded, then tuned again: named once
    if (std::find(tuned.begin(), tuned.end(), kernel) == tuned.end()) tuned.push_back(kernel);
  }
  std::string tuned_list() const {
    std::string s;
    for (const std::string& k : tuned) s += (s.empty() ? "" : ", ") + k;
    return s;
  }
  nlohmann::json measured = nlohmann::json::object();  // auto's measurements without a cache
  std::set<std::string> rejected;  // nodes CLBlast rejected while a session prepared
};

// A node prepared for CLBlast: resolved buffers and offsets, texplan's own
// launches for the prefill and the epilogue, and a sub-buffer for GEMM temp.
class ClblastNode : public runtime::OffloadedNode {
 public:
  struct Mat {
    cl_mem mem = nullptr;
    size_t offset = 0;  // elements
  };
  struct Im2col {
    Im2colCall call;
    Mat image, col;
  };
  struct Gemm {
    GemmCall call;
    Mat a, b, c;
  };
  std::string node_name;
  std::vector<Launch> before, after;  // prefill; epilogue
  std::vector<std::variant<Im2col, Gemm>> calls;
  cl_mem temp = nullptr;  // sub-buffer over the planned temp record
  bool reject = false;    // forced rejection (tests)

  ~ClblastNode() override {
    for (Launch& l : before) clReleaseKernel(l.kernel);
    for (Launch& l : after) clReleaseKernel(l.kernel);
    if (temp) clReleaseMemObject(temp);
  }

  static cl_int launch(cl_command_queue q, const Launch& l, std::vector<cl_event>* events) {
    cl_event* ev = events ? &events->emplace_back() : nullptr;
    cl_int e = clEnqueueNDRangeKernel(q, l.kernel, l.dims, nullptr, l.global, l.has_local ? l.local : nullptr, 0,
                                      nullptr, ev);
    if (e != CL_SUCCESS && ev) events->pop_back();
    return e;
  }

  bool enqueue(cl_command_queue q, std::vector<cl_event>* events) override {
    for (const Launch& l : before)
      if (cl_int e = launch(q, l, events); e != CL_SUCCESS)
        throw Error("node " + node_name + ": enqueueing kernel " + l.name + ": " + runtime::cl_error_name(e));
#ifdef TEXPLAN_HAVE_CLBLAST
    for (const auto& c : calls) {
      cl_event ev = nullptr;
      cl_event* evp = events ? &ev : nullptr;
      clblast::StatusCode s;
      std::string what;
      if (const Im2col* i = std::get_if<Im2col>(&c)) {
        const Im2colCall& x = i->call;
        what = "Im2col";
        s = clblast::Im2col<float>(clblast::KernelMode::kCrossCorrelation, size_t(x.channels), size_t(x.height),
                                   size_t(x.width), size_t(x.kh), size_t(x.kw), size_t(x.ph), size_t(x.pw),
                                   size_t(x.sh), size_t(x.sw), size_t(x.dh), size_t(x.dw), i->image.mem,
                                   i->image.offset, i->col.mem, i->col.offset, &q, evp);
      } else {
        const Gemm& m = std::get<Gemm>(c);
        const GemmCall& x = m.call;
        what = "Gemm";
        s = clblast::Gemm<float>(clblast::Layout::kRowMajor, tr(x.ta), tr(x.tb), size_t(x.m), size_t(x.n),
                                 size_t(x.k), x.alpha, m.a.mem, m.a.offset, reject ? 0 : size_t(x.lda), m.b.mem,
                                 m.b.offset, size_t(x.ldb), x.beta, m.c.mem, m.c.offset, size_t(x.ldc), &q, evp, temp);
      }
      if (s != clblast::StatusCode::kSuccess) {
        // One warning per process: a library that rejects one call usually rejects many.
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true))
          warn("node " + node_name + ": CLBlast rejected " + what + " (" + status_name(s) +
               "): texplan's kernel runs this node instead, as any other node CLBlast rejects (not reported again)");
        return false;
      }
      if (events && ev) events->push_back(ev);
    }
#else
    return false;
#endif
    for (const Launch& l : after)
      if (cl_int e = launch(q, l, events); e != CL_SUCCESS)
        throw Error("node " + node_name + ": enqueueing kernel " + l.name + ": " + runtime::cl_error_name(e));
    return true;
  }
};

Offloader::Offloader(Mode mode, std::shared_ptr<runtime::Device> device, lower::TuningCache* cache,
                     OffloadOptions options)
    : mode_(mode),
      options_(std::move(options)),
      device_(std::move(device)),
      cache_(cache),
      impl_(std::make_unique<Impl>()) {
  if (mode_ == Mode::None) return;
  if (library_version().empty()) {
    warn(std::string("texplan was built without CLBlast: --offload ") + to_string(mode_) +
         " runs every node on texplan's kernels");
    return;
  }
#ifdef TEXPLAN_HAVE_CLBLAST
  if (!device_ || !cache_) return;
  impl_->key = device_key(*device_);
  const nlohmann::json& params = cache_->entry(kSection, impl_->key)["parameters"];
  if (!params.is_object()) return;
  for (const auto& [kernel, values] : params.items()) {
    std::unordered_map<std::string, size_t> p;
    for (const auto& [k, v] : values.items()) p[k] = v.get<size_t>();
    clblast::StatusCode s = clblast::OverrideParameters(device_->id(), kernel, clblast::Precision::kSingle, p);
    if (s != clblast::StatusCode::kSuccess) {
      warn("tuning cache " + cache_->path() + ": CLBlast refused the " + kernel + " parameters (" + status_name(s) +
           "): its defaults stay");
      continue;
    }
    impl_->note_tuned(kernel);
  }
#endif
}

Offloader::~Offloader() = default;

std::string Offloader::tune(double fraction) {
#ifdef TEXPLAN_HAVE_CLBLAST
  if (!device_ || !cache_) throw Error("CLBlast tuning needs a device and a tuning cache");
  cl_command_queue q = device_->queue();
  nlohmann::json& params = cache_->entry(kSection, device_key(*device_))["parameters"];
  std::ostringstream said;
  // The two kernels every GEMM runs on: the direct one (small and odd
  // shapes, no scratch) and the indirect one (large shapes, padded copies).
  struct Tuner {
    const char* kernel;
    clblast::StatusCode (*run)(cl_command_queue*, size_t, size_t, size_t, double, std::unordered_map<std::string, size_t>&);
    size_t size;
  };
  const Tuner tuners[] = {{"XgemmDirect", clblast::TuneXgemmDirect<float>, 256}, {"Xgemm", clblast::TuneXgemm<float>, 512}};
  for (const Tuner& t : tuners) {
    auto t0 = std::chrono::steady_clock::now();
    std::unordered_map<std::string, size_t> p;
    clblast::StatusCode s = t.run(&q, t.size, t.size, t.size, fraction, p);
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s != clblast::StatusCode::kSuccess) {
      said << t.kernel << ": tuner failed (" << status_name(s) << "); ";
      continue;
    }
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, v] : p) j[k] = v;
    params[t.kernel] = j;
    clblast::OverrideParameters(device_->id(), t.kernel, clblast::Precision::kSingle, p);
    cache_->save();  // a search cut short later (a time limit) keeps this kernel's result
    impl_->note_tuned(t.kernel);
    said << t.kernel << " tuned at " << t.size << "^3 over " << fraction * 100 << "% of its space in " << std::fixed
         << std::setprecision(1) << sec << " s; ";
  }
  cache_->mark_dirty();
  return said.str();
#else
  throw Error("texplan was built without CLBlast: nothing to tune");
#endif
}

void Offloader::partition(const Graph& g, PlanInput& pin) {
  choices_.clear();
  impl_->work.clear();
  choice_of_node_.assign(g.nodes.size(), -1);
  if (mode_ == Mode::None) return;
  const bool have = !library_version().empty();
  // Bytes live at each step, and the peak: the slack im2col may use.
  std::vector<int64_t> live(g.nodes.size() + 1, 0);
  for (const plan::UsageRecord& rec : pin.records) {
    if (rec.first < 0 || rec.first >= int(live.size())) continue;
    live[size_t(rec.first)] += rec.bytes;
    live[size_t(std::min<int>(rec.last + 1, int(live.size()) - 1))] -= rec.bytes;
  }
  for (size_t k = 1; k < live.size(); ++k) live[k] += live[k - 1];
  const int64_t peak = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
  for (int n = 0; n < int(g.nodes.size()); ++n) {
    const Node& node = g.nodes[n];
    if (node.decisions.elided) continue;
    MatchContext cx{pin, std::max<int64_t>(0, peak - live[size_t(n)])};
    Match m = match_node(g, cx, n);
    if (!m.ok && m.reason == "no pattern") continue;
    NodeChoice c;
    c.node = n, c.name = node.name, c.op = node.op_type, c.routine = m.work.routine, c.flops = m.work.flops;
    if (m.ok && !selected(node.name)) {
      c.target = "texplan", c.reason = "not named by --offload-only";
    } else if (!m.ok) {
      c.target = "texplan", c.reason = m.reason;
    } else if (!have) {
      c.target = "texplan", c.reason = "built without CLBlast";
    } else if (impl_->rejected.count(node.name)) {
      c.target = "texplan", c.reason = "CLBlast rejected the call";
    } else {
      c.target = "clblast";
      c.reason = mode_ == Mode::Auto ? "auto: measured when a session prepares" : "pattern table";
      if (mode_ == Mode::Auto && decide(c, measurement(g, node)) && c.target == "texplan") {
        // decided before planning: no scratch for a node texplan keeps
        choice_of_node_[n] = int(choices_.size());
        choices_.push_back(c);
        impl_->work.push_back(std::move(m.work));
        continue;
      }
      auto scratch = [&](const std::string& what, int64_t bytes) {
        if (bytes <= 0) return -1;
        plan::UsageRecord r;
        r.name = node.name + "/" + what;
        r.bytes = bytes;
        r.first = r.last = n;
        r.op = "scratch";
        c.scratch.push_back(int(pin.records.size()));
        pin.records.push_back(r);
        return int(pin.records.size()) - 1;
      };
      m.work.col_record = scratch("im2col", m.work.col_elems * 4);
      int64_t temp = 0;
      for (const auto& call : m.work.calls) {
        const GemmCall* x = std::get_if<GemmCall>(&call);
        if (!x) continue;
        int64_t bytes = 0;
#ifdef TEXPLAN_HAVE_CLBLAST
        if (device_) {
          // Offsets 1: the size when no operand can be used in place, the
          // most CLBlast asks for at these sizes.
          size_t sz = 0;
          cl_command_queue q = device_->queue();
          clblast::StatusCode s = clblast::GemmTempBufferSize<float>(
              clblast::Layout::kRowMajor, tr(x->ta), tr(x->tb), size_t(x->m), size_t(x->n), size_t(x->k), 1,
              size_t(x->lda), 1, size_t(x->ldb), 1, size_t(x->ldc), &q, sz);
          if (s != clblast::StatusCode::kSuccess)
            throw Error("model " + g.model_name + ": node " + node.name + ": CLBlast cannot size its GEMM scratch (" +
                        status_name(s) + ")");
          bytes = int64_t(sz);
        }
#endif
        if (!device_)  // no device to ask: every operand padded to 128, an upper bound
          bytes = 4 * (round_up(x->m, 128) * round_up(x->k, 128) + round_up(x->k, 128) * round_up(x->n, 128) +
                       round_up(x->m, 128) * round_up(x->n, 128));
        temp = std::max(temp, bytes);
      }
      m.work.temp_bytes = temp;
      m.work.temp_record = scratch("gemm_temp", temp);
    }
    choice_of_node_[n] = int(choices_.size());
    choices_.push_back(c);
    impl_->work.push_back(std::move(m.work));
  }
}

nlohmann::json& Offloader::measurement(const Graph& g, const Node& n) {
  std::string sig = signature(g, n);
  if (cache_ && device_) return cache_->entry(kSection, device_key(*device_))["nodes"][sig];
  return impl_->measured[sig];
}

// Auto's decision from a measurement made before (this process or the tuning cache).
bool Offloader::decide(NodeChoice& c, const nlohmann::json& m) {
  if (!m.is_object() || !m.contains("texplan_ms") || !m.contains("clblast_ms")) return false;
  c.texplan_ms = m["texplan_ms"].get<double>(), c.clblast_ms = m["clblast_ms"].get<double>();
  bool library = c.clblast_ms < c.texplan_ms;
  std::ostringstream why;
  why << std::setprecision(3) << "auto: " << (library ? "clblast" : "texplan") << " faster (" << c.clblast_ms << " vs "
      << c.texplan_ms << " ms)";
  c.target = library ? "clblast" : "texplan";
  c.reason = why.str();
  return true;
}

bool Offloader::needs_measurement() const {
  if (mode_ != Mode::Auto) return false;
  for (const NodeChoice& c : choices_)
    if (c.target == "clblast" && c.clblast_ms < 0) return true;
  return false;
}

int64_t Offloader::scratch_bytes() const {
  int64_t sum = 0;
  for (const NodeWork& w : impl_->work)
    sum += (w.col_record >= 0 ? w.col_elems * 4 : 0) + (w.temp_record >= 0 ? w.temp_bytes : 0);
  return sum;
}


namespace {
// Best of `reps` after one warm-up, each waited for: ms.
template <class F>
double time_ms(cl_command_queue q, F&& run, int reps = 3) {
  run();
  clFinish(q);
  double best = INFINITY;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    run();
    clFinish(q);
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}
}  // namespace

std::unique_ptr<runtime::OffloadedNode> Offloader::prepare(const runtime::OffloadRequest& r) {
#ifndef TEXPLAN_HAVE_CLBLAST
  return nullptr;
#else
  if (mode_ == Mode::None || r.node >= int(choice_of_node_.size()) || choice_of_node_[r.node] < 0) return nullptr;
  NodeChoice& c = choices_[size_t(choice_of_node_[r.node])];
  const NodeWork& w = impl_->work[size_t(choice_of_node_[r.node])];
  if (c.target != "clblast") return nullptr;  // kept by the table, a rejection, or auto's measurement
  const Graph& g = r.graph;
  const Node& node = g.nodes[r.node];
  auto out = std::make_unique<ClblastNode>();
  out->node_name = node.name;
  out->reject = options_.reject != OffloadOptions::Reject::None;

  auto mat = [&](const Operand& o) {
    ClblastNode::Mat m;
    Location l = o.col ? r.scratch(w.col_record) : r.locate(o.tensor);
    if (l.byte_offset % 4) throw Error("operand not aligned to 4 bytes");
    m.mem = l.mem;
    m.offset = size_t(l.byte_offset / 4 + o.offset);
    return m;
  };
  for (const auto& call : w.calls) {
    if (const Im2colCall* x = std::get_if<Im2colCall>(&call)) {
      out->calls.push_back(ClblastNode::Im2col{*x, mat(x->image), mat(Operand{-1, true, 0})});
    } else {
      const GemmCall& gc = std::get<GemmCall>(call);
      out->calls.push_back(ClblastNode::Gemm{gc, mat(gc.a), mat(gc.b), mat(gc.c)});
    }
  }
  if (w.temp_record >= 0) {  // Gemm takes its scratch as a whole cl_mem: a sub-buffer over the record
    Location l = r.scratch(w.temp_record);
    cl_buffer_region region{size_t(l.byte_offset), size_t(w.temp_bytes)};
    cl_int s = CL_SUCCESS;
    out->temp = clCreateSubBuffer(l.mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &s);
    if (s != CL_SUCCESS) throw Error("sub-buffer for CLBlast's GEMM scratch: " + std::string(runtime::cl_error_name(s)));
  }
  // texplan's own kernels around the calls: Y = bias/C before, the epilogue after.
  if (w.prefill_src >= 0) {
    lower::NodeBuilder b(r.device, g, node, r.locate);
    Location src = r.locate(w.prefill_src), dst = r.locate(node.outputs[0]);
    lower::launch_copy(b, {src.mem, lower::i32(src.byte_offset / 4)}, {dst.mem, lower::i32(dst.byte_offset / 4)},
                         DataType::Float32,
                         {w.prefill_dims, {lower::contiguous_strides(w.prefill_dims), w.prefill_src_strides}});
    std::swap(out->before, b.launches);
  }
  std::vector<std::string> program = w.epilogue_program;
  if (r.tf32 && g.tensors[size_t(node.outputs[0])].stored_tf32)
    program.push_back(program.empty() ? "RoundTf32 x0" : "RoundTf32 t" + std::to_string(program.size() - 1));
  if (!program.empty()) {
    Node epi;
    epi.name = node.name + "/epilogue";
    epi.op_type = "FusedElementwise";
    epi.inputs = {node.outputs[0]};
    epi.inputs.insert(epi.inputs.end(), w.epilogue_inputs.begin(), w.epilogue_inputs.end());
    epi.outputs = {node.outputs[0]};
    epi.attrs["program"] = Attribute::of_strings(program);
    lower::NodeBuilder b(r.device, g, epi, r.locate);
    if (!lower::lower_node(b)) {
      c.target = "texplan", c.reason = "no texplan FusedElementwise kernel for the epilogue";
      return nullptr;
    }
    std::swap(out->after, b.launches);
  }

  // One call now: builds CLBlast's kernels before the first run and shows a
  // rejection here (the pools hold no live data yet, so writing them is harmless).
  if (options_.reject != OffloadOptions::Reject::Run) {
    bool ok = out->enqueue(r.queue, nullptr);
    clFinish(r.queue);
    if (!ok) {
      c.target = "texplan", c.reason = "CLBlast rejected the call";
      impl_->rejected.insert(node.name);
      return nullptr;
    }
  }
  if (mode_ == Mode::Auto) {
    nlohmann::json& entry = measurement(g, node);
    if (!decide(c, entry)) {
      double lib = time_ms(r.queue, [&] { out->enqueue(r.queue, nullptr); });
      double own = r.builtin.empty() ? 1e30 : time_ms(r.queue, [&] {
        for (const Launch& l : r.builtin) ClblastNode::launch(r.queue, l, nullptr);
      });
      entry = {{"texplan_ms", own}, {"clblast_ms", lib}};
      if (cache_) cache_->mark_dirty();
      decide(c, entry);
    }
    if (c.target != "clblast") return nullptr;
  }
  return out;
#endif
}

nlohmann::json Offloader::report() const {
  nlohmann::json r{{"mode", to_string(mode_)}, {"library", library_version().empty() ? "absent" : library_version()}};
  r["tuned_parameters"] = impl_->tuned_list();
  r["nodes"] = nlohmann::json::array();
  r["offloaded_nodes"] = nlohmann::json::array();
  for (const NodeChoice& c : choices_) {
    nlohmann::json j{{"node", c.name}, {"op", c.op}, {"target", c.target}, {"routine", c.routine},
                     {"reason", c.reason}, {"flops", c.flops}};
    if (c.clblast_ms >= 0) j["clblast_ms"] = c.clblast_ms, j["texplan_ms"] = std::isfinite(c.texplan_ms) ? c.texplan_ms : -1;
    r["nodes"].push_back(j);
    if (c.target == "clblast") r["offloaded_nodes"].push_back(c.name + " (" + c.op + ")");
  }
  r["scratch_bytes"] = scratch_bytes();
  return r;
}

void print_partition(const nlohmann::json& r, std::ostream& out) {
  int offloaded = int(r["offloaded_nodes"].size()), kept = int(r["nodes"].size()) - offloaded;
  out << "offload     " << r["mode"].get<std::string>() << " (" << r["library"].get<std::string>() << "): " << offloaded
      << " node(s) to CLBlast, " << kept << " matched but kept on texplan";
  if (r["scratch_bytes"].get<int64_t>() > 0) out << ", planned scratch " << r["scratch_bytes"].get<int64_t>() << " B";
  if (!r["tuned_parameters"].get<std::string>().empty())
    out << ", tuned " << r["tuned_parameters"].get<std::string>();
  out << "\n";
  for (const auto& n : r["nodes"]) {
    std::string name = n["node"].get<std::string>() + " (" + n["op"].get<std::string>() + ")";
    out << "  " << std::left << std::setw(44) << name << " -> " << std::setw(8) << n["target"].get<std::string>()
        << std::right << " " << n["routine"].get<std::string>() << (n["reason"].get<std::string>().empty() ? "" : "  [")
        << n["reason"].get<std::string>() << (n["reason"].get<std::string>().empty() ? "" : "]") << "\n";
  }
}

}  // namespace texplan::offload
