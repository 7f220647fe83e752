// The CLI as a Unix tool: what a usage error is, the exit codes, checks of
// option values before any work starts, and `--json -` (stdout).
//
//   run.add_option("--bench", a.bench, "...")->check(cli::whole_number(0));
//   run.add_option("--strategy", a.strategy, "...")->check(cli::one_of("strategy", names));
//
// A failed check is a CLI::ValidationError: main() prints it as one line,
// "texplan: error: ...", and exits kExitUsage before anything is planned or
// built. docs/cli.md lists the exit codes.
#pragma once
#include <CLI/CLI.hpp>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

namespace texplan::cli {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;         // the model, a file or the device failed
constexpr int kExitUsage = 2;         // the command line is wrong: nothing was done
constexpr int kExitPlanInvalid = 3;   // plan: a strategy's plan failed validation
constexpr int kExitGuard = 4;         // run --guard: a live tensor was overwritten
constexpr int kExitCheckFailed = 5;   // run --check: outputs differ from the reference

// Edit distance: insertions, deletions, substitutions and swaps of two
// neighbouring letters ("bets" is 1 from "best").
size_t edit_distance(std::string_view a, std::string_view b);

// The name in `names` closest to `given`, when close enough to be a typo
// (at most a third of the longer name's letters, at least 1, at most 3
// edits); "" otherwise.
std::string closest(const std::string& given, const std::vector<std::string>& names);

// "unknown strategy 'bets'; did you mean 'best'? (known: a, b, c)"
std::string unknown_name(const std::string& what, const std::string& given, const std::vector<std::string>& names);

// Accepts exactly one of `names`; refuses with unknown_name().
CLI::Validator one_of(const std::string& what, std::vector<std::string> names);

// A memory planning strategy (plan::strategy_names()), or also "all".
CLI::Validator strategy_name(bool allow_all);

// A device spec: the given names or opencl:N.
CLI::Validator device_spec(std::vector<std::string> names);

// A whole number in [min, max]; a finite number in [min, max] (min
// excluded when `min_open`).
CLI::Validator whole_number(long long min, long long max = 1LL << 53);
CLI::Validator number_in(double min, double max = INFINITY, bool min_open = false);

// The file name's extension decides its format: one of `extensions`
// (".svg", ".html"), compared without case.
CLI::Validator extension_in(const std::string& what, std::vector<std::string> extensions);

// A file to write: its folder exists and it is not itself a folder.
CLI::Validator in_existing_folder(const std::string& what);

// "-" names stdout.
inline bool is_stdout(const std::string& path) { return path == "-"; }

// Writes a report: to stdout for "-" (every byte written checked, even when
// std::cout was silenced by --quiet or moved to stderr), else through
// write_file (graph/safe_file.h).
void write_output(const std::string& path, std::string_view bytes, const std::string& what = "");

}  // namespace texplan::cli
