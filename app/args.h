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

 private:
  std::multimap<std::string, std::string> values_;
  std::set<std::string> switches_;
  std::vector<std::string> positionals_;
};

}  // namespace dtlab::app
