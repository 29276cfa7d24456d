#pragma once
// The spec parser's typed access to JSON (internal to core/spec): messages that describe
// what was received, did-you-mean suggestions, checked numbers and choices, and ObjectReader,
// which reads one JSON object's fields and refuses any it does not know.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_names.h"

namespace dtlab::core::spec_detail {

using detail::concat;
using nlohmann::json;

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// Formatting for messages.

// A short description of a received value. Containers are named, never dumped: dumping recurses,
// and a hostile document may be nested deeply enough to overflow the stack.
inline std::string describe(const json& value) {
  constexpr size_t kMaxShown = 48;
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case json::value_t::number_float: {
      const double number = value.get<double>();
      return std::isfinite(number) ? value.dump() : formatNumber(number);
    }
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return value.dump();
    case json::value_t::string: {
      const auto& text = value.get_ref<const std::string&>();
      const json shown = text.size() > kMaxShown ? text.substr(0, kMaxShown) + "..." : text;
      return shown.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    case json::value_t::array:
      return value.empty() ? "an empty array" : "an array";
    case json::value_t::object:
      return value.empty() ? "an empty object" : "an object";
    case json::value_t::binary:
      return "binary data";
    case json::value_t::discarded:
      break;
  }
  return "an unknown value";
}

// Keys are user text and land in paths; keep them readable.
inline std::string displayKey(std::string_view key) {
  constexpr size_t kMaxShown = 48;
  if (key.size() <= kMaxShown) return std::string(key);
  return std::string(key.substr(0, kMaxShown)) + "...";
}

inline std::string joinPath(const std::string& parent, std::string_view key) {
  return parent.empty() ? displayKey(key) : parent + "." + displayKey(key);
}

// ---------------------------------------------------------------------------------------------
// "Did you mean" suggestions.

// Optimal string alignment distance (Levenshtein plus adjacent transpositions), ignoring case,
// so "clases", "optimiser", "trainSize" and "lebal_noise" all find their field.
inline size_t editDistance(std::string_view a, std::string_view b) {
  const auto lower = [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// The closest candidate when it is close enough to be a plausible typo, else empty.
template <typename Names>
std::string closest(std::string_view word, const Names& candidates) {
  constexpr size_t kMaxCompared = 64;  // longer words are not typos of a field name
  if (word.size() > kMaxCompared) return {};
  std::string best;
  size_t bestDistance = std::numeric_limits<size_t>::max();
  for (std::string_view candidate : candidates) {
    const size_t distance = editDistance(word, candidate);
    const size_t allowed = std::max<size_t>(1, std::min<size_t>(3, candidate.size() / 3));
    if (distance <= allowed && distance < bestDistance) {
      best = std::string(candidate);
      bestDistance = distance;
    }
  }
  if (!best.empty()) return best;
  // Shortened names ("warmup", "batch", "label") are too far by edits but obvious as prefixes.
  constexpr size_t kMinPrefix = 3;
  const auto lowerCase = [](std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const std::string lowerWord = lowerCase(word);
  if (lowerWord.size() < kMinPrefix) return {};
  for (std::string_view candidate : candidates)
    if (lowerCase(candidate).starts_with(lowerWord)) return std::string(candidate);
  return {};
}

inline std::string joinNames(std::span<const std::string_view> names) {
  std::string out;
  for (std::string_view name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Conversions of one JSON value. Each throws SpecError naming `path`.

// Integral values in [min, max]. 3.0 is accepted as 3 (JSON writers may not distinguish).
inline int64_t toInteger(const json& value, const std::string& path, int64_t min, int64_t max) {
  const auto below = [&](const std::string& got) -> SpecError {
    if (min == 1) return SpecError(path, "must be a positive integer, got " + got);
    if (min == 0) return SpecError(path, "must be a non-negative integer, got " + got);
    return SpecError(path, concat("must be at least ", min, ", got ", got));
  };
  const auto above = [&](const std::string& got) {
    return SpecError(path, concat("must be at most ", max, ", got ", got));
  };
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    // nlohmann stores every non-negative literal, 0 included, as unsigned.
    if (min > 0 && v < static_cast<uint64_t>(min)) throw below(describe(value));
    if (v > static_cast<uint64_t>(max)) throw above(describe(value));
    return static_cast<int64_t>(v);
  }
  if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    if (v < min) throw below(describe(value));
    if (v > max) throw above(describe(value));
    return v;
  }
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (!std::isfinite(v) || v != std::floor(v))
      throw SpecError(path, "must be an integer, got " + describe(value));
    // Compare as doubles first: the cast is undefined outside int64's range.
    if (v < static_cast<double>(min)) throw below(describe(value));
    if (v >= 9223372036854775808.0 || v > static_cast<double>(max)) throw above(describe(value));
    const auto integer = static_cast<int64_t>(v);
    if (integer < min) throw below(describe(value));
    if (integer > max) throw above(describe(value));
    return integer;
  }
  throw SpecError(path, "must be an integer, got " + describe(value));
}

inline uint64_t toUnsigned(const json& value, const std::string& path) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    if (v < 0) throw SpecError(path, "must be a non-negative integer, got " + describe(value));
    return static_cast<uint64_t>(v);
  }
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (!std::isfinite(v) || v != std::floor(v))
      throw SpecError(path, "must be a non-negative integer, got " + describe(value));
    if (v < 0) throw SpecError(path, "must be a non-negative integer, got " + describe(value));
    if (v >= 18446744073709551616.0)
      throw SpecError(path, "must be at most 18446744073709551615, got " + describe(value));
    return static_cast<uint64_t>(v);
  }
  throw SpecError(path, "must be a non-negative integer, got " + describe(value));
}

