// The planner's whole vocabulary. The planner depends on nothing above it:
// it sees usage records and a device profile, never ONNX or OpenCL.
//
//   std::vector<UsageRecord> recs = ...;          // one per tensor to place
//   DeviceProfile dev = DeviceProfile::load("h100");
//   MemoryPlan p = plan_memory(recs, dev, "best");
//   validate(p, recs, dev);                       // throws PlanError if broken
//
// Contract: tensors live at the same step never overlap in the same pool;
// a record's [first, last] steps are inclusive (producer .. last consumer).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace texplan::plan {

struct PlanError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class Storage { Buffer, Texture };
const char* to_string(Storage s);

// A 2D image: `width` x `height` pixels of `pixel_bytes` each (16 for RGBA
// fp32, 8 for RGBA fp16).
struct TextureExtent {
  int64_t width = 0, height = 0;
  int64_t pixel_bytes = 16;
  int64_t tight_bytes() const { return width * height * pixel_bytes; }
};

struct UsageRecord {
  std::string name;    // for reports only
  int64_t bytes = 0;   // buffer size; for textures the tight image size
  int32_t first = 0;   // step of the producer (0 for graph inputs)
  int32_t last = 0;    // step of the last consumer, inclusive
  Storage storage = Storage::Buffer;
  TextureExtent extent;  // when storage == Texture
  std::string op;        // producing operator kind, for pictures ("Conv", "input")
};

// What the planner needs to know about a device. Profiles come from the
// device itself (runtime) or from a JSON file in profiles/.
struct DeviceProfile {
  std::string name;
  std::string source;  // where the numbers come from
  // "gpu", "cpu" or another OpenCL device type: which fused forms a plan
  // assumes (the kernels of that type run them; lower/catalog.cpp), so that
  // `texplan plan --target` optimizes as `texplan run` on the device does.
  std::string device_type = "gpu";
  bool image_support = true;
  int64_t max_image2d_width = 16384, max_image2d_height = 16384;
  int64_t max_image1d_buffer_pixels = 65536;  // CL_DEVICE_IMAGE_MAX_BUFFER_SIZE
  bool image2d_from_buffer = false;           // cl_khr_image2d_from_buffer
  int64_t image_pitch_alignment = 0;          // bytes; row pitch of images from buffers
  int64_t image_base_address_alignment = 0;   // bytes; base of images from buffers
  int64_t mem_base_addr_align = 128;          // bytes; sub-buffer origin alignment
  bool fp16 = false;
  int64_t global_mem_bytes = 0;
  int64_t max_alloc_bytes = 0;
  // What `--textures auto` picks on this device: "none", "pools" or "views"
  // (optimize/storage.h). Set from measurements (`texplan run M --bench`
  // with --textures none and pools/views); devices read at run time get
  // "views" on GPUs with image2d_from_buffer, else "none".
  std::string auto_textures = "none";

  static DeviceProfile load(const std::string& name_or_path);  // "pocl", "h100", "adreno", or a .json path
  static std::vector<std::string> builtin_names();
  std::string to_json() const;
  static DeviceProfile from_json(const std::string& text);
};

struct Pool {
  int id = 0;
  Storage kind = Storage::Buffer;
  int64_t bytes = 0;
  int64_t width = 0, height = 0;  // texture pools: image extent in pixels
};

// Where one record lives. Buffers: a byte offset into a buffer pool.
// Textures in texture pools: the whole pool image (offset 0). Textures as
// views (`texture-views`): a byte offset into the buffer pool, with rows
// `row_pitch` bytes apart.
struct Placement {
  int pool = -1;
  int64_t offset = 0;
  int64_t row_pitch = 0;  // textures as views only
  bool view = false;      // texture placed as a view over a buffer pool
};

struct MemoryPlan {
  std::string strategy;
  std::vector<Pool> pools;
  std::vector<Placement> placements;  // parallel to the records
  double plan_ms = 0;
  int64_t repair_work = 0;  // strategies built on `best`: units of kBestRepairWork used (all when it ran out)
  int64_t total_bytes() const;
  int64_t buffer_bytes() const;
  int64_t texture_bytes() const;
};

