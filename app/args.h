#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/common/check.h"

namespace dtlab::app {

// Command-line arguments of one subcommand: `--flag value`, `--flag=value`,
// `--switch`, and positionals. Unknown flags and malformed values throw
// UsageError naming the flag, so every subcommand reports them the same way. A dtlab::Error like
// every error DTLab throws on purpose; the mains catch it first to print the usage line.
class UsageError : public Error {
 public:
  using Error::Error;
};

// dtlab-cli --dry-run: every Args parses its argv as always (UsageError for an unknown flag, a
// missing value, or an integer flag's malformed value: see integerFlags() in args.cc), then its
// constructor throws DryRunDone instead of returning, so the command stops before it does
// anything; main() reports the arguments as parsing. A command constructs its Args before any
// work with effects (reading a file, starting a daemon, connecting). DryRunDone is not a
// std::exception, so that no `catch (const std::exception&)` on the way takes it for a failure.
struct DryRunDone {};
void setDryRun(bool on);
bool dryRun();

class Args {
 public:
  // valueFlags take a value; switches do not. Repeatable flags keep every value. In a dry run
  // (setDryRun), throws DryRunDone once they parse.
  Args(const std::vector<std::string>& argv, const std::set<std::string>& valueFlags,
       const std::set<std::string>& switches);

  const std::vector<std::string>& positionals() const { return positionals_; }
  bool has(const std::string& flag) const;
  std::string value(const std::string& flag, const std::string& fallback) const;
  std::vector<std::string> values(const std::string& flag) const;
  // Integer in [min, max]; UsageError naming the flag otherwise. integer() and integers() read
  // only flags that args.cc's integerFlags() declares with at least that syntax (a logic_error
  // otherwise), so that a dry run checks every integer flag the command reads.
  int64_t integer(const std::string& flag, int64_t fallback, int64_t min, int64_t max) const;
  // The comma-separated items of the flag's value ("a,b,c"); an empty item is a UsageError.
  // Empty when the flag is absent.
  std::vector<std::string> list(const std::string& flag) const;
  // A comma-separated list of integers, each in [min, max]; with `binarySuffixes`, each may end
  // in K, M or G (times 2^10, 2^20, 2^30: "64K,1M"). `fallback` when the flag is absent.
  std::vector<int64_t> integers(const std::string& flag, const std::vector<int64_t>& fallback,
                                int64_t min, int64_t max, bool binarySuffixes = false) const;

 private:
  std::multimap<std::string, std::string> values_;
  std::set<std::string> switches_;
  std::vector<std::string> positionals_;
};

}  // namespace dtlab::app
