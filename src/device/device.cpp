#include "device/device.h"

#include <CL/cl_ext.h>
#include <sys/resource.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>

#include "device/program_cache.h"
#include "device/ptx_sm90a.h"
#include "kernels/kernel_sources.h"

// cl_khr_image2d_from_buffer queries (OpenCL 2.0 core names, same values).
#ifndef CL_DEVICE_IMAGE_PITCH_ALIGNMENT_KHR
#define CL_DEVICE_IMAGE_PITCH_ALIGNMENT_KHR 0x104A
#define CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT_KHR 0x104B
#endif

namespace texplan::runtime {

const char* cl_error_name(cl_int s) {
  switch (s) {
#define E(x) case x: return #x;
    E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
    E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_MEM_COPY_OVERLAP) E(CL_IMAGE_FORMAT_MISMATCH)
    E(CL_IMAGE_FORMAT_NOT_SUPPORTED) E(CL_BUILD_PROGRAM_FAILURE) E(CL_MAP_FAILURE)
    E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    E(CL_COMPILE_PROGRAM_FAILURE) E(CL_LINKER_NOT_AVAILABLE) E(CL_LINK_PROGRAM_FAILURE)
    E(CL_DEVICE_PARTITION_FAILED) E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) E(CL_INVALID_VALUE)
    E(CL_INVALID_DEVICE_TYPE) E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
    E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR)
    E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) E(CL_INVALID_IMAGE_SIZE)
    E(CL_INVALID_SAMPLER) E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM)
    E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL_DEFINITION)
    E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE)
    E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE)
    E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT_WAIT_LIST)
    E(CL_INVALID_EVENT) E(CL_INVALID_OPERATION) E(CL_INVALID_GL_OBJECT) E(CL_INVALID_BUFFER_SIZE)
    E(CL_INVALID_MIP_LEVEL) E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_PROPERTY)
    E(CL_INVALID_IMAGE_DESCRIPTOR) E(CL_INVALID_COMPILER_OPTIONS) E(CL_INVALID_LINKER_OPTIONS)
    E(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef E
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL driver registered with the ICD loader)";
    default: return "CL_UNKNOWN_ERROR";
  }
}

namespace {

void check(cl_int s, const std::string& what) {
  if (s != CL_SUCCESS) throw Error(what + ": " + cl_error_name(s));
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  check(clGetPlatformInfo(p, what, 0, nullptr, &n), "clGetPlatformInfo");
  std::string s(n, '\0');
  check(clGetPlatformInfo(p, what, n, s.data(), nullptr), "clGetPlatformInfo");
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  check(clGetDeviceInfo(d, what, 0, nullptr, &n), "clGetDeviceInfo");
  std::string s(n, '\0');
  check(clGetDeviceInfo(d, what, n, s.data(), nullptr), "clGetDeviceInfo");
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  check(clGetDeviceInfo(d, what, sizeof v, &v, nullptr), "clGetDeviceInfo");
  return v;
}

// PoCL's worker threads pinned to their cores (POCL_AFFINITY=1): the
// threads woken for each kernel otherwise move between cores
// (docs/kernel-choices.md#pocl-threads-pinned-to-their-cores). PoCL reads
// the variable when its platform loads, so it is
// set before the first OpenCL call, and only where the user has not set it.
void pin_pocl_threads() {
  static const bool pinned = setenv("POCL_AFFINITY", "1", 0) == 0;
  (void)pinned;
}

// All devices in list order: platforms as the ICD loader returns them, then
// each platform's devices.
std::vector<cl_device_id> all_device_ids() {
  pin_pocl_threads();
  cl_uint np = 0;
  cl_int s = clGetPlatformIDs(0, nullptr, &np);
  if (s == -1001 || np == 0) return {};  // no ICD registered: no devices, not an error
  check(s, "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(np);
  check(clGetPlatformIDs(np, platforms.data(), nullptr), "clGetPlatformIDs");
  std::vector<cl_device_id> ids;
  for (cl_platform_id p : platforms) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> d(nd);
    check(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, d.data(), nullptr), "clGetDeviceIDs");
    ids.insert(ids.end(), d.begin(), d.end());
  }
  return ids;
}