// Peak over steps of the bytes live at that step: no plan for this order is
// smaller. Textures count their tight size. O(n log n). Throws PlanError on
// a negative size or sums beyond 64 bits.
int64_t lower_bound_bytes(const std::vector<UsageRecord>& recs);

// The same with every texture at texture_footprint_bytes on `dev` (the
// bound of a plan with textures; equal to the above without image2d_from_buffer).
int64_t lower_bound_bytes(const std::vector<UsageRecord>& recs, const DeviceProfile& dev);

// Bytes live from step `first` to step `last`, inclusive: the bound of
// buffers alone, for callers that need no records (an optimizer comparing
// orders of a million-node graph).
struct Lifetime {
  int64_t bytes = 0;
  int32_t first = 0, last = 0;
};
int64_t lifetimes_lower_bound_bytes(const std::vector<Lifetime>& lifetimes);

// Bytes a texture occupies as a view in a buffer: round_up(width*pixel_bytes,
// pitch) * height (1D views, without image2d_from_buffer: width*pixel_bytes
// * height). Throws PlanError on a device without images.
int64_t texture_view_bytes(const TextureExtent& e, const DeviceProfile& dev);

// What a texture really occupies on `dev`: row_pitch * height, its rows
// rounded up to the pitch alignment. Devices whose images pitch their rows
// (image2d_from_buffer with a pitch alignment) are assumed to pitch
// dedicated images alike, so texture pools count the same (Adreno: rows of
// 64 pixels); elsewhere width * height * pixel_bytes. The pixel size comes
// from the extent (16 for RGBA fp32, 8 for fp16), the pitch as
// texture_view_bytes takes it. The image base-address alignment constrains
// where a view starts, not its size: plans pay it (texture-views aligns
// offsets to it), the lower bound does not, so the bound stays one no plan
// can beat.
int64_t texture_footprint_bytes(const TextureExtent& e, const DeviceProfile& dev);

// Strategies (one file each, in strategies/):
//   naive              every tensor its own allocation
//   tvm-tokens         TVM graph planner token reuse (baseline); textures in TVM texture pools
//   greedy-by-size     TFLite GPU offsets, largest first, best fit
//   greedy-by-breadth  TFLite GPU offsets, by task breadth, best fit
//   best               texplan's own: reaches the lower bound (see strategies/best.cpp)
//   tvm-texture-pools  buffers by `best`, textures in TVM's 2D texture pools
//   texture-views      everything in one arena, textures as image views over it
//                      (image2d-from-buffer, or image1d_buffer on devices
//                      without it); throws PlanError on a device without images
// Buffer-only strategies place texture records in TVM texture pools (naive:
// one pool each), so every strategy plans every record.
//
// `best` (and so tvm-texture-pools and texture-views) stops repairing its
// plan at the lower bound, after 10,000 rounds, or when the next round would
// take it past kBestRepairWork units of work, and keeps the best plan found
// so far. Work, not time, so that a plan does not depend on the machine or
// its load. A unit is one record placed again or one record overlapping it
// in time that the placement looks past; records that all overlap each
// other cost n^2 units a round. tests/test_zoo.cpp checks the budget never
// decides the zoo's plans (docs/kernel-choices.md#bests-repair-budget).
constexpr int64_t kBestRepairWork = 4'000'000;
std::vector<std::string> strategy_names();
MemoryPlan plan_memory(const std::vector<UsageRecord>& recs, const DeviceProfile& dev,
                       const std::string& strategy);

// Independent check of a plan; throws PlanError with the first violation
// (naming both tensors for overlaps). Checks: every record placed, no two
// records live at a common step overlap in one pool, offsets aligned to
// mem_base_addr_align (views: image_base_address_alignment, pitch aligned),
// pools large enough, textures fit their pool and the image limits.
void validate(const MemoryPlan& plan, const std::vector<UsageRecord>& recs, const DeviceProfile& dev);

// Random DAG-shaped records for scale and property tests: `n` tensors over
// about n steps, sizes log-uniform, fan-out and long skips like real models.
// Throws PlanError for n beyond 20 million.
std::vector<UsageRecord> random_records(int64_t n, uint64_t seed);

}  // namespace texplan::plan
