// Session::Impl's host <-> device transfers: fp16 conversion on the host and on the device, reading a tensor
// back, and CPU steps (inputs read to the host, the reference evaluated, outputs written back).
#include <algorithm>
#include <cmath>

#include "reference/common.h"
#include "reference/reference_ops.h"
#include "runtime/session_impl.h"

namespace texplan::runtime {

std::vector<uint8_t> to_half(const HostTensor& v) {
  std::vector<uint8_t> h(size_t(v.count()) * 2);
  reference::floats_to_halves(v.data<float>(), reinterpret_cast<uint16_t*>(h.data()), size_t(v.count()));
  return h;
}
void from_half(const std::vector<uint8_t>& h, HostTensor& into, int exponent) {
  reference::halves_to_floats(reinterpret_cast<const uint16_t*>(h.data()), into.data<float>(), size_t(into.count()));
  if (exponent == 0) return;
  float* v = into.data<float>();
  for (int64_t i = 0, n = into.count(); i < n; ++i) v[i] = std::ldexp(v[i], -exponent);
}

void Session::Impl::read(int t, HostTensor& into) {
  if (into.bytes.empty()) return;
  lower::Location l = locate(graph, t);
  std::vector<uint8_t> halves(stored_as_half(graph.tensors[t]) ? into.bytes.size() / 2 : 0);
  check(clEnqueueReadBuffer(q, l.mem, CL_TRUE, size_t(l.byte_offset), halves.empty() ? into.bytes.size() : halves.size(),
                            halves.empty() ? into.bytes.data() : halves.data(), 0, nullptr, nullptr),
        model() + ": reading " + graph.tensors[t].name);
  if (!halves.empty()) from_half(halves, into);
}

void Session::Impl::run_on_cpu(const Step& s) {
  const Node& node = graph.nodes[s.node];
  std::vector<HostTensor> held(node.inputs.size());
  std::vector<const HostTensor*> ins;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    int t = node.inputs[k];
    if (t < 0) {
      ins.push_back(nullptr);
    } else if (graph.tensors[root(t)].is_constant) {
      ins.push_back(&graph.tensors[root(t)].value);
    } else {
      held[k] = HostTensor(graph.tensors[t].dtype, graph.tensors[t].shape);
      read(t, held[k]);
      ins.push_back(&held[k]);
    }
  }
  std::vector<HostTensor> outs;
  try {
    outs = reference::evaluate(node, ins);
  } catch (const Error& e) {
    // Its inputs may hold the zeros of an earlier node's faulty index: that
    // node's error comes first.
    if (index_faults) {
      check(clEnqueueReadBuffer(q, index_faults, CL_TRUE, 0, sizeof fault_words, fault_words, 0, nullptr, nullptr),
            model() + ": reading the index fault flags");
      raise_index_fault(fault_words);
    }
    throw Error(at_node(s.node) + " on the CPU: " + reference::failure_reason(node, e.what()));
  }
  for (size_t k = 0; k < node.outputs.size() && k < outs.size(); ++k) {
    int t = node.outputs[k];
    if (t < 0) continue;
    const Tensor& want = graph.tensors[t];
    if (outs[k].dtype != want.dtype || outs[k].shape != want.shape)
      throw Error(at_node(s.node) + ": CPU result " + to_string(outs[k].dtype) + " " + to_string(outs[k].shape) +
                  " does not match tensor " + want.name + " " + to_string(want.dtype) + " " + to_string(want.shape));
    if (outs[k].bytes.empty()) continue;
    lower::Location l = locate(graph, t);
    if (stored_as_half(want)) outs[k].bytes = to_half(outs[k]);
    check(clEnqueueWriteBuffer(q, l.mem, CL_TRUE, size_t(l.byte_offset), outs[k].bytes.size(),
                               outs[k].bytes.data(), 0, nullptr, nullptr),
          at_node(s.node) + ": writing " + want.name);
  }
}

// fp16 at the DeviceTensor boundary: the fp32 elements of `src` from
// element `src_at` into half `dst` from element `dst_at` (`to_half`), or
// half to fp32, on the queue (elementwise.cl); the half side holds values
// times 2^exponent (Tensor::storage_exponent).
void Session::Impl::convert_on_device(cl_mem src, int64_t src_at, cl_mem dst, int64_t dst_at, const Shape& shape,
                                      bool to_half, int exponent, const std::string& what) {
  const cl_int n = lower::i32(element_count(shape)), so = lower::i32(src_at), dso = lower::i32(dst_at);
  const cl_float scale = std::ldexp(1.0f, to_half ? exponent : -exponent);
  cl_int s = CL_SUCCESS;
  cl_kernel k = clCreateKernel(dev->program("elementwise.cl"), to_half ? "f32_to_half" : "half_to_f32", &s);
  check(s, what);
  for (cl_uint a = 0; s == CL_SUCCESS && a < 6; ++a) {
    const std::pair<size_t, const void*> arg[] = {{sizeof src, &src}, {sizeof so, &so},   {sizeof dst, &dst},
                                                  {sizeof dso, &dso}, {sizeof n, &n},     {sizeof scale, &scale}};
    s = clSetKernelArg(k, a, arg[a].first, arg[a].second);
  }
  const size_t global = size_t(lower::ceil_div(std::max(n, 1), 64)) * 64;
  if (s == CL_SUCCESS) s = clEnqueueNDRangeKernel(q, k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr);
  clReleaseKernel(k);
  check(s, what);
}

}  // namespace texplan::runtime