DeviceInfo describe(cl_device_id d, int index) {
  DeviceInfo i;
  i.index = index;
  auto platform = device_value<cl_platform_id>(d, CL_DEVICE_PLATFORM);
  i.platform = platform_string(platform, CL_PLATFORM_NAME);
  i.name = device_string(d, CL_DEVICE_NAME);
  i.vendor = device_string(d, CL_DEVICE_VENDOR);
  i.version = device_string(d, CL_DEVICE_VERSION);
  i.driver = device_string(d, CL_DRIVER_VERSION);
  auto type = device_value<cl_device_type>(d, CL_DEVICE_TYPE);
  i.type = type & CL_DEVICE_TYPE_GPU ? "gpu"
           : type & CL_DEVICE_TYPE_CPU ? "cpu"
           : type & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator"
                                               : "other";
  i.compute_units = int(device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS));
  i.local_mem_bytes = int64_t(device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE));
  i.max_group_items = int64_t(device_value<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  i.native_float_width = std::max(1, int(device_value<cl_uint>(d, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT)));
  {
    // OpenCL 3.0's names (this build targets the 1.2 API): a 1.2 device
    // answers CL_INVALID_VALUE, and has none.
    constexpr cl_device_info kAtomicFenceCapabilities = 0x1064;  // CL_DEVICE_ATOMIC_FENCE_CAPABILITIES
    constexpr cl_bitfield kAtomicScopeDevice = 1 << 5;           // CL_DEVICE_ATOMIC_SCOPE_DEVICE
    cl_bitfield fences = 0;
    if (clGetDeviceInfo(d, kAtomicFenceCapabilities, sizeof fences, &fences, nullptr) == CL_SUCCESS &&
        (fences & kAtomicScopeDevice) != 0)
      i.grid_fence = DeviceInfo::GridFence::OpenClDeviceScope;
    else if (i.vendor.find("NVIDIA") != std::string::npos)
      i.grid_fence = DeviceInfo::GridFence::NvidiaPtx;
  }
  std::istringstream ext(device_string(d, CL_DEVICE_EXTENSIONS));
  for (std::string e; ext >> e;) i.extensions.push_back(e);
  auto has = [&](const std::string& e) {
    for (auto& x : i.extensions)
      if (x == e) return true;
    return false;
  };

  plan::DeviceProfile& p = i.profile;
  p.name = i.name;
  p.source = "clGetDeviceInfo: " + i.platform + " / " + i.name + " / " + i.driver;
  p.device_type = i.type;
  p.image_support = device_value<cl_bool>(d, CL_DEVICE_IMAGE_SUPPORT) == CL_TRUE;
  if (p.image_support) {
    p.max_image2d_width = int64_t(device_value<size_t>(d, CL_DEVICE_IMAGE2D_MAX_WIDTH));
    p.max_image2d_height = int64_t(device_value<size_t>(d, CL_DEVICE_IMAGE2D_MAX_HEIGHT));
    p.max_image1d_buffer_pixels = int64_t(device_value<size_t>(d, CL_DEVICE_IMAGE_MAX_BUFFER_SIZE));
  } else {
    p.max_image2d_width = p.max_image2d_height = p.max_image1d_buffer_pixels = 0;
  }
  p.image2d_from_buffer = p.image_support && has("cl_khr_image2d_from_buffer");
  if (p.image2d_from_buffer) {
    // Both are reported in pixels; the planner wants bytes of RGBA fp32 pixels.
    const int64_t rgba_f32 = 16;
    p.image_pitch_alignment = rgba_f32 * device_value<cl_uint>(d, CL_DEVICE_IMAGE_PITCH_ALIGNMENT_KHR);
    p.image_base_address_alignment =
        rgba_f32 * device_value<cl_uint>(d, CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT_KHR);
  } else {
    p.image_pitch_alignment = p.image_base_address_alignment = 0;
  }
  p.mem_base_addr_align = int64_t(device_value<cl_uint>(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN)) / 8;
  p.fp16 = has("cl_khr_fp16");
  p.global_mem_bytes = int64_t(device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE));
  p.max_alloc_bytes = int64_t(device_value<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE));
  // Textures pay where images share the arena on a GPU; on CPUs (PoCL)
  // images are emulated in software (docs/kernel-choices.md#textures-on-cpu-devices).
  p.auto_textures = i.type == "gpu" && p.image2d_from_buffer ? "views" : "none";
  return i;
}

