#include "app/args.h"

#include <algorithm>
#include <charconv>

namespace dtlab::app {

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

namespace {

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

}  // namespace

int64_t Args::integer(const std::string& flag, int64_t fallback, int64_t min, int64_t max) const {
  if (!has(flag)) return fallback;
  return parseInteger(flag, value(flag, ""), min, max, false);
}

std::vector<std::string> Args::list(const std::string& flag) const {
  std::vector<std::string> items;
  if (!has(flag)) return items;
  const std::string text = value(flag, "");
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    if (end == begin) throw UsageError(flag + ": empty item in '" + text + "'");
    items.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return items;
}

std::vector<int64_t> Args::integers(const std::string& flag, const std::vector<int64_t>& fallback,
                                    int64_t min, int64_t max, bool binarySuffixes) const {
  if (!has(flag)) return fallback;
  std::vector<int64_t> out;
  for (const std::string& item : list(flag))
    out.push_back(parseInteger(flag, item, min, max, binarySuffixes));
  return out;
}

}  // namespace dtlab::app
