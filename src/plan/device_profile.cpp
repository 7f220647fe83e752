// Device profiles as JSON: one object whose keys are the DeviceProfile
// fields. Unknown keys are rejected so that a typo cannot silently fall
// back to a default; missing keys take the struct's defaults.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "plan/memory_plan.h"


namespace texplan::plan {

// profiles/*.json, compiled in (cmake/embed_files.cmake): a binary carried
// to another machine still knows its profiles.
const std::map<std::string, std::string>& builtin_profile_files();

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Every field once, so reading and writing cannot drift apart.
template <class Profile, class Visit>
void for_each_field(Profile& d, Visit&& visit) {
  visit("name", d.name);
  visit("source", d.source);
  visit("device_type", d.device_type);
  visit("image_support", d.image_support);
  visit("max_image2d_width", d.max_image2d_width);
  visit("max_image2d_height", d.max_image2d_height);
  visit("max_image1d_buffer_pixels", d.max_image1d_buffer_pixels);
  visit("image2d_from_buffer", d.image2d_from_buffer);
  visit("image_pitch_alignment", d.image_pitch_alignment);
  visit("image_base_address_alignment", d.image_base_address_alignment);
  visit("mem_base_addr_align", d.mem_base_addr_align);
  visit("fp16", d.fp16);
  visit("global_mem_bytes", d.global_mem_bytes);
  visit("max_alloc_bytes", d.max_alloc_bytes);
  visit("auto_textures", d.auto_textures);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw PlanError("cannot read device profile " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string DeviceProfile::to_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();  // fields in struct order, as in profiles/
  for_each_field(*this, [&](const char* key, const auto& value) { j[key] = value; });
  return j.dump(2) + "\n";
}

DeviceProfile DeviceProfile::from_json(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw PlanError(std::string("device profile is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw PlanError("device profile must be a JSON object");
  DeviceProfile d;
  size_t known = 0;
  for_each_field(d, [&](const char* key, auto& value) {
    auto it = j.find(key);
    if (it == j.end()) return;
    ++known;
    try {
      it->get_to(value);
    } catch (const json::exception&) {
      throw PlanError(std::string("device profile field '") + key + "' has the wrong type: " + it->dump());
    }
  });
  if (known != j.size()) {
    for (const auto& item : j.items()) {
      const std::string& key = item.key();  // not a structured binding: clang < 16 cannot capture those
      bool is_field = false;
      for_each_field(d, [&](const char* k, auto&) { is_field |= key == k; });
      if (!is_field) throw PlanError("device profile has an unknown field '" + key + "'");
    }
  }
  if (d.name.empty()) throw PlanError("device profile needs a 'name'");
  if (d.device_type.empty()) throw PlanError("device profile's 'device_type' is empty (gpu, cpu, ...)");
  return d;
}

std::vector<std::string> DeviceProfile::builtin_names() {
  std::vector<std::string> names;
  for (const auto& [file, text] : builtin_profile_files()) names.push_back(fs::path(file).stem().string());
  return names;
}

DeviceProfile DeviceProfile::load(const std::string& name_or_path) {
  const bool is_path = name_or_path.ends_with(".json") || name_or_path.find('/') != std::string::npos;
  if (!is_path) {
    auto it = builtin_profile_files().find(name_or_path + ".json");
    if (it != builtin_profile_files().end()) return from_json(it->second);
  }
  const fs::path path(name_or_path);
  if (!is_path || !fs::exists(path)) {
    std::string known;
    for (const std::string& n : builtin_names()) known += (known.empty() ? "" : ", ") + n;
    throw PlanError("no device profile '" + name_or_path + "' (builtin: " + known + "; or a path to a .json file)");
  }
  try {
    return from_json(read_file(path));
  } catch (const PlanError& e) {
    throw PlanError(path.string() + ": " + e.what());
  }
}

}  // namespace texplan::plan