// The devices in `ids`: the very list a match was sought in, so the message
// cannot contradict it (a second query may find what a first, short of
// memory, did not).
std::string device_list_text(const std::vector<cl_device_id>& ids) {
  if (ids.empty()) {
    std::string why = "no OpenCL devices found (is an ICD such as pocl-opencl-icd installed?";
    struct rlimit as{};
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
      why += " With the address space limited to " + std::to_string(as.rlim_cur >> 20) +
             " MiB (ulimit -v), an OpenCL driver may have failed to load for want of memory.";
    return why + ")";
  }
  std::ostringstream o;
  o << "devices:";
  for (size_t k = 0; k < ids.size(); ++k) {
    const DeviceInfo d = describe(ids[k], int(k));
    o << " [opencl:" << d.index << "] " << d.platform << " / " << d.name << " (" << d.type << ");";
  }
  return o.str();
}

}  // namespace

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> out;
  auto ids = all_device_ids();
  for (size_t k = 0; k < ids.size(); ++k) out.push_back(describe(ids[k], int(k)));
  return out;
}

// Complete before the constructor: clang instantiates the member vector's
// destructor there.
struct Device::Unstored {
  cl_program program;
  ProgramCache::Key key;
};

Device::Device(cl_device_id id, DeviceInfo info, const DeviceOptions& options) : info_(std::move(info)), id_(id) {
  cl_int s = CL_SUCCESS;
  context_ = clCreateContext(nullptr, 1, &id_, nullptr, nullptr, &s);
  check(s, "clCreateContext on " + info_.name);
  queue_ = clCreateCommandQueue(context_, id_, 0, &s);  // in-order
  check(s, "clCreateCommandQueue on " + info_.name);
  std::filesystem::path dir = options.program_cache_dir;
  if (dir.empty()) dir = default_program_cache_dir();
  if (options.program_cache && !dir.empty()) {
    // What a binary depends on besides its source and options: the platform
    // (PoCL's version names its LLVM), the device and the driver.
    const std::string platform_version =
        platform_string(device_value<cl_platform_id>(id_, CL_DEVICE_PLATFORM), CL_PLATFORM_VERSION);
    const std::string identity = info_.platform + "\n" + platform_version + "\n" + info_.name + "\n" + info_.vendor +
                                 "\n" + info_.driver + "\n" + info_.version;
    cache_ = std::make_unique<ProgramCache>(dir, identity, options.program_cache_max_bytes);
    stats_.cache_dir = dir.string();
  }
}

ProgramStats Device::program_stats() const {
  std::lock_guard<std::mutex> lock(programs_mutex_);
  ProgramStats s = stats_;
  if (cache_) s.cache_problem = cache_->problem();
  return s;
}

cl_command_queue Device::profiling_queue() {
  std::lock_guard<std::mutex> lock(programs_mutex_);
  if (!profiling_queue_) {
    cl_int s = CL_SUCCESS;
    profiling_queue_ = clCreateCommandQueue(context_, id_, CL_QUEUE_PROFILING_ENABLE, &s);
    check(s, "clCreateCommandQueue(CL_QUEUE_PROFILING_ENABLE) on " + info_.name);
  }
  return profiling_queue_;
}

