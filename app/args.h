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

class Args {
 public:
  // valueFlags take a value; switches do not. Repeatable flags keep every value.
  Args(const std::vector<std::string>& argv, const std::set<std::string>& valueFlags,
       const std::set<std::string>& switches);

  const std::vector<std::string>& positionals() const { return positionals_; }
  bool has(const std::string& flag) const;
  std::string value(const std::string& flag, const std::string& fallback) const;
  std::vector<std::string> values(const std::string& flag) const;
  // Integer in [min, max]; UsageError naming the flag otherwise.
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
