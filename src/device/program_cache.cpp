#include "device/program_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "graph/safe_file.h"

namespace fs = std::filesystem;

namespace texplan::runtime {

namespace {

// The header before every cached binary: the format, the key's second hash
// (a file of another key that shares the name's hash is a miss), the
// binary's size and checksum (a short or damaged file is a miss).
constexpr char kMagic[8] = {'T', 'X', 'P', 'L', 'C', 'L', '0', '1'};
struct Header {
  char magic[8];
  uint64_t check_hash;
  uint64_t size;
  uint64_t checksum;
};
constexpr const char* kExtension = ".clbin";
constexpr int64_t kMaxFileBytes = int64_t(1) << 30;

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

// A 64-bit hash, stable across builds and machines (std::hash is neither),
// over pieces fed one after another, each with its length.
class Hasher {
 public:
  explicit Hasher(uint64_t seed) : h_(mix(seed)) {}
  Hasher& add(std::string_view s) { return add(s.data(), s.size()); }
  Hasher& add(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    h_ = mix(h_ ^ (n * 0x9e3779b97f4a7c15ULL));
    for (; n >= 8; p += 8, n -= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      h_ = mix(h_ ^ w) * 0x9e3779b97f4a7c15ULL;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, p, n);
    h_ = mix(h_ ^ tail ^ (uint64_t(n) << 56));
    return *this;
  }
  uint64_t value() const { return mix(h_); }

 private:
  uint64_t h_;
};

bool is_cache_file(const std::string& name) {
  // Binaries (16 hex digits and the extension) and temporaries being written.
  return (name.size() == 16 + std::strlen(kExtension) && name.ends_with(kExtension)) ||
         (name.starts_with(".") && name.find(std::string(kExtension) + ".tmp-") != std::string::npos);
}

bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

}  // namespace

fs::path default_program_cache_dir() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (const std::string dir = env("TEXPLAN_CACHE_DIR"); !dir.empty()) return dir;
  if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) return fs::path(xdg) / "texplan" / "programs";
  if (const std::string home = env("HOME"); !home.empty()) return fs::path(home) / ".cache" / "texplan" / "programs";
  return {};
}

ProgramCache::ProgramCache(fs::path dir, std::string device_identity, int64_t max_bytes)
    : dir_(std::move(dir)), identity_(std::move(device_identity)), max_bytes_(max_bytes) {}

ProgramCache::Key ProgramCache::key(const std::string& source, const std::string& options) const {
  auto hash = [&](uint64_t seed) { return Hasher(seed).add(identity_).add(options).add(source).value(); };
  return {hash(1), hash(2)};
}

fs::path ProgramCache::file_of(const Key& key) const {
  char name[17];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(key.name_hash));
  return dir_ / (std::string(name) + kExtension);
}

void ProgramCache::note(const std::string& what) {
  if (problem_.empty()) problem_ = what;
}

std::optional<std::vector<unsigned char>> ProgramCache::load(const Key& key) {
  const fs::path path = file_of(key);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    RegularFile file(path, "program cache", kMaxFileBytes);
    Header h{};
    if (file.size() < int64_t(sizeof h)) return std::nullopt;
    file.read_at(0, &h, sizeof h);
    if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.check_hash != key.check_hash ||
        h.size != uint64_t(file.size()) - sizeof h || h.size == 0)
      return std::nullopt;
    std::vector<unsigned char> binary(h.size);
    file.read_at(sizeof h, binary.data(), int64_t(h.size));
    if (Hasher(3).add(binary.data(), binary.size()).value() != h.checksum) return std::nullopt;
    // Used now: the last to be evicted.
    fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
    return binary;
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable: compiled, and written again
  }
}

void ProgramCache::store(const Key& key, const std::vector<unsigned char>& binary) {
  if (binary.empty() || int64_t(binary.size()) > kMaxFileBytes) return;
  std::error_code ec;
  if (!folder_ready_) {
    if (!problem_.empty()) return;  // the folder failed before: no retry per program
    fs::create_directories(dir_, ec);
    if (ec || !fs::is_directory(dir_, ec)) {
      note("cannot create " + dir_.string() + ": " + (ec ? ec.message() : "not a folder"));
      return;
    }
    folder_ready_ = true;
  }
  const fs::path path = file_of(key);
  // Unique among processes (pid) and among caches of one process (address).
  // Built by appending: GCC 12 warns falsely on "literal" + std::string&&.
  std::string tmp_name = ".";
  tmp_name += path.filename().string();
  tmp_name += ".tmp-";
  tmp_name += std::to_string(::getpid());
  tmp_name += '-';
  tmp_name += std::to_string(reinterpret_cast<uintptr_t>(this));
  const fs::path tmp = dir_ / tmp_name;
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.check_hash = key.check_hash;
  h.size = binary.size();
  h.checksum = Hasher(3).add(binary.data(), binary.size()).value();
  // No fsync: a file cut short by a crash fails its checksum and is a miss.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return note("cannot write in " + dir_.string() + ": " + std::strerror(errno));
  bool ok = write_all(fd, &h, sizeof h) && write_all(fd, binary.data(), binary.size());
  int err = errno;
  if (::close(fd) != 0 && ok) ok = false, err = errno;
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) ok = false, err = errno;
  if (!ok) {
    ::unlink(tmp.c_str());
    return note("cannot write " + path.string() + ": " + std::strerror(err));
  }
  if (stored_bytes_ >= 0) stored_bytes_ += int64_t(sizeof h + binary.size());
  evict(path);
}

void ProgramCache::evict(const fs::path& keep) {
  struct Entry {
    fs::file_time_type used;
    int64_t bytes;
    fs::path path;
  };
  auto entries = [&] {
    std::vector<Entry> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      std::error_code e;
      if (!is_cache_file(name) || !it->is_regular_file(e)) continue;
      const auto bytes = it->file_size(e);
      const auto used = it->last_write_time(e);
      if (!e) out.push_back({used, int64_t(bytes), it->path()});
    }
    return out;
  };
  // The folder is counted once, then kept up to date by this cache's writes
  // (other processes' writes are seen at the next count).
  if (stored_bytes_ < 0) {
    stored_bytes_ = 0;
    for (const Entry& e : entries()) stored_bytes_ += e.bytes;
  }
  if (stored_bytes_ <= max_bytes_) return;
  std::vector<Entry> all = entries();
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  int64_t total = 0;
  for (const Entry& e : all) total += e.bytes;
  // Down to three quarters, so that the next writes do not evict again at
  // once; the file just written stays (file times may tie).
  for (const Entry& e : all) {
    if (total <= max_bytes_ / 4 * 3) break;
    if (e.path == keep) continue;
    std::error_code ec;
    if (fs::remove(e.path, ec)) total -= e.bytes;
  }
  stored_bytes_ = total;
}

}  // namespace texplan::runtime
