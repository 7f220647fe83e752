// Times bench/kernels/gemm_probe.cl's builds on product shapes, outside
// texplan's runtime (its own context, buffers and launches), each result
// checked against a product on the host: what a GEMM of given tiles reaches
// on a device, to compare with texplan_conv_bench's times of gemm.cl, and
// gemm.cl's own kernels launched the same way, to tell a slower kernel from
// a slower launch (docs/kernel-choices.md#a-standalone-gemm-faster-than-the-k-groups).
//
//   texplan_gemm_probe [--device gpu|cpu] [--reps N] [--kernel FILE.cl] [--kernels-dir DIR]
//                      [--verbose] [--dump DIR] [--tol T] [--sm90a] SHAPES VARIANTS
//     SHAPES    MxKxN[t],...   ("t": B stored [N,K]; N and K multiples of 4)
//     VARIANTS  TMxTN_WMxWN_kKS[_db][_tTK],...   e.g. 32x64_8x4_k2_db: a 32x64 tile, 8x4 a
//               work-item, two groups over K, two slices in local memory;
//               or gemm.cl:32x32kG / 64x64kG / 32x64kG (G groups: texplan's gemm_kgroups.cl
//               with float4 reads of both operands, as the lowering builds it here) and
//               gemm.cl:TMxTN[v] (gemm.cl's gemm, tiles of 16x16 work-items), built from
//               DIR/common.cl and DIR/gemm.cl or DIR/gemm_kgroups.cl (default: the source tree's src/kernels) with
//               texplan's options, launched here: the kernel without texplan's runtime
// Prints us (median device time of REPS launches) and TFLOP/s per shape and
// variant, WRONG where a result is off; exits 1 if any was, 2 on bad usage.
// --verbose adds NVIDIA's register and stack report per build (stderr);
// --dump writes each build's binary (PTX on NVIDIA) into DIR, named by variant.
// --tol: the error allowed per sqrt(K) relative to the largest output (1e-5:
// fp32 sums; about 2e-3 for kernels that round their inputs to tf32).
// --sm90a (NVIDIA, --kernel builds): Hopper's sm_90a-only instructions
// (wgmma) in a kernel NVIDIA's OpenCL compiler targets at sm_90, which
// ptxas refuses: the kernel is built after texplan's mma_common.cl
// (SHARED_BASE, to_tf32) with -DTEXPLAN_PTX -DSM90A_PATCH, under which it
// writes those instructions as PTX comments "// @@..."; the PTX is then
// uncommented, retargeted to sm_90a and built again as a binary
// (bench/kernels/wgmma_probe.cl), as texplan's Device::program does.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "device/ptx_sm90a.h"

namespace {

struct Shape {
  int M = 0, K = 0, N = 0;
  bool bt = false;
  std::string name;
};
struct Variant {
  int TM = 0, TN = 0, WM = 0, WN = 0, KS = 1, TK = 16;
  bool db = false;
  // texplan's kernels: "kgroups" (gemm_kgroups.cl, KS groups of 64 over a
  // TM x TN tile) or "tiles" (gemm.cl's gemm: 16x16 work-items, WM x WN each, vec).
  std::string texplan;
  bool vec = false;
  std::string name;
};

// gemm.cl's GemmParams (src/kernels/common.cl), as texplan's lowering fills it.
struct GemmParams {
  cl_int ao = 0, bo = 0, co = 0, yo = 0, m = 0, n = 0, k = 0, a_sm = 0, a_sk = 0, b_sk = 0, b_sn = 0, c_sm = 0,
         c_sn = 0, has_c = 0;
  cl_int splits = 1, kslice = 0;
  cl_float alpha = 1, beta = 0;
  cl_int batch[8] = {1, 1, 1, 1, 1, 1, 1, 1}, a_sb[8] = {}, b_sb[8] = {}, c_sb[8] = {};
};

[[noreturn]] void fail(const std::string& what, int code = 1) {
  std::fprintf(stderr, "texplan_gemm_probe: %s\n", what.c_str());
  std::exit(code);
}
void check(cl_int e, const char* what) {
  if (e != CL_SUCCESS) fail(std::string(what) + " failed: OpenCL error " + std::to_string(e));
}
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');) v.push_back(t);
  return v;
}

