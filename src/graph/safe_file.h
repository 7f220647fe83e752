// Files opened and written as if a hostile user had chosen them: every
// reader refuses FIFOs, devices and sockets (which could block forever or
// never end) before opening them and again on the opened descriptor, checks
// sizes before reading, and every writer checks each write and leaves no
// partial file behind.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace texplan {

// The most a protobuf message (a model, a serialized tensor) can hold.
inline constexpr int64_t kMaxProtobufBytes = (int64_t(1) << 31) - 1;

// A regular file open for reading. `what` starts every Error message.
// Refused (Error) when missing, not a regular file (checked with stat before
// opening, and with fstat after: no race can make it a FIFO), or over
// `max_bytes`.
class RegularFile {
 public:
  RegularFile(const std::filesystem::path& path, const std::string& what, int64_t max_bytes = INT64_MAX);
  ~RegularFile();
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  int64_t size() const { return size_; }
  // Reads exactly `n` bytes at `offset`; Error if the file ends first.
  void read_at(int64_t offset, void* dst, int64_t n) const;
  std::string read_all() const;

 private:
  std::filesystem::path path_;
  std::string what_;
  int fd_ = -1;
  int64_t size_ = 0;
};

// The whole of a regular file (see RegularFile).
std::string read_regular_file(const std::filesystem::path& path, const std::string& what,
                              int64_t max_bytes = kMaxProtobufBytes);

// `path` resolved through its symlinks, which must stay inside `dir` (also
// resolved): a test-data file or weights file that is a link to /dev/zero or
// to ../../secret is refused. Error names `what`.
std::filesystem::path confined_to(const std::filesystem::path& dir, const std::filesystem::path& path,
                                  const std::string& what);

// Writes `bytes` to `path`. A regular file (or a new one) is written under a
// temporary name in the same folder and renamed over `path` only once every
// byte is written and closed without error, so a failed write leaves the old
// file (or none). Anything else (/dev/stdout, a pipe, /dev/full) is written
// directly, every write checked. Error: "cannot write 'PATH': REASON", with
// `what` before it when given.
void write_file(const std::filesystem::path& path, std::string_view bytes, const std::string& what = "");

}  // namespace texplan