Device::~Device() {
  for (auto& [file, prog] : programs_) clReleaseProgram(prog);
  if (profiling_queue_) clReleaseCommandQueue(profiling_queue_);
  if (queue_) clReleaseCommandQueue(queue_);
  if (context_) clReleaseContext(context_);
}

namespace {

thread_local KernelBuildScope* innermost_build_scope = nullptr;

// Runs `build` with the process's stderr (fd 2) sent to a temporary file
// and returns what was written there. PoCL's compiler prints its summary
// ("4 warnings generated.") to fd 2 itself, outside the build log, so a
// sink that wants every compiler message has to catch it there. fd 2 is the
// whole process's: captures are serialized, and whatever another thread
// writes meanwhile is captured too and goes to the sink rather than lost.
std::string capture_stderr(const std::function<void()>& build) {
  static std::mutex capture_mutex;
  std::lock_guard<std::mutex> lock(capture_mutex);
  std::FILE* file = std::tmpfile();
  const int saved = file ? ::dup(2) : -1;
  if (saved < 0 || ::dup2(::fileno(file), 2) < 0) {
    if (saved >= 0) ::close(saved);
    if (file) std::fclose(file);
    build();
    return "";
  }
  struct Restore {
    int saved;
    ~Restore() {
      std::fflush(stderr);
      ::dup2(saved, 2);
      ::close(saved);
    }
  };
  {
    Restore restore{saved};
    try {
      build();
    } catch (...) {
      std::fclose(file);
      throw;
    }
  }
  std::string text;
  std::rewind(file);
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, file)) text.append(buf, n);
  std::fclose(file);
  return text;
}

// Non-empty lines of a build log or captured output (logs end in NULs).
std::vector<std::string> message_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    line.erase(std::remove(line.begin(), line.end(), '\0'), line.end());
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

}  // namespace

KernelBuildScope::KernelBuildScope(BuildCallback on_build, MessageSink on_message, KernelBuildDiagnostics diagnostics)
    : on_build_(std::move(on_build)),
      on_message_(std::move(on_message)),
      outer_(innermost_build_scope),
      diagnostics_(std::move(diagnostics)) {
  if (!diagnostics_.log && diagnostics_.dump_dir.empty() && outer_) diagnostics_ = outer_->diagnostics_;
  innermost_build_scope = this;
}

KernelBuildScope::~KernelBuildScope() { innermost_build_scope = outer_; }

namespace {

// The binary of a program built for one device (NVIDIA: PTX text; PoCL: its
// own container of LLVM bitcode), or nothing where the driver gives none.
std::vector<unsigned char> program_binary(cl_program prog) {
  size_t size = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS || size == 0)
    return {};
  std::vector<unsigned char> bin(size);
  unsigned char* ptr = bin.data();
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) != CL_SUCCESS) return {};
  return bin;
}

