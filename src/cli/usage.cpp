#include "cli/usage.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "graph/graph.h"
#include "graph/safe_file.h"
#include "plan/memory_plan.h"

namespace texplan::cli {

size_t edit_distance(std::string_view a, std::string_view b) {
  // d[i][j]: distance of a's first i letters to b's first j; names are short.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string closest(const std::string& given, const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const auto& n : names) {
    const size_t d = edit_distance(given, n);
    const size_t allowed = std::clamp<size_t>(std::max(given.size(), n.size()) / 3, 1, 3);
    if (d <= allowed && d < best_distance) best = n, best_distance = d;
  }
  return best;
}

std::string unknown_name(const std::string& what, const std::string& given, const std::vector<std::string>& names) {
  std::string msg = "unknown " + what + " '" + given + "'";
  if (const std::string near = closest(given, names); !near.empty()) msg += "; did you mean '" + near + "'?";
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  return msg + " (known: " + known + ")";
}

CLI::Validator one_of(const std::string& what, std::vector<std::string> names) {
  return CLI::Validator(
      [what, names](std::string& value) -> std::string {
        if (std::find(names.begin(), names.end(), value) != names.end()) return "";
        return unknown_name(what, value, names);
      },
      "", what);
}

CLI::Validator strategy_name(bool allow_all) {
  std::vector<std::string> names = plan::strategy_names();
  if (allow_all) names.push_back("all");
  return one_of("strategy", names);
}

CLI::Validator device_spec(std::vector<std::string> names) {
  return CLI::Validator(
      [names](std::string& value) -> std::string {
        if (std::find(names.begin(), names.end(), value) != names.end()) return "";
        if (value.starts_with("opencl:") && value.size() > 7 &&
            std::all_of(value.begin() + 7, value.end(), [](unsigned char c) { return std::isdigit(c); }))
          return "";
        std::vector<std::string> shown = names;
        shown.push_back("opencl:N");
        return unknown_name("device", value, shown);
      },
      "", "device");
}

namespace {

// The whole of `text` as a finite number, or nothing.
bool parse_number(const std::string& text, double& value) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  errno = 0;
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && errno == 0 && std::isfinite(value);
}

std::string number_text(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

}  // namespace

CLI::Validator whole_number(long long min, long long max) {
  return CLI::Validator(
      [min, max](std::string& value) -> std::string {
        double v = 0;
        if (!parse_number(value, v) || v != std::floor(v) || v < double(min) || v > double(max))
          return "expected a whole number >= " + std::to_string(min) +
                 (max < (1LL << 53) ? " and <= " + std::to_string(max) : "") + ", got '" + value + "'";
        return "";
      },
      "", "whole number");
}

CLI::Validator number_in(double min, double max, bool min_open) {
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        double v = 0;
        if (!parse_number(value, v) || v < min || (min_open && v == min) || v > max)
          return (std::isinf(max) ? std::string("expected a number ") + (min_open ? "> " : ">= ") + number_text(min)
                                  : "expected a number in " + std::string(min_open ? "(" : "[") + number_text(min) +
                                        ", " + number_text(max) + "]") +
                 ", got '" + value + "'";
        return "";
      },
      "", "number");
}

CLI::Validator extension_in(const std::string& what, std::vector<std::string> extensions) {
  return CLI::Validator(
      [what, extensions](std::string& value) -> std::string {
        std::string lower = value;
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
        for (const auto& x : extensions)
          if (lower.size() > x.size() && lower.ends_with(x)) return "";
        std::string list;
        for (size_t i = 0; i < extensions.size(); ++i)
          list += (i == 0 ? "" : i + 1 == extensions.size() ? " or " : ", ") + extensions[i];
        return "'" + value + "': the extension decides the " + what + "'s format: give a " + list + " file name";
      },
      "", "file");
}

CLI::Validator in_existing_folder(const std::string& what) {
  return CLI::Validator(
      [what](std::string& value) -> std::string {
        const std::filesystem::path p(value);
        const std::filesystem::path folder = p.has_parent_path() ? p.parent_path() : ".";
        std::error_code ec;
        if (std::filesystem::is_directory(p, ec)) return "'" + value + "': a folder, not a " + what + " file name";
        if (!std::filesystem::is_directory(folder, ec))
          return "'" + value + "': no folder '" + folder.string() + "' to write the " + what + " in";
        return "";
      },
      "", "file");
}

void write_output(const std::string& path, std::string_view bytes, const std::string& what) {
  if (!is_stdout(path)) return write_file(path, bytes, what);
  std::cout.flush();
  std::cerr.flush();
  while (!bytes.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error((what.empty() ? "" : what + ": ") + "cannot write to stdout: " + std::strerror(n < 0 ? errno : EIO));
    bytes.remove_prefix(size_t(n));
  }
}

}  // namespace texplan::cli
