// The program cache on disk (device/program_cache.h): a second Device on the
// same folder builds its programs from the cached binaries and computes the
// same results; damaged files and binaries the driver refuses fall back to
// the source; build options make separate entries; a folder that cannot be
// written, or none, never fails a run; the folder stays under its size.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "device/device.h"
#include "device/program_cache.h"
#include "device/ptx_sm90a.h"
#include "onnx_builder.h"
#include "one_node.h"

namespace fs = std::filesystem;
using namespace texplan;

namespace {

// A convolution with a bias and a Relu after it: one node, several programs.
test::OneNode conv_case() {
  test::NodeCase c{"Conv", {{1, 3, 9, 9}, {8, 3, 3, 3}, {8}}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}},
                   {true, false, false}};
  return test::one_node(c, "program_cache_conv", 13, 7);
}

// The device kernel tests run on (test_util.h): PoCL, or TEXPLAN_TEST_DEVICE.
std::string device_spec() {
  const char* spec = std::getenv("TEXPLAN_TEST_DEVICE");
  return spec ? spec : "pocl";
}

std::shared_ptr<runtime::Device> device_on(const fs::path& dir, int64_t max_bytes = int64_t(512) << 20) {
  runtime::DeviceOptions options;
  options.program_cache_dir = dir.string();
  options.program_cache_max_bytes = max_bytes;
  return runtime::open_new_device(device_spec(), options);
}

std::vector<fs::path> cache_files(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".clbin") files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

// Runs the case on `dev`: the output matches the CPU reference.
HostTensor run_checked(const test::OneNode& n, const std::shared_ptr<runtime::Device>& dev) {
  HostTensor got = test::run_one_node(n, dev).got;
  EXPECT_LT(test::rel_error(got, n.want), 1e-5);
  return got;
}

void expect_same(const HostTensor& a, const HostTensor& b) {
  const std::vector<float> x = a.as_float(), y = b.as_float();
  ASSERT_EQ(x.size(), y.size());
  EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0) << "cached binaries compute other values";
}

// A fresh folder per test.
fs::path fresh_dir(const std::string& tag) {
  const fs::path dir = test::temp_dir("program-cache") / tag;
  fs::remove_all(dir);
  return dir;
}

}  // namespace

TEST(ProgramCache, SecondDeviceBuildsFromTheCache) {
  const fs::path dir = fresh_dir("second");
  const test::OneNode n = conv_case();
  auto first = device_on(dir);
  const HostTensor a = run_checked(n, first);
  const runtime::ProgramStats s1 = first->program_stats();
  ASSERT_GT(s1.compiled, 0);
  EXPECT_EQ(s1.from_cache, 0);
  EXPECT_EQ(s1.cache_dir, dir.string());
  EXPECT_EQ(s1.cache_problem, "");
  EXPECT_EQ(int(cache_files(dir).size()), s1.compiled);

  // The scope hears of every program, and where it came from.
  int from_cache = 0, from_source = 0;
  runtime::KernelBuildScope scope(
      [&](const std::string&, runtime::ProgramOrigin origin, bool done) {
        if (done) ++(origin == runtime::ProgramOrigin::Cache ? from_cache : from_source);
      },
      nullptr);
  auto second = device_on(dir);
  const HostTensor b = run_checked(n, second);
  const runtime::ProgramStats s2 = second->program_stats();
  EXPECT_EQ(s2.compiled, 0);
  EXPECT_EQ(s2.from_cache, s1.compiled);
  EXPECT_EQ(s2.rejected, 0);
  EXPECT_EQ(from_cache, s1.compiled);
  EXPECT_EQ(from_source, 0);
  expect_same(a, b);
}

