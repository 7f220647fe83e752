#include "lower/tuning_cache.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "graph/graph.h"
#include "graph/safe_file.h"

namespace texplan::lower {

TuningCache::TuningCache(std::string path) : path_(std::move(path)) {
  std::ifstream in(path_);
  if (!in) return;
  std::stringstream text;
  text << in.rdbuf();
  try {
    data_ = nlohmann::json::parse(text.str());
  } catch (const std::exception& e) {
    throw Error("tuning cache " + path_ + " is not JSON: " + e.what());
  }
  if (!data_.is_object() || data_.value("format", "") != "texplan-tuning-cache-1")
    throw Error("tuning cache " + path_ + " is not a texplan tuning cache (no \"format\": \"texplan-tuning-cache-1\")");
}

nlohmann::json& TuningCache::entry(const std::string& section, const std::string& device) {
  nlohmann::json& s = data_[section];
  if (!s.is_object()) s = nlohmann::json::object();
  nlohmann::json& d = s[device];
  if (!d.is_object()) d = nlohmann::json::object();
  return d;
}

void TuningCache::save() const {
  if (path_.empty()) return;
  nlohmann::json out = data_;
  out["format"] = "texplan-tuning-cache-1";
  write_file(path_, out.dump(1) + "\n", "tuning cache");
}

}  // namespace texplan::lower
