// OpenCL devices through the ICD loader: listing, selection by spec, the
// planner's DeviceProfile read from the device, and per device one context,
// one in-order queue and a cache of built programs shared by every Session,
// kept on disk too (program_cache.h) so that the next process skips the compiler.
//
//   for (const DeviceInfo& d : list_devices()) std::cout << d.name << "\n";
//   std::shared_ptr<Device> dev = open_device("pocl");   // or "gpu", "opencl:1"
//   plan::DeviceProfile p = dev->info().profile;
#pragma once
#include <CL/cl.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "plan/memory_plan.h"

namespace texplan::runtime {

class ProgramCache;

// How a Device is opened.
struct DeviceOptions {
  // Built programs kept on disk, per device and source, and built from their
  // binaries by the next process (docs/cli.md#program-cache).
  bool program_cache = true;
  // Their folder; empty: $TEXPLAN_CACHE_DIR, else
  // $XDG_CACHE_HOME/texplan/programs, else $HOME/.cache/texplan/programs.
  std::string program_cache_dir;
  // Beyond this many bytes in the folder, the least recently used files go.
  int64_t program_cache_max_bytes = int64_t(512) << 20;
};

// Where a Device's programs came from, since it was opened.
struct ProgramStats {
  int compiled = 0;    // from source
  int from_cache = 0;  // from a binary in the program cache
  int rejected = 0;    // cached binaries the driver refused (then compiled)
  std::string cache_dir;      // empty: no program cache
  std::string cache_problem;  // the first failure to create or write it ("": none)
};

struct DeviceInfo {
  int index = 0;  // position in list_devices(): the N of "opencl:N"
  std::string platform, name, vendor, version, driver;
  std::string type;  // "gpu", "cpu", "accelerator", "other"
  int compute_units = 0;
  int64_t local_mem_bytes = 0;  // per work-group (CL_DEVICE_LOCAL_MEM_SIZE)
  int64_t max_group_items = 0;  // work-items per work-group (CL_DEVICE_MAX_WORK_GROUP_SIZE)
  // Floats per native SIMD register (CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT):
  // PoCL says 8 on AVX2 CPUs, 16 with AVX-512; the CPU lowerings size their
  // register blocks by it.
  int native_float_width = 1;
  std::vector<std::string> extensions;
  // How a persistent kernel's grid barrier makes one work-group's writes
  // visible to the others (lower/recurrent.cpp): OpenCL C 3.0's
  // atomic_work_item_fence at memory_scope_device where the device lists it
  // (CL_DEVICE_ATOMIC_FENCE_CAPABILITIES), else on NVIDIA's driver PTX's
  // membar.gl inline; both measured right on an H100, OpenCL 1.2's mem_fence
  // not (docs/performance.md#a-persistent-kernel-measured-before-it-is-built-2026-12-05).
  enum class GridFence { None, OpenClDeviceScope, NvidiaPtx };
  GridFence grid_fence = GridFence::None;
  plan::DeviceProfile profile;
};

// Every device of every platform, platforms in ICD order.
std::vector<DeviceInfo> list_devices();

// "UNKNOWN(-9999)" style names for OpenCL status codes: "CL_OUT_OF_RESOURCES".
const char* cl_error_name(cl_int status);

class Device {
 public:
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceInfo& info() const { return info_; }
  cl_device_id id() const { return id_; }
  cl_context context() const { return context_; }
  cl_command_queue queue() const { return queue_; }
  // A second in-order queue with CL_QUEUE_PROFILING_ENABLE, created on first
  // use, for profiled runs (event timestamps); the plain queue stays lean.
  cl_command_queue profiling_queue();

  // The program built from src/kernels/<file> with extra build options
  // `defines` (e.g. "-DWPT=2"), built on first use and kept for the life of
  // the Device; from the program cache's binary where it has one. `prelude`
  // is OpenCL C placed before the file (generated code, e.g. a fused
  // epilogue). Throws Error with the build log on failure.
  cl_program program(const std::string& file, const std::string& defines = "", const std::string& prelude = "");
  ProgramStats program_stats() const;
  // Writes the programs compiled since the last call into the program
  // cache. Sessions call it after their first run: PoCL's binary of a
  // program is fixed when first asked for, and after the kernels' first
  // launches it holds the machine code PoCL generated for them.
  void store_programs();

