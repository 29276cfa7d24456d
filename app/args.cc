#include "app/args.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <stdexcept>

namespace dtlab::app {
namespace {

bool dryRunMode = false;

// How an integer flag's value is written: one integer, a comma-separated list of them, or a
// list whose items may end in K, M or G. Ordered: each admits what the ones before it do.
enum class IntegerSyntax { kOne, kList, kListWithSuffixes };

// Every flag a dtlab-cli or dtlab-node command reads with integer() or integers(), with the
// loosest syntax any command reads it with (--local-nodes is one integer to `run`, a list to
// `bench allreduce`). A dry run checks the value of each of these a command declares; ranges
// and checks between flags are the command's own, after its Args. integer() and integers()
// refuse a flag missing here, so that the dry run cannot fall behind the commands.
const std::map<std::string, IntegerSyntax>& integerFlags() {
  using enum IntegerSyntax;
  static const std::map<std::string, IntegerSyntax> flags = {
      {"--batch", kOne},
      {"--blocks", kOne},
      {"--buckets", kOne},
      {"--bytes", kListWithSuffixes},
      {"--channels", kOne},
      {"--classes", kOne},
      {"--connect-timeout", kOne},
      {"--every", kOne},
      {"--execution", kOne},
      {"--from-step", kOne},
      {"--heads", kOne},
      {"--hidden", kList},
      {"--in", kOne},
      {"--ingest-reps", kOne},
      {"--iters", kOne},
      {"--layers", kOne},
      {"--local-nodes", kList},
      {"--nodes", kList},
      {"--nodes-per-host", kOne},
      {"--params", kOne},
      {"--points", kOne},
      {"--query-points", kOne},
      {"--rank", kOne},
      {"--repeats", kOne},
      {"--reps", kOne},
      {"--samples", kOne},
      {"--seed", kOne},
      {"--step", kOne},
      {"--steps", kOne},
      {"--threads", kOne},
      {"--to-step", kOne},
      {"--tokens", kOne},
      {"--until", kOne},
      {"--wait", kOne},
      {"--warmup", kOne},
      {"--workers", kOne},
      {"--world", kOne},
  };
  return flags;
}

void requireDeclared(const std::string& flag, IntegerSyntax syntax) {
  const auto it = integerFlags().find(flag);
  if (it == integerFlags().end() || it->second < syntax)
    throw std::logic_error("Args: " + flag + " is read as " +
                           (syntax == IntegerSyntax::kOne ? "an integer" : "a list of integers") +
                           " but app/args.cc's integerFlags() does not declare it so (a dry run "
                           "would not check it): add it there");
}

// The comma-separated items of `text`; an empty item is a UsageError.
std::vector<std::string> splitList(const std::string& flag, const std::string& text) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    if (end == begin) throw UsageError(flag + ": empty item in '" + text + "'");
    items.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return items;
}

int64_t parseInteger(const std::string& flag, const std::string& text, int64_t min, int64_t max,
                     bool binarySuffixes) {
  int64_t v = 0;
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(text.data(), last, v);
  int shift = 0;
  if (binarySuffixes && ec == std::errc() && end + 1 == last) {
    shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : -1;
  } else if (ec != std::errc() || end != last) {
    shift = -1;
  }
  if (shift < 0 || (shift > 0 && v > (int64_t{1} << (62 - shift))))
    throw UsageError(flag + ": expected an integer" +
                     (binarySuffixes ? std::string(" (optionally with K, M or G)") : "") +
                     ", got '" + text + "'");
  v <<= shift;
  if (v < min || v > max)
    throw UsageError(flag + ": must be in [" + std::to_string(min) + ", " + std::to_string(max) +
                     "], got " + text);
  return v;
}

// A dry run's check of an integer flag's value: its syntax, as integer() or integers() reads it.
void checkIntegerSyntax(const std::string& flag, const std::string& text) {
  const auto it = integerFlags().find(flag);
  if (it == integerFlags().end()) return;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (it->second == IntegerSyntax::kOne) {
    parseInteger(flag, text, kMin, kMax, false);
    return;
  }
  for (const std::string& item : splitList(flag, text))
    parseInteger(flag, item, kMin, kMax, it->second == IntegerSyntax::kListWithSuffixes);
}

}  // namespace

void setDryRun(bool on) {
  dryRunMode = on;
}

bool dryRun() {
  return dryRunMode;
}

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& valueFlags,
           const std::set<std::string>& switches) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    // A long option, or a short one a command declares by name ("-o").
    const bool declared = valueFlags.count(arg) != 0 || switches.count(arg) != 0;
    if ((arg.rfind("--", 0) != 0 && !declared) || arg == "--") {
      positionals_.push_back(arg);
      continue;
    }
    std::string name = arg;
    std::string value;
    bool inlineValue = false;
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inlineValue = true;
    }
    if (switches.count(name) != 0) {
      if (inlineValue) throw UsageError(name + ": takes no value");
      switches_.insert(name);
    } else if (valueFlags.count(name) != 0) {
      if (!inlineValue) {
        if (i + 1 >= argv.size()) throw UsageError(name + ": missing value");
        value = argv[++i];
      }
      values_.emplace(name, value);
    } else {
      throw UsageError("unknown option " + name);
    }
  }
  if (dryRun()) {
    // The value the command would read: the last one of a repeated flag.
    for (auto it = values_.begin(); it != values_.end(); it = values_.upper_bound(it->first))
      checkIntegerSyntax(it->first, value(it->first, ""));
    throw DryRunDone{};
  }
}

bool Args::has(const std::string& flag) const {
  return switches_.count(flag) != 0 || values_.count(flag) != 0;
}

std::string Args::value(const std::string& flag, const std::string& fallback) const {
  const auto range = values_.equal_range(flag);
  if (range.first == range.second) return fallback;
  return std::prev(range.second)->second;  // the last one wins
}

std::vector<std::string> Args::values(const std::string& flag) const {
  std::vector<std::string> out;
  const auto range = values_.equal_range(flag);
  for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
  return out;
}

int64_t Args::integer(const std::string& flag, int64_t fallback, int64_t min, int64_t max) const {
  requireDeclared(flag, IntegerSyntax::kOne);
  if (!has(flag)) return fallback;
  return parseInteger(flag, value(flag, ""), min, max, false);
}

std::vector<std::string> Args::list(const std::string& flag) const {
  if (!has(flag)) return {};
  return splitList(flag, value(flag, ""));
}

std::vector<int64_t> Args::integers(const std::string& flag, const std::vector<int64_t>& fallback,
                                    int64_t min, int64_t max, bool binarySuffixes) const {
  requireDeclared(flag, binarySuffixes ? IntegerSyntax::kListWithSuffixes : IntegerSyntax::kList);
  if (!has(flag)) return fallback;
  std::vector<int64_t> out;
  for (const std::string& item : list(flag))
    out.push_back(parseInteger(flag, item, min, max, binarySuffixes));
  return out;
}

}  // namespace dtlab::app