// A program built from a binary (OpenCL asks for clBuildProgram even then),
// or nullptr when the driver refuses the binary: another driver's, damaged.
cl_program build_from_binary(cl_context context, cl_device_id device, const std::vector<unsigned char>& binary,
                             const std::string& options) {
  const unsigned char* ptr = binary.data();
  const size_t size = binary.size();
  cl_int status = CL_SUCCESS, binary_status = CL_SUCCESS;
  cl_program prog = clCreateProgramWithBinary(context, 1, &device, &size, &ptr, &binary_status, &status);
  if (status != CL_SUCCESS || binary_status != CL_SUCCESS) {
    if (prog) clReleaseProgram(prog);
    return nullptr;
  }
  if (clBuildProgram(prog, 1, &device, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    clReleaseProgram(prog);
    return nullptr;
  }
  return prog;
}

// `prog` (built with -DSM90A_PATCH) rebuilt from its PTX retargeted to
// sm_90a (device/ptx_sm90a.h). Releases `prog`; throws Error naming `what`
// if the driver refuses.
cl_program retarget_sm90a(cl_context context, cl_device_id device, cl_program prog, const std::string& options,
                          const std::string& what) {
  const std::vector<unsigned char> bin = program_binary(prog);
  clReleaseProgram(prog);
  std::string text(bin.begin(), bin.end());
  text.resize(std::strlen(text.c_str()));
  const std::optional<std::string> ptx = ptx_for_sm90a(std::move(text));
  if (!ptx) throw Error("building kernels " + what + ": no sm_90 PTX with sm_90a lines to retarget");
  const std::vector<unsigned char> patched(ptx->c_str(), ptx->c_str() + ptx->size() + 1);
  cl_program out = build_from_binary(context, device, patched, options);
  if (!out) throw Error("building kernels " + what + ": the driver refused its PTX retargeted to sm_90a");
  return out;
}

// Tells a scope a build began and, also when it throws, that it ended.
struct BuildNotice {
  KernelBuildScope::BuildCallback* on_build;
  const std::string& name;
  ProgramOrigin origin;
  BuildNotice(KernelBuildScope::BuildCallback* f, const std::string& n, ProgramOrigin o)
      : on_build(f), name(n), origin(o) {
    if (on_build) (*on_build)(name, origin, false);
  }
  ~BuildNotice() {
    if (on_build) (*on_build)(name, origin, true);
  }
};

}  // namespace