Shape parse_shape(const std::string& s) {
  Shape sh;
  sh.name = s;
  sh.bt = !s.empty() && s.back() == 't';
  if (std::sscanf(s.c_str(), "%dx%dx%d", &sh.M, &sh.K, &sh.N) != 3 || sh.M < 1 || sh.K < 4 || sh.N < 4 ||
      sh.K % 4 || sh.N % 4)
    fail("shape '" + s + "' is not MxKxN[t] with N and K multiples of 4", 2);
  return sh;
}

Variant parse_variant(const std::string& s) {
  Variant v;
  v.name = s;
  if (s.rfind("gemm.cl:", 0) == 0) {
    const std::string form = s.substr(8);
    int groups = 0;
    // The k-groups forms of lower/conv_select.cpp's kKGroups: 32x32 (4x4 a
    // work-item), 64x64 (8x8), 32x64 (8x4; two slices a group with 2 groups).
    if (std::sscanf(form.c_str(), "%dx%dk%d", &v.TM, &v.TN, &groups) == 3 &&
        ((v.TM == 32 && v.TN == 32) || (v.TM == 64 && v.TN == 64 && groups < 8) ||
         (v.TM == 32 && v.TN == 64 && groups < 8)) &&
        (groups == 2 || groups == 4 || groups == 8)) {
      v.texplan = "kgroups", v.KS = groups;
      v.WM = v.TM == 32 && v.TN == 32 ? 4 : 8, v.WN = v.TN == 64 && v.TM == 64 ? 8 : 4;
      v.db = v.TN == 64 && v.TM == 32 && groups == 2;
      return v;
    }
    if (std::sscanf(form.c_str(), "%dx%d", &v.TM, &v.TN) == 2 && v.TM % 16 == 0 && v.TN % 16 == 0 && v.TM >= 16 &&
        v.TN >= 16) {
      v.texplan = "tiles", v.vec = form.back() == 'v', v.WM = v.TM / 16, v.WN = v.TN / 16;
      if (!v.vec || (v.WM % 4 == 0 && v.WN % 4 == 0)) return v;
    }
    fail("variant '" + s + "': gemm.cl:32x32kG (G 2, 4, 8), gemm.cl:64x64kG, gemm.cl:32x64kG (G 2, 4) or gemm.cl:TMxTN[v]", 2);
  }
  if (std::sscanf(s.c_str(), "%dx%d_%dx%d_k%d", &v.TM, &v.TN, &v.WM, &v.WN, &v.KS) != 5)
    fail("variant '" + s + "' is not TMxTN_WMxWN_kKS[_db][_tTK]", 2);
  v.db = s.find("_db") != std::string::npos;
  if (size_t t = s.find("_t"); t != std::string::npos) v.TK = std::atoi(s.c_str() + t + 2);
  const int g = (v.TM / std::max(v.WM, 1)) * (v.TN / std::max(v.WN, 1));
  if (v.WM % 4 || v.WN % 4 || v.TM % v.WM || v.TN % v.WN || v.KS < 1 || (v.KS & (v.KS - 1)) || v.TK % 4 ||
      (v.TM * v.TK / 4) % g || (v.TN * v.TK / 4) % g)
    fail("variant '" + s + "': WM, WN multiples of 4 dividing the tile, KS a power of two, whole float4s a work-item", 2);
  return v;
}