TEST(ProgramCache, DamagedFilesAreCompiledAgain) {
  const fs::path dir = fresh_dir("damaged");
  const test::OneNode n = conv_case();
  auto first = device_on(dir);
  const HostTensor a = run_checked(n, first);
  const int programs = first->program_stats().compiled;
  const std::vector<fs::path> files = cache_files(dir);
  ASSERT_EQ(int(files.size()), programs);
  // Cut short, a byte flipped in the binary, emptied: each way in turn.
  for (size_t k = 0; k < files.size(); ++k) {
    const auto size = fs::file_size(files[k]);
    if (k % 3 == 0) {
      fs::resize_file(files[k], size / 2);
    } else if (k % 3 == 1) {
      std::fstream f(files[k], std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(std::streamoff(size - 1));
      const char c = char(f.get() ^ 0x5a);
      f.seekp(std::streamoff(size - 1));
      f.put(c);
    } else {
      fs::resize_file(files[k], 0);
    }
  }
  auto second = device_on(dir);
  const HostTensor b = run_checked(n, second);
  EXPECT_EQ(second->program_stats().compiled, programs);
  EXPECT_EQ(second->program_stats().from_cache, 0);
  expect_same(a, b);
  // ... and written again whole.
  auto third = device_on(dir);
  run_checked(n, third);
  EXPECT_EQ(third->program_stats().from_cache, programs);
}

TEST(ProgramCache, BinaryTheDriverRefusesIsCompiled) {
  const fs::path dir = fresh_dir("refused");
  const test::OneNode n = conv_case();
  auto first = device_on(dir);
  const HostTensor a = run_checked(n, first);
  const int programs = first->program_stats().compiled;
  // Each file replaced by one with a whole header (same key, a checksum
  // that holds) over bytes no driver takes for a program.
  runtime::ProgramCache writer(dir, "", int64_t(1) << 30);
  for (const fs::path& file : cache_files(dir)) {
    runtime::ProgramCache::Key key;
    key.name_hash = std::stoull(file.stem().string(), nullptr, 16);
    std::ifstream in(file, std::ios::binary);
    in.seekg(8);
    in.read(reinterpret_cast<char*>(&key.check_hash), sizeof key.check_hash);
    ASSERT_TRUE(in.good());
    writer.store(key, std::vector<unsigned char>(4096, 0xa5));
  }
  EXPECT_EQ(writer.problem(), "");
  auto second = device_on(dir);
  const HostTensor b = run_checked(n, second);
  EXPECT_EQ(second->program_stats().rejected, programs);
  EXPECT_EQ(second->program_stats().compiled, programs);
  EXPECT_EQ(second->program_stats().from_cache, 0);
  expect_same(a, b);
  auto third = device_on(dir);
  run_checked(n, third);
  EXPECT_EQ(third->program_stats().from_cache, programs);
  EXPECT_EQ(third->program_stats().rejected, 0);
}

TEST(ProgramCache, BuildOptionsAreSeparateEntries) {
  const fs::path dir = fresh_dir("options");
  auto first = device_on(dir);
  first->program("ceiling.cl", "-DTEXPLAN_CACHE_TEST=1");
  first->program("ceiling.cl", "-DTEXPLAN_CACHE_TEST=2");
  EXPECT_EQ(cache_files(dir).size(), 0u) << "stored after a run, or when asked";
  first->store_programs();
  EXPECT_EQ(first->program_stats().compiled, 2);
  EXPECT_EQ(cache_files(dir).size(), 2u);
  auto second = device_on(dir);
  second->program("ceiling.cl", "-DTEXPLAN_CACHE_TEST=2");
  second->program("ceiling.cl", "-DTEXPLAN_CACHE_TEST=1");
  second->program("ceiling.cl", "-DTEXPLAN_CACHE_TEST=3");
  second->store_programs();
  EXPECT_EQ(second->program_stats().from_cache, 2);
  EXPECT_EQ(second->program_stats().compiled, 1);
  EXPECT_EQ(cache_files(dir).size(), 3u);
}

TEST(ProgramCache, FolderThatCannotBeWrittenStillRuns) {
  // Below a regular file: no folder can be made there (root included).
  const fs::path base = fresh_dir("unwritable");
  fs::create_directories(base);
  std::ofstream(base / "a-file") << "not a folder";
  const fs::path dir = base / "a-file" / "programs";
  const test::OneNode n = conv_case();
  auto dev = device_on(dir);
  run_checked(n, dev);
  const runtime::ProgramStats s = dev->program_stats();
  EXPECT_GT(s.compiled, 0);
  EXPECT_EQ(s.from_cache, 0);
  EXPECT_NE(s.cache_problem.find(dir.string()), std::string::npos) << s.cache_problem;
}

TEST(ProgramCache, FolderFromTheEnvironmentAndOff) {
  const fs::path dir = fresh_dir("environment");
  const char* old_dir = std::getenv("TEXPLAN_CACHE_DIR");
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  const std::optional<std::string> kept_dir = old_dir ? std::optional<std::string>(old_dir) : std::nullopt;
  const std::optional<std::string> kept_xdg = old_xdg ? std::optional<std::string>(old_xdg) : std::nullopt;

  setenv("TEXPLAN_CACHE_DIR", (dir / "explicit").c_str(), 1);
  EXPECT_EQ(runtime::default_program_cache_dir(), dir / "explicit");
  runtime::DeviceOptions off_options;
  off_options.program_cache = false;
  auto off = runtime::open_new_device(device_spec(), off_options);
  off->program("ceiling.cl", "-DTEXPLAN_CACHE_TEST=off");
  off->store_programs();
  EXPECT_EQ(off->program_stats().cache_dir, "");
  EXPECT_FALSE(fs::exists(dir / "explicit"));
  auto on = runtime::open_new_device(device_spec());
  on->program("ceiling.cl", "-DTEXPLAN_CACHE_TEST=on");
  on->store_programs();
  EXPECT_EQ(cache_files(dir / "explicit").size(), 1u);

  unsetenv("TEXPLAN_CACHE_DIR");
  setenv("XDG_CACHE_HOME", (dir / "xdg").c_str(), 1);
  EXPECT_EQ(runtime::default_program_cache_dir(), dir / "xdg" / "texplan" / "programs");

  if (kept_dir) setenv("TEXPLAN_CACHE_DIR", kept_dir->c_str(), 1);
  if (kept_xdg)
    setenv("XDG_CACHE_HOME", kept_xdg->c_str(), 1);
  else
    unsetenv("XDG_CACHE_HOME");
}

TEST(ProgramCache, FolderStaysUnderItsSize) {
  // One program's file size, then room for about two of them.
  const fs::path probe = fresh_dir("size-probe");
  auto probe_device = device_on(probe);
  probe_device->program("ceiling.cl", "-DTEXPLAN_CACHE_TEST=0");
  probe_device->store_programs();
  const std::vector<fs::path> one = cache_files(probe);
  ASSERT_EQ(one.size(), 1u);
  const int64_t file_bytes = int64_t(fs::file_size(one[0]));
  const int64_t max_bytes = file_bytes * 5 / 2;

  const fs::path dir = fresh_dir("size");
  auto dev = device_on(dir, max_bytes);
  for (int k = 1; k <= 6; ++k) {
    dev->program("ceiling.cl", "-DTEXPLAN_CACHE_TEST=" + std::to_string(k));
    dev->store_programs();
    int64_t total = 0;
    for (const fs::path& f : cache_files(dir)) total += int64_t(fs::file_size(f));
    EXPECT_LE(total, max_bytes) << "after program " << k;
  }
  EXPECT_EQ(dev->program_stats().compiled, 6);
  // The newest stays: a Device on the folder builds it from the cache.
  auto again = device_on(dir, max_bytes);
  again->program("ceiling.cl", "-DTEXPLAN_CACHE_TEST=6");
  EXPECT_EQ(again->program_stats().from_cache, 1);
}

// A kernel's sm_90a lines, written as "// @@" comments in the PTX NVIDIA's
// compiler targets at sm_90, come back uncommented under an sm_90a target;
// PTX without such lines or without that target is refused.
TEST(ProgramCache, PtxRetargetedToSm90aUncommentsItsLines) {
  const std::string ptx =
      ".version 9.0\n.target sm_90, texmode_independent\n\t// @@wgmma.fence.sync.aligned;\n"
      "\tmov.u32 %r1, 0;\n\t// @@wgmma.commit_group.sync.aligned;\n";
  size_t lines = 0;
  const std::optional<std::string> out = texplan::ptx_for_sm90a(ptx, &lines);
  ASSERT_TRUE(out);
  EXPECT_EQ(lines, 2u);
  EXPECT_EQ(*out,
            ".version 9.0\n.target sm_90a, texmode_independent\n\twgmma.fence.sync.aligned;\n"
            "\tmov.u32 %r1, 0;\n\twgmma.commit_group.sync.aligned;\n");
  EXPECT_EQ(texplan::ptx_for_sm90a(*out), std::nullopt) << "no commented lines left";
  EXPECT_EQ(texplan::ptx_for_sm90a(".target sm_80\n// @@wgmma.fence.sync.aligned;\n"), std::nullopt);
}