// A set of allowed real values, described in messages as "> 0" or "in [0, 1)".
struct Interval {
  double lo;
  double hi;
  bool loClosed;
  bool hiClosed;

  bool contains(double v) const {
    return (loClosed ? v >= lo : v > lo) && (hiClosed ? v <= hi : v < hi);
  }
  std::string text() const {
    if (hi == kInf) return concat(loClosed ? ">= " : "> ", formatNumber(lo));
    return concat("in ", loClosed ? "[" : "(", formatNumber(lo), ", ", formatNumber(hi),
                  hiClosed ? "]" : ")");
  }
};

inline constexpr Interval kPositive{0, kInf, false, false};
inline constexpr Interval kNonNegative{0, kInf, true, false};
inline constexpr Interval kDecayRate{0, 1, true, false};   // momentum, betas, rho: 1 never forgets
inline constexpr Interval kProbability{0, 1, true, true};  // label noise
inline constexpr Interval kFraction{0, 1, false, true};    // target accuracy, step gamma
inline constexpr Interval kTurns{0, 100, false, true};     // beyond this the arms are just noise
// A node's emulation (cluster.nodes[i], hostfile lines): speed, latency_ms.
inline constexpr Interval kNodeSpeed{0, 1000, false, true};
inline constexpr Interval kNodeLatencyMs{0, 10000, true, true};

inline double toReal(const json& value, const std::string& path, const Interval& allowed) {
  if (!value.is_number()) throw SpecError(path, "must be a number, got " + describe(value));
  const double v = value.get<double>();
  if (!std::isfinite(v)) throw SpecError(path, "must be a finite number, got " + describe(value));
  if (!allowed.contains(v))
    throw SpecError(path, concat("must be ", allowed.text(), ", got ", describe(value)));
  return v;
}

// Checks the value as stored (a float), so 0.99999999 for a momentum, which is 1 as a float, is
// rejected rather than silently becoming 1.
inline float toReal32(const json& value, const std::string& path, const Interval& allowed) {
  if (!value.is_number()) throw SpecError(path, "must be a number, got " + describe(value));
  const double v = value.get<double>();
  if (!std::isfinite(v)) throw SpecError(path, "must be a finite number, got " + describe(value));
  if (std::fabs(v) > std::numeric_limits<float>::max())
    throw SpecError(path, "is too large for a 32-bit float, got " + describe(value));
  const auto f = static_cast<float>(v);
  if (!allowed.contains(f)) {
    std::string reason = concat("must be ", allowed.text(), ", got ", describe(value));
    if (static_cast<double>(f) != v) reason += concat(" (", formatFloat(f), " as a 32-bit float)");
    throw SpecError(path, reason);
  }
  return f;
}

template <typename E, size_t N>
E toChoice(const json& value, const std::string& path, const NamedValue<E> (&names)[N]) {
  std::vector<std::string_view> allowed;
  for (const auto& named : names) allowed.push_back(named.name);
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    for (const auto& named : names)
      if (text == named.name) return named.value;
    std::string reason = concat("must be one of ", joinNames(allowed), "; got ", describe(value));
    if (const std::string suggestion = closest(text, allowed); !suggestion.empty())
      reason += " (did you mean '" + suggestion + "'?)";
    throw SpecError(path, reason);
  }
  throw SpecError(path, concat("must be one of ", joinNames(allowed), "; got ", describe(value)));
}

// ---------------------------------------------------------------------------------------------
// ObjectReader: typed access to the fields of one JSON object.