cl_device_id find_device(bool gpu) {
  cl_uint np = 0;
  check(clGetPlatformIDs(0, nullptr, &np), "clGetPlatformIDs");
  std::vector<cl_platform_id> ps(np);
  check(clGetPlatformIDs(np, ps.data(), nullptr), "clGetPlatformIDs");
  for (cl_platform_id p : ps) {
    cl_device_id d = nullptr;
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, gpu ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_CPU, 1, &d, &nd) == CL_SUCCESS && nd) return d;
  }
  fail(std::string("no OpenCL ") + (gpu ? "GPU" : "CPU") + " device");
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "gpu", kernel_path = TEXPLAN_GEMM_PROBE_CL, kernels_dir = TEXPLAN_KERNELS_DIR;
  int reps = 20;
  bool verbose = false;
  double tol = 1e-5;
  bool sm90a = false;
  std::string dump_dir;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(a + " needs a value", 2);
      return argv[++i];
    };
    if (a == "--device") device = value();
    else if (a == "--reps") reps = std::max(1, std::atoi(value().c_str()));
    else if (a == "--kernel") kernel_path = value();
    else if (a == "--kernels-dir") kernels_dir = value();
    else if (a == "--verbose") verbose = true;
    else if (a == "--dump") dump_dir = value();
    else if (a == "--tol") tol = std::atof(value().c_str());
    else if (a == "--sm90a") sm90a = true;
    else positional.push_back(a);
  }
  if (positional.size() != 2 || (device != "gpu" && device != "cpu"))
    fail("usage: texplan_gemm_probe [--device gpu|cpu] [--reps N] [--kernel FILE.cl] [--kernels-dir DIR] [--verbose] "
         "[--dump DIR] [--tol T] [--sm90a] SHAPES VARIANTS",
         2);
  auto read = [](const std::string& path) {
    std::ifstream f(path);
    if (!f) fail("cannot read " + path);
    std::stringstream text;
    text << f.rdbuf();
    return text.str();
  };
  std::vector<Shape> shapes;
  for (const std::string& s : split(positional[0])) shapes.push_back(parse_shape(s));
  std::vector<Variant> variants;
  for (const std::string& s : split(positional[1])) variants.push_back(parse_variant(s));
  const std::string source = (sm90a ? read(kernels_dir + "/mma_common.cl") + "\n" : std::string()) + read(kernel_path);
  // texplan's files, common.cl prepended as Device::program does: gemm.cl's
  // tiles, gemm_kgroups.cl's k-groups.
  std::string tiles_source, kgroups_source;
  for (const Variant& v : variants) {
    if (v.texplan == "tiles" && tiles_source.empty())
      tiles_source = read(kernels_dir + "/common.cl") + "\n" + read(kernels_dir + "/gemm.cl");
    if (v.texplan == "kgroups" && kgroups_source.empty())
      kgroups_source = read(kernels_dir + "/common.cl") + "\n" + read(kernels_dir + "/gemm_kgroups.cl");
  }

  cl_device_id dev = find_device(device == "gpu");
  char name[256] = {};
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, nullptr);
  std::printf("device %s, median of %d launches, us (TFLOP/s)\n", name, reps);
  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
  check(err, "clCreateContext");
  cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
  check(err, "clCreateCommandQueue");
  std::printf("%-22s", "shape");
  for (const Variant& v : variants) std::printf(" %18s", v.name.c_str());
  std::printf("\n");

  // Device::program asks for IEEE divide and sqrt where the device offers them.
  cl_device_fp_config fp = 0;
  clGetDeviceInfo(dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, nullptr);
  const std::string correctly_rounded =
      (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) ? "-cl-fp32-correctly-rounded-divide-sqrt " : "";

  // One build per variant and B layout, built on first use.
  std::vector<cl_kernel> kernels(variants.size() * 2, nullptr);
  auto kernel_for = [&](size_t vi, bool bt) {
    cl_kernel& k = kernels[vi * 2 + bt];
    if (k) return k;
    const Variant& v = variants[vi];
    // texplan's kernels with the options Device::program (src/device/device.cpp)
    // gives them; the k-groups also take the float4 reads of both operands.
    const std::string texplan_options = "-cl-std=CL1.2 -cl-mad-enable " + correctly_rounded;
    const std::string opts =
        std::string(verbose && device == "gpu" ? "-cl-nv-verbose " : "") +
        (v.texplan == "kgroups" ? texplan_options + "-DKGROUPS=" + std::to_string(v.KS) +
                                      " -DKG_TM=" + std::to_string(v.TM) + " -DKG_TN=" + std::to_string(v.TN) +
                                      " -DKG_WM=" + std::to_string(v.WM) + " -DKG_WN=" + std::to_string(v.WN) +
                                      (v.db ? " -DKG_DB" : "") + " -DKG_A4" + (bt ? " -DKG_B4K" : " -DKG_B4N")
         : v.texplan == "tiles" ? texplan_options + "-DWPTM=" + std::to_string(v.WM) +
                                      " -DWPTN=" + std::to_string(v.WN) + (v.vec ? " -DVEC" : "")
                                : "-cl-mad-enable -DTM=" + std::to_string(v.TM) + " -DTN=" + std::to_string(v.TN) +
                                      " -DWM=" + std::to_string(v.WM) + " -DWN=" + std::to_string(v.WN) +
                                      " -DKS=" + std::to_string(v.KS) + " -DTK=" + std::to_string(v.TK) +
                                      (v.db ? " -DDB" : "") + (bt ? " -DBT" : ""));
    const bool patch = sm90a && v.texplan.empty();
    const std::string build_opts = opts + (patch ? " -DTEXPLAN_PTX -DSM90A_PATCH" : "");
    const char* p = (v.texplan == "tiles" ? tiles_source : v.texplan == "kgroups" ? kgroups_source : source).c_str();
    cl_program prog = clCreateProgramWithSource(ctx, 1, &p, nullptr, &err);
    check(err, "clCreateProgramWithSource");
    auto build_log = [&](cl_program pr) {
      size_t n = 0;
      clGetProgramBuildInfo(pr, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
      std::string text(n, '\0');
      clGetProgramBuildInfo(pr, dev, CL_PROGRAM_BUILD_LOG, n, text.data(), nullptr);
      return text;
    };
    cl_int built = clBuildProgram(prog, 1, &dev, build_opts.c_str(), nullptr, nullptr);
    std::string log = build_log(prog);
    if (built != CL_SUCCESS) fail(v.name + ": build failed (" + build_opts + "):\n" + log);
    if (patch) {
      size_t size = 0;
      clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr);
      std::string ptx(size, '\0');
      char* data = ptx.data();
      clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr);
      ptx.resize(std::strlen(ptx.c_str()));
      size_t patched = 0;
      const std::optional<std::string> retargeted = texplan::ptx_for_sm90a(ptx, &patched);
      if (!retargeted) fail(v.name + ": --sm90a: no sm_90 target or no // @@ lines in the PTX");
      ptx = *retargeted;
      const size_t ver = ptx.find(".version");
      std::fprintf(stderr, "%s: %zu lines uncommented, %s\n", v.name.c_str(), patched,
                   ptx.substr(ver, ptx.find('\n', ver) - ver).c_str());
      clReleaseProgram(prog);
      const unsigned char* bin = reinterpret_cast<const unsigned char*>(ptx.c_str());
      const size_t bin_size = ptx.size() + 1;
      cl_int status = CL_SUCCESS;
      prog = clCreateProgramWithBinary(ctx, 1, &dev, &bin_size, &bin, &status, &err);
      check(err, "clCreateProgramWithBinary");
      built = clBuildProgram(prog, 1, &dev, verbose ? "-cl-nv-verbose" : "", nullptr, nullptr);
      log = build_log(prog);
      if (built != CL_SUCCESS) fail(v.name + ": the sm_90a PTX did not build:\n" + log);
    }
    if (verbose) {
      std::stringstream ls(log);
      for (std::string line; std::getline(ls, line);)
        if (line.find("registers") != std::string::npos || line.find("stack") != std::string::npos)
          std::fprintf(stderr, "%s%s: %s\n", v.name.c_str(), bt ? " t" : "", line.c_str());
    }
    if (!dump_dir.empty()) {
      size_t size = 0;
      clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr);
      std::vector<unsigned char> binary(size);
      unsigned char* data = binary.data();
      clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr);
      std::string name = v.name + (bt ? "_t" : "");
      std::replace(name.begin(), name.end(), ':', '_');
      std::ofstream(dump_dir + "/" + name + ".bin", std::ios::binary).write(reinterpret_cast<char*>(data), long(size));
    }
    k = clCreateKernel(prog, v.texplan == "kgroups" ? "gemm_kgroups" : v.texplan == "tiles" ? "gemm" : "probe", &err);
    check(err, "clCreateKernel");
    return k;
  };

  bool wrong = false;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const Shape& s : shapes) {
    std::vector<float> A(size_t(s.M) * s.K), B(size_t(s.K) * s.N), want(size_t(s.M) * s.N, 0.0f), got(want.size());
    for (float& x : A) x = u(rng);
    for (float& x : B) x = u(rng);
    for (int m = 0; m < s.M; ++m)
      for (int k = 0; k < s.K; ++k) {
        const double a = A[size_t(m) * s.K + k];
        for (int n = 0; n < s.N; ++n)
          want[size_t(m) * s.N + n] += float(a * (s.bt ? B[size_t(n) * s.K + k] : B[size_t(k) * s.N + n]));
      }
    double scale = 0;
    for (float w : want) scale = std::max(scale, double(std::fabs(w)));
    cl_mem dA = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, A.size() * 4, A.data(), &err);
    check(err, "clCreateBuffer");
    cl_mem dB = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, B.size() * 4, B.data(), &err);
    check(err, "clCreateBuffer");
    cl_mem dY = clCreateBuffer(ctx, CL_MEM_READ_WRITE, got.size() * 4, nullptr, &err);
    check(err, "clCreateBuffer");
    std::printf("%-22s", s.name.c_str());
    std::fflush(stdout);
    for (size_t vi = 0; vi < variants.size(); ++vi) {
      const Variant& v = variants[vi];
      cl_kernel k = kernel_for(vi, v.texplan != "tiles" && s.bt);  // B's layout is a build option of both
      const size_t tiles_n = size_t((s.N + v.TN - 1) / v.TN), tiles_m = size_t((s.M + v.TM - 1) / v.TM);
      size_t local[3] = {1, 1, 1}, global[3] = {1, 1, 1};
      if (v.texplan.empty()) {
        check(clSetKernelArg(k, 0, sizeof dA, &dA), "clSetKernelArg");
        check(clSetKernelArg(k, 1, sizeof dB, &dB), "clSetKernelArg");
        check(clSetKernelArg(k, 2, sizeof dY, &dY), "clSetKernelArg");
        check(clSetKernelArg(k, 3, sizeof s.M, &s.M), "clSetKernelArg");
        check(clSetKernelArg(k, 4, sizeof s.N, &s.N), "clSetKernelArg");
        check(clSetKernelArg(k, 5, sizeof s.K, &s.K), "clSetKernelArg");
        const size_t g = size_t(v.TM / v.WM) * size_t(v.TN / v.WN);
        local[0] = g, local[1] = size_t(v.KS);
        global[0] = tiles_n * g, global[1] = tiles_m * v.KS;
      } else {
        GemmParams gp;
        gp.m = s.M, gp.n = s.N, gp.k = s.K, gp.a_sm = s.K, gp.a_sk = 1;
        gp.b_sk = s.bt ? 1 : s.N, gp.b_sn = s.bt ? s.K : 1;
        check(clSetKernelArg(k, 0, sizeof dA, &dA), "clSetKernelArg");
        check(clSetKernelArg(k, 1, sizeof dB, &dB), "clSetKernelArg");
        check(clSetKernelArg(k, 2, sizeof dY, &dY), "clSetKernelArg");  // C, unread (has_c 0)
        check(clSetKernelArg(k, 3, sizeof dY, &dY), "clSetKernelArg");
        check(clSetKernelArg(k, 4, sizeof gp, &gp), "clSetKernelArg");
        const bool kgroups = v.texplan == "kgroups";
        local[0] = kgroups ? 64 : 16, local[1] = kgroups ? size_t(v.KS) : 16;
        global[0] = tiles_n * local[0], global[1] = tiles_m * local[1];
      }
      std::vector<double> us;
      for (int r = 0; r < reps + 2; ++r) {  // two warm-up launches
        cl_event ev = nullptr;
        check(clEnqueueNDRangeKernel(q, k, 3, nullptr, global, local, 0, nullptr, &ev), "clEnqueueNDRangeKernel");
        check(clWaitForEvents(1, &ev), "clWaitForEvents");
        cl_ulong t0 = 0, t1 = 0;
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, nullptr);
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr);
        clReleaseEvent(ev);
        if (r >= 2) us.push_back(double(t1 - t0) * 1e-3);
      }
      check(clEnqueueReadBuffer(q, dY, CL_TRUE, 0, got.size() * 4, got.data(), 0, nullptr, nullptr), "read");
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, double(std::fabs(got[i] - want[i])));
      std::sort(us.begin(), us.end());
      const double median = us[us.size() / 2], tflops = 2.0 * s.M * s.K * s.N / median * 1e-6;
      // fp32 sums of K terms of magnitude <= 1: errors grow about as sqrt(K).
      if (!(worst <= tol * std::sqrt(double(s.K)) * std::max(scale, 1.0))) {
        wrong = true;
        std::printf(" %11s(%5.1f)", "WRONG", tflops);
      } else {
        std::printf(" %11.1f(%5.1f)", median, tflops);
      }
      std::fflush(stdout);
    }
    std::printf("\n");
    clReleaseMemObject(dA);
    clReleaseMemObject(dB);
    clReleaseMemObject(dY);
  }
  return wrong ? 1 : 0;
}
