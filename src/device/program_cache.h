// Compiled OpenCL programs kept on disk, so that the next process on the same
// device builds them from their binaries instead of compiling the source
// (docs/cli.md#program-cache). One file a program, named by a hash of what
// decides the binary: the platform and device (names, versions, driver), the
// whole source text and the build options. A file is written under a
// temporary name in the cache's folder and renamed into place, so a reader
// (another process too) sees a whole file or none; a header with the key's
// second hash, the binary's size and its checksum tells a whole file from a
// damaged or foreign one, which is then a miss. Every failure (no folder, no
// permission, a full disk) makes the cache a miss or a skipped write and is
// kept as the first `problem()`, never thrown.
//
// Not thread-safe: its Device calls it under its program lock.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace texplan::runtime {

// The folder used when DeviceOptions::program_cache_dir is empty:
// $TEXPLAN_CACHE_DIR, else $XDG_CACHE_HOME/texplan/programs, else
// $HOME/.cache/texplan/programs ("" when none of them is set).
std::filesystem::path default_program_cache_dir();

class ProgramCache {
 public:
  // `device_identity`: every fact about the device and its driver that a
  // binary depends on. The folder is created on the first store.
  ProgramCache(std::filesystem::path dir, std::string device_identity, int64_t max_bytes);

  // The key of a program: the device identity, the source, the options.
  struct Key {
    uint64_t name_hash = 0, check_hash = 0;
  };
  Key key(const std::string& source, const std::string& options) const;

  // The binary stored under `key`, or nothing (absent, damaged, foreign).
  std::optional<std::vector<unsigned char>> load(const Key& key);
  // Stores `binary` under `key`; then, when the folder holds more than
  // max_bytes, deletes the least recently used files.
  void store(const Key& key, const std::vector<unsigned char>& binary);
  // Deletes the file of `key` (its binary was rejected by the driver).
  void forget(const Key& key);

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path file_of(const Key& key) const;
  // The first thing that went wrong, e.g. "cannot create /x: Permission denied".
  const std::string& problem() const { return problem_; }

 private:
  void note(const std::string& what);
  void evict(const std::filesystem::path& keep);

  std::filesystem::path dir_;
  std::string identity_;
  int64_t max_bytes_;
  int64_t stored_bytes_ = -1;  // the folder's bytes as last counted (-1: not yet)
  bool folder_ready_ = false;
  std::string problem_;
};

}  // namespace texplan::runtime