cl_program Device::program(const std::string& file, const std::string& defines, const std::string& prelude) {
  std::lock_guard<std::mutex> lock(programs_mutex_);
  const std::string key = file + " " + defines + (prelude.empty() ? "" : "\n" + prelude);
  for (auto& [k, prog] : programs_)
    if (k == key) return prog;
  const auto& srcs = kernels::sources();
  auto it = srcs.find(file);
  if (it == srcs.end()) throw Error("no kernel source " + file + " embedded in this build");
  // common.cl holds the definitions every kernel file shares.
  std::string text = srcs.at("common.cl") + "\n" + prelude + "\n" + it->second;
  // Exact math: no -cl-fast-relaxed-math; a*b+c may become one fma. NVIDIA's
  // default fp32 divide and sqrt are not correctly rounded (a few ulp), which
  // flips nearest-neighbour Resize indices and drifts LayerNorm: ask for IEEE.
  cl_device_fp_config fp = 0;
  clGetDeviceInfo(id_, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, nullptr);
  KernelBuildScope* const scope = innermost_build_scope;
  KernelBuildScope::BuildCallback* const on_build = scope && scope->on_build_ ? &scope->on_build_ : nullptr;
  // The scope's diagnostics (kernel work): every build's log on stderr, with
  // NVIDIA's -cl-nv-verbose; every binary into a folder.
  const bool show_log = scope && scope->diagnostics_.log;
  const std::string dump_dir = scope ? scope->diagnostics_.dump_dir : std::string();
  const bool nv_options = std::find(info_.extensions.begin(), info_.extensions.end(), "cl_nv_compiler_options") !=
                          info_.extensions.end();
  const bool to_sink = scope && scope->on_message_;
  const std::string program_name = file + (defines.empty() ? "" : " " + defines);
  // The options that decide the binary, which key the program cache; -w
  // changes only what the compiler says.
  const std::string code_options =
      std::string(defines.find("-cl-std=") == std::string::npos ? "-cl-std=CL1.2 " : "") + "-cl-mad-enable " +
      ((fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) ? "-cl-fp32-correctly-rounded-divide-sqrt " : "") +
      (show_log && nv_options ? "-cl-nv-verbose " : "") + defines;
  const std::string options = code_options + (show_log || to_sink ? "" : " -w");

  // A build log asked for needs the compiler to run: the cache is not read.
  cl_program prog = nullptr;
  std::optional<ProgramCache::Key> cache_key;
  if (cache_ && !show_log) {
    cache_key = cache_->key(text, code_options);
    if (auto binary = cache_->load(*cache_key)) {
      BuildNotice notice(on_build, program_name, ProgramOrigin::Cache);
      prog = build_from_binary(context_, id_, *binary, options);
      ++(prog ? stats_.from_cache : stats_.rejected);
    }
  }
  if (!prog) {
    const char* ptr = text.c_str();
    size_t len = text.size();
    cl_int s = CL_SUCCESS;
    prog = clCreateProgramWithSource(context_, 1, &ptr, &len, &s);
    check(s, "clCreateProgramWithSource(" + file + ")");
    BuildNotice notice(on_build, program_name, ProgramOrigin::Source);
    std::string driver_output;
    if (to_sink)
      driver_output = capture_stderr([&] { s = clBuildProgram(prog, 1, &id_, options.c_str(), nullptr, nullptr); });
    else
      s = clBuildProgram(prog, 1, &id_, options.c_str(), nullptr, nullptr);
    auto build_log = [&] {
      size_t n = 0;
      clGetProgramBuildInfo(prog, id_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
      std::string log(n, '\0');
      clGetProgramBuildInfo(prog, id_, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
      return log;
    };
    if (s != CL_SUCCESS) {
      const std::string log = build_log();
      clReleaseProgram(prog);
      throw Error("building kernels " + key + " for " + info_.name + ": " + cl_error_name(s) + "\n" + log);
    }
    if (show_log) std::cerr << "build log: " << file << " " << defines << "\n" << build_log() << "\n";
    if (to_sink) {
      for (const auto& line : message_lines(driver_output)) scope->on_message_(program_name, line);
      for (const auto& line : message_lines(build_log())) scope->on_message_(program_name, line);
    }
    if (defines.find("-DSM90A_PATCH") != std::string::npos) prog = retarget_sm90a(context_, id_, prog, options, key);
    ++stats_.compiled;
    if (cache_key) unstored_.push_back({prog, *cache_key});
  }
  // The binary (NVIDIA: PTX text) into DIR/<n>.bin, for ptxas and cuobjdump.
  if (!dump_dir.empty()) {
    const std::vector<unsigned char> bin = program_binary(prog);
    if (!bin.empty()) {
      const std::string path = dump_dir + "/" + std::to_string(programs_.size()) + ".bin";
      std::ofstream(path, std::ios::binary)
          .write(reinterpret_cast<const char*>(bin.data()), std::streamsize(bin.size()));
      std::cerr << "build dump: " << path << " " << file << " " << defines << "\n";
    }
  }
  programs_.emplace_back(key, prog);
  return prog;
}

void Device::store_programs() {
  std::lock_guard<std::mutex> lock(programs_mutex_);
  for (const Unstored& p : unstored_) cache_->store(p.key, program_binary(p.program));
  unstored_.clear();
}

namespace {

// The device `spec` names, as an index into `ids`; Error when none.
int pick_device(const std::string& spec, const std::vector<cl_device_id>& ids) {
  int pick = -1;
  if (spec == "pocl") {
    for (size_t k = 0; k < ids.size() && pick < 0; ++k) {
      auto p = device_value<cl_platform_id>(ids[k], CL_DEVICE_PLATFORM);
      if (platform_string(p, CL_PLATFORM_NAME).find("Portable Computing Language") != std::string::npos) pick = int(k);
    }
  } else if (spec == "gpu") {
    for (size_t k = 0; k < ids.size() && pick < 0; ++k)
      if (device_value<cl_device_type>(ids[k], CL_DEVICE_TYPE) & CL_DEVICE_TYPE_GPU) pick = int(k);
  } else if (spec.rfind("opencl:", 0) == 0) {
    std::string n = spec.substr(7);
    if (!n.empty() && n.find_first_not_of("0123456789") == std::string::npos && n.size() < 6 &&
        std::stoi(n) < int(ids.size()))
      pick = std::stoi(n);
  } else {
    throw Error("device spec '" + spec + "' is not one of pocl, gpu, opencl:N; " + device_list_text(ids));
  }
  if (pick < 0) throw Error("no OpenCL device matches '" + spec + "'; " + device_list_text(ids));
  return pick;
}

}  // namespace

std::shared_ptr<Device> open_new_device(const std::string& spec, const DeviceOptions& options) {
  const auto ids = all_device_ids();
  const int pick = pick_device(spec, ids);
  return std::shared_ptr<Device>(new Device(ids[pick], describe(ids[pick], pick), options));
}

std::shared_ptr<Device> open_device(const std::string& spec, const DeviceOptions& options) {
  // Devices live until the process exits and are never released: drivers
  // may already be unloaded when static destructors run.
  static std::mutex mutex;
  using Key = std::tuple<int, bool, std::string, int64_t>;
  static auto* opened = new std::map<Key, std::shared_ptr<Device>>();
  std::lock_guard<std::mutex> lock(mutex);

  const auto ids = all_device_ids();
  const int pick = pick_device(spec, ids);
  // The folder as the environment names it now, so that one variable set
  // later opens a Device that caches there.
  const std::string dir = !options.program_cache              ? ""
                          : options.program_cache_dir.empty() ? default_program_cache_dir().string()
                                                              : options.program_cache_dir;
  auto& dev = (*opened)[Key{pick, options.program_cache, dir, options.program_cache_max_bytes}];
  if (!dev) {
    DeviceOptions resolved = options;
    resolved.program_cache_dir = dir;
    dev.reset(new Device(ids[pick], describe(ids[pick], pick), resolved));
  }
  return dev;
}

plan::DeviceProfile load_profile(const std::string& target) {
  if (target != "opencl") return plan::DeviceProfile::load(target);
  for (const auto& d : list_devices())
    if (d.type == "gpu") return open_device("opencl:" + std::to_string(d.index))->info().profile;
  return open_device("pocl")->info().profile;
}

bool accepts_inline_ptx(const Device& dev) {
  const DeviceInfo& d = dev.info();
  return d.vendor.find("NVIDIA") != std::string::npos && d.platform.find("NVIDIA") != std::string::npos;
}

namespace {
// An NVIDIA GPU's compute capability (major, minor) under NVIDIA's driver;
// none where the driver does not say (no cl_nv_device_attribute_query).
std::optional<std::pair<cl_uint, cl_uint>> nv_compute_capability(const Device& dev) {
  if (dev.info().type != "gpu" || !accepts_inline_ptx(dev)) return std::nullopt;
  const auto& ext = dev.info().extensions;
  if (std::find(ext.begin(), ext.end(), "cl_nv_device_attribute_query") == ext.end()) return std::nullopt;
  const cl_device_info kComputeCapabilityMajorNV = 0x4000, kComputeCapabilityMinorNV = 0x4001;
  cl_uint major = 0, minor = 0;
  if (clGetDeviceInfo(dev.id(), kComputeCapabilityMajorNV, sizeof major, &major, nullptr) != CL_SUCCESS ||
      clGetDeviceInfo(dev.id(), kComputeCapabilityMinorNV, sizeof minor, &minor, nullptr) != CL_SUCCESS)
    return std::nullopt;
  return std::make_pair(major, minor);
}
}  // namespace

bool sm90a_supported(const Device& dev) {
  const auto cc = nv_compute_capability(dev);
  return cc && cc->first == 9 && cc->second == 0;
}

bool tf32_supported(const Device& dev) {
  if (dev.info().type != "gpu" || !accepts_inline_ptx(dev)) return false;
  const auto cc = nv_compute_capability(dev);
  return !cc || cc->first >= 8;  // tf32 mma: Ampere and later; assumed where the driver does not say
}

}  // namespace texplan::runtime