 private:
  friend std::shared_ptr<Device> open_device(const std::string& spec, const DeviceOptions& options);
  friend std::shared_ptr<Device> open_new_device(const std::string& spec, const DeviceOptions& options);
  Device(cl_device_id id, DeviceInfo info, const DeviceOptions& options);

  DeviceInfo info_;
  cl_device_id id_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  cl_command_queue profiling_queue_ = nullptr;
  mutable std::mutex programs_mutex_;
  std::vector<std::pair<std::string, cl_program>> programs_;
  std::unique_ptr<ProgramCache> cache_;  // null: no program cache
  ProgramStats stats_;
  struct Unstored;  // a program compiled here and its cache key
  std::vector<Unstored> unstored_;
};

// While one lives (on this thread; scopes nest, the innermost counts),
// Device::program tells it about every program it builds: `on_build(program,
// origin, false)` before and `(program, origin, true)` after, failed builds
// included (`program` is the kernel file and its defines; `origin` says
// whether the compiler runs or the program cache's binary is loaded, and a
// binary the driver refuses is followed by a build from source). With
// `on_message` the compiler's warnings (the build log, and what the driver
// prints to stderr while it builds, which is captured for the build) go there
// line by line; without it, and outside any scope, kernels build with -w:
// warnings in texplan's own kernels are nothing a user can act on. A failed
// build's log is in the Error it throws either way.
//
// For kernel work (texplan_conv_bench --build-log, --build-dump) a scope can
// also ask for every build's log on stderr, with NVIDIA's -cl-nv-verbose
// (ptxas: registers and spill bytes per kernel; the program cache is not
// read then, so that the compiler runs), and for every built
// program's binary (NVIDIA: PTX text) in a folder, as DIR/<n>.bin, named on
// stderr. An inner scope that asks for neither keeps its outer scope's.
struct KernelBuildDiagnostics {
  bool log = false;
  std::string dump_dir;  // empty: no dump
};

enum class ProgramOrigin { Source, Cache };

class KernelBuildScope {
 public:
  using BuildCallback = std::function<void(const std::string& program, ProgramOrigin origin, bool done)>;
  using MessageSink = std::function<void(const std::string& program, const std::string& line)>;
  KernelBuildScope(BuildCallback on_build, MessageSink on_message, KernelBuildDiagnostics diagnostics = {});
  ~KernelBuildScope();
  KernelBuildScope(const KernelBuildScope&) = delete;
  KernelBuildScope& operator=(const KernelBuildScope&) = delete;

 private:
  friend class Device;
  BuildCallback on_build_;
  MessageSink on_message_;
  KernelBuildScope* outer_;
  KernelBuildDiagnostics diagnostics_;
};

// Selects a device: "pocl" (the PoCL CPU device), "gpu" (first GPU of any
// platform), "opencl:N" (Nth entry of list_devices()). Returns the same
// Device for the same physical device and options for the life of the
// process. Throws Error listing the devices that exist when the spec matches
// none.
std::shared_ptr<Device> open_device(const std::string& spec = "pocl", const DeviceOptions& options = {});
// A Device of its own (context, queue, programs), released with its last
// owner: for a caller whose programs must not meet others' (tests).
std::shared_ptr<Device> open_new_device(const std::string& spec, const DeviceOptions& options = {});

// The planner's profile for a target: a built-in profile by name ("pocl",
// "h100", "adreno") or a JSON path (plan::DeviceProfile::load), for devices
// not at hand; or "opencl": read off the default OpenCL device (the first
// GPU, else PoCL).
plan::DeviceProfile load_profile(const std::string& target);

// Whether kernels for `dev` may hold inline PTX (-DTEXPLAN_PTX): NVIDIA's own
// OpenCL driver only (PoCL's CUDA device has NVIDIA's vendor name but another
// compiler, without inline PTX).
bool accepts_inline_ptx(const Device& dev);
// Whether `dev` runs Precision::Tf32 (runtime/session.h; else a session
// asking for it runs fp32, unless KernelChoice::tf32_emulation): an NVIDIA
// GPU of compute capability 8.0+ under NVIDIA's driver.
bool tf32_supported(const Device& dev);
// Whether `dev` runs Hopper's sm_90a instructions (wgmma) in programs built
// with -DSM90A_PATCH (Device::program retargets their PTX): an NVIDIA GPU of
// compute capability 9.0 under NVIDIA's driver.
bool sm90a_supported(const Device& dev);

}  // namespace texplan::runtime
