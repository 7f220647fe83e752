#include "graph/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "graph/graph.h"

namespace fs = std::filesystem;

namespace texplan {
namespace {

std::string prefixed(const std::string& what, const std::string& message) {
  return what.empty() ? message : what + ": " + message;
}

const char* kind_of(const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "not a regular file";
}

std::string gib(int64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f GiB", double(bytes) / double(int64_t(1) << 30));
  return b;
}

}  // namespace

RegularFile::RegularFile(const fs::path& path, const std::string& what, int64_t max_bytes)
    : path_(path), what_(what) {
  const std::string p = path.string();
  // stat before open: opening a FIFO for reading blocks until a writer comes.
  struct stat st{};
  if (::stat(p.c_str(), &st) != 0)
    throw Error(prefixed(what, "cannot open '" + p + "': " + std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) throw Error(prefixed(what, "'" + p + "' is " + kind_of(st) + ", not a regular file"));
  // O_NONBLOCK: should the path become a FIFO after the stat, open does not
  // wait for a writer; fstat below then refuses it.
  fd_ = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) throw Error(prefixed(what, "cannot open '" + p + "': " + std::strerror(errno)));
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw Error(prefixed(what, "'" + p + "' is not a regular file"));
  }
  size_ = int64_t(st.st_size);
  if (size_ > max_bytes) {
    ::close(fd_);
    throw Error(prefixed(what, "'" + p + "' is " + std::to_string(size_) + " bytes (" + gib(size_) +
                                   "), over the " + std::to_string(max_bytes) + " it may hold"));
  }
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

void RegularFile::read_at(int64_t offset, void* dst, int64_t n) const {
  if (offset < 0 || n < 0 || offset > size_ || n > size_ - offset)
    throw Error(prefixed(what_, "'" + path_.string() + "' holds " + std::to_string(size_) + " bytes, fewer than [" +
                                    std::to_string(offset) + ", +" + std::to_string(n) + ")"));
  auto* out = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, out, size_t(std::min<int64_t>(n, int64_t(1) << 30)), off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw Error(prefixed(what_, "reading '" + path_.string() + "' failed: " +
                                      (got < 0 ? std::strerror(errno) : "the file ended early (changed while read?)")));
    out += got;
    offset += got;
    n -= got;
  }
}

std::string RegularFile::read_all() const {
  std::string s(size_t(size_), '\0');
  read_at(0, s.data(), size_);
  return s;
}

std::string read_regular_file(const fs::path& path, const std::string& what, int64_t max_bytes) {
  return RegularFile(path, what, max_bytes).read_all();
}

fs::path confined_to(const fs::path& dir, const fs::path& path, const std::string& what) {
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(dir.empty() ? fs::path(".") : dir, ec);
  if (ec) throw Error(prefixed(what, "cannot resolve folder '" + dir.string() + "': " + ec.message()));
  const fs::path full = fs::weakly_canonical(path, ec);
  if (ec) throw Error(prefixed(what, "cannot resolve '" + path.string() + "': " + ec.message()));
  const std::string b = base.string(), f = full.string();
  const bool inside = f.compare(0, b.size(), b) == 0 && (f.size() == b.size() || b.ends_with('/') || f[b.size()] == '/');
  if (!inside)
    throw Error(prefixed(what, "'" + path.string() + "' leads to '" + f + "', outside the model's folder '" + b + "'"));
  return full;
}

namespace {

// Writes every byte to `fd`; false with errno set on failure.
bool write_all(int fd, std::string_view bytes) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, std::min<size_t>(left, size_t(1) << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    p += n;
    left -= size_t(n);
  }
  return true;
}

}  // namespace

void write_file(const fs::path& path, std::string_view bytes, const std::string& what) {
  const std::string p = path.string();
  auto fail = [&](const std::string& reason) { throw Error(prefixed(what, "cannot write '" + p + "': " + reason)); };
  if (p.empty()) fail("empty file name");
  struct stat st{};
  const bool exists = ::stat(p.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) fail("it is a directory");
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or pipe the user named (/dev/stdout, /dev/null): no rename
    // possible; every write and the close are checked.
    const int fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail(std::strerror(errno));
    const bool ok = write_all(fd, bytes);
    const int err = errno;
    if (::close(fd) != 0 && ok) fail(std::strerror(errno));
    if (!ok) fail(std::strerror(err));
    return;
  }
  // The temporary beside the real file (a symlink's target), so the rename
  // stays within one file system and replaces what the link points at.
  fs::path target = path;
  std::error_code ec;
  if (exists && fs::is_symlink(fs::symlink_status(path, ec))) target = fs::canonical(path, ec);
  if (ec) fail(ec.message());
  static std::atomic<unsigned> counter{0};
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".tmp-" +
                                               std::to_string(::getpid()) + "-" + std::to_string(counter++));
  // 0666 less the umask, as a plain open would create it.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, exists ? (st.st_mode & 07777) : 0666);
  if (fd < 0) fail(std::strerror(errno));
  bool ok = write_all(fd, bytes);
  int err = errno;
  if (ok && ::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) ok = false, err = errno;
  if (::close(fd) != 0 && ok) ok = false, err = errno;
  if (ok && ::rename(tmp.c_str(), target.c_str()) != 0) ok = false, err = errno;
  if (!ok) {
    ::unlink(tmp.c_str());
    fail(std::strerror(err));
  }
}

}  // namespace texplan