class ObjectReader {
 public:
  // Rejects a non-object and any key not in `fields` up front, so a misspelt field is reported
  // before the checks that its absence would otherwise trip.
  ObjectReader(const json& object, std::string path, std::span<const std::string_view> fields)
      : object_(object), path_(std::move(path)), fields_(fields), read_(fields.size(), false) {
    if (!object.is_object())
      throw SpecError(path_.empty() ? "(json)" : path_,
                      "must be a JSON object, got " + describe(object));
    for (const auto& item : object.items()) {
      const std::string& key = item.key();
      if (std::find(fields_.begin(), fields_.end(), key) != fields_.end()) continue;
      const std::string suggestion = closest(key, fields_);
      throw SpecError(joinPath(path_, key),
                      suggestion.empty() ? "unknown field; known fields: " + joinNames(fields_)
                                         : "unknown field (did you mean '" + suggestion + "'?)");
    }
  }

  const std::string& path() const { return path_; }
  std::string pathOf(std::string_view key) const { return joinPath(path_, key); }

  // The value of `key`, or nullptr when the field is absent.
  const json* find(std::string_view key) {
    const auto known = std::find(fields_.begin(), fields_.end(), key);
    DTLAB_ENFORCE(known != fields_.end(), "field '", key, "' of '", path_,
                  "' is read but missing from its list of fields");
    read_[static_cast<size_t>(known - fields_.begin())] = true;
    const auto it = object_.find(std::string(key));
    return it == object_.end() ? nullptr : &*it;
  }
  bool has(std::string_view key) { return find(key) != nullptr; }
  // Nullable fields: null and absence both mean "not set".
  bool isSet(std::string_view key) {
    const json* value = find(key);
    return value != nullptr && !value->is_null();
  }
  std::string describeField(std::string_view key) {
    const json* value = find(key);
    return value ? describe(*value) : "nothing";
  }

  std::optional<int64_t> integer(std::string_view key, int64_t min, int64_t max) {
    const json* value = find(key);
    if (!value) return std::nullopt;
    return toInteger(*value, pathOf(key), min, max);
  }
  std::optional<uint64_t> unsignedInteger(std::string_view key) {
    const json* value = find(key);
    if (!value) return std::nullopt;
    return toUnsigned(*value, pathOf(key));
  }
  std::optional<double> real(std::string_view key, const Interval& allowed) {
    const json* value = find(key);
    if (!value) return std::nullopt;
    return toReal(*value, pathOf(key), allowed);
  }
  std::optional<float> real32(std::string_view key, const Interval& allowed) {
    const json* value = find(key);
    if (!value) return std::nullopt;
    return toReal32(*value, pathOf(key), allowed);
  }
  std::optional<bool> boolean(std::string_view key) {
    const json* value = find(key);
    if (!value) return std::nullopt;
    if (!value->is_boolean())
      throw SpecError(pathOf(key), "must be true or false, got " + describe(*value));
    return value->get<bool>();
  }
  std::optional<std::string> text(std::string_view key) {
    const json* value = find(key);
    if (!value) return std::nullopt;
    if (!value->is_string())
      throw SpecError(pathOf(key), "must be a string, got " + describe(*value));
    return value->get<std::string>();
  }
  template <typename E, size_t N>
  std::optional<E> choice(std::string_view key, const NamedValue<E> (&names)[N]) {
    const json* value = find(key);
    if (!value) return std::nullopt;
    return toChoice(*value, pathOf(key), names);
  }
  // An absent object reads as {} so that its defaults apply.
  ObjectReader child(std::string_view key, std::span<const std::string_view> fields) {
    const json* value = find(key);
    static const json kEmpty = json::object();
    return ObjectReader(value ? *value : kEmpty, pathOf(key), fields);
  }

  // Called after parsing: a listed field that no code reads would be accepted and then ignored.
  void finish() const {
    for (size_t i = 0; i < fields_.size(); ++i)
      DTLAB_ENFORCE(read_[i], "field '", fields_[i], "' of '", path_,
                    "' is listed but never read by the parser");
  }

 private:
  const json& object_;
  std::string path_;
  std::span<const std::string_view> fields_;
  std::vector<bool> read_;
};

// A field that the chosen kind does not use may still be written with its default (toJson()
// writes every field), but any other value would be ignored without a word, so it is rejected.
template <typename T>
void rejectIfChanged(ObjectReader& reader, std::string_view key, T value, T defaultValue, bool used,
                     const std::string& usedBy, const char* kindName) {
  if (used || !reader.has(key) || value == defaultValue) return;
  throw SpecError(reader.pathOf(key), concat("only used by ", usedBy, ", not by ", kindName,
                                             "; remove it (got ", reader.describeField(key), ")"));
}

}  // namespace dtlab::core::spec_detail
