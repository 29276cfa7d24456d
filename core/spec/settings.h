#pragma once
// Settings described by a schema: what a strategy or a dataset kind declares about
// each of its own settings (key, type, range, default, one line of help, which other setting it
// depends on), and the values a spec gives them. The spec's parser and writer, the GUI's tables
// and the run summaries read the schema; nothing outside the owner of a setting needs to know
// it exists.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace dtlab::core {

enum class SettingType {
  kInteger,  // int64 in [min, max]
  kReal,     // double in the interval (min, max), each end open or closed
  kChoice,   // one of `choices`
};

// An integer setting's value, a real's, or a choice's name.
using SettingValue = std::variant<int64_t, double, std::string>;

// "Applies only while setting `key` holds one of `values`" (a hybrid's switch_at needs the
// policy sync_then_async).
struct SettingCondition {
  std::string key;
  std::vector<std::string> values;
};

struct SettingSchema {
  std::string key;  // the JSON key ("staleness")
  SettingType type = SettingType::kInteger;
  std::string label;  // a table's column title; may hold one line break ("PS\nshards")
  std::string help;   // one line: what it does
  SettingValue defaultValue = int64_t{0};
  double min = 0.0;  // numbers: the allowed range
  double max = 0.0;
  bool minOpen = false;  // reals: whether the ends are excluded
  bool maxOpen = false;
  std::vector<std::string> choices{};  // kChoice: the names, the default among them
  std::optional<SettingCondition> when{};
  // An integer whose default 0 stands for a word: "all" (ps_shards: every node of the run) or
  // "auto" (bucket_kb: from the group's measured all-reduce). Left out of written specs while 0,
  // shown as the word, and a given value is at least `min`. Empty: 0 is a plain number.
  std::string zeroMeans{};
  // A real kept as a 32-bit float: a spec's value is rounded to one (and refused beyond its
  // range), and written back as the shortest decimal that reads as that float.
  bool singlePrecision = false;

  // The range as messages and tooltips show it ("1..1000000", "in (0, 1)").
  std::string rangeText() const;
};

// The values of one owner's settings, by key. A parsed spec holds every setting that applies
// (defaults filled in); one built in code may hold fewer, and readers fall back to the schema's
// default (SettingsView).
class SettingValues {
 public:
  bool has(std::string_view key) const { return values_.find(key) != values_.end(); }
  const SettingValue* find(std::string_view key) const;
  void set(const std::string& key, SettingValue value) { values_[key] = std::move(value); }
  void erase(std::string_view key);
  const std::map<std::string, SettingValue, std::less<>>& all() const { return values_; }
  bool empty() const { return values_.empty(); }

  bool operator==(const SettingValues&) const = default;

 private:
  std::map<std::string, SettingValue, std::less<>> values_;
};

// One owner's values read through its schema: a missing value reads as the default, and a key
// the schema does not declare, or a value of the wrong type, is a programming error
// (EnforceError naming the key).
class SettingsView {
 public:
  SettingsView(std::span<const SettingSchema> schema, const SettingValues& values)
      : schema_(schema), values_(values) {}
  int64_t integer(std::string_view key) const;
  double real(std::string_view key) const;
  const std::string& choice(std::string_view key) const;
  // The value, or the default when none is given.
  const SettingValue& value(std::string_view key) const { return valueOf(schemaOf(key)); }
  // Whether the setting's condition holds (true for a setting without one).
  bool applies(std::string_view key) const;
  // Whether the schema has the setting at all.
  bool declares(std::string_view key) const;

 private:
  const SettingSchema& schemaOf(std::string_view key) const;
  const SettingValue& valueOf(const SettingSchema& setting) const;

  std::span<const SettingSchema> schema_;
  const SettingValues& values_;
};

const SettingSchema* findSetting(std::span<const SettingSchema> schema, std::string_view key);
// Throws Error naming `owner` ("strategy 'ssp'") for a setting without a key or one whose
// condition names a setting the schema lacks.
void checkSchema(std::span<const SettingSchema> schema, const std::string& owner);
// The value as JSON-like text for messages and tables: 3, 0.5, "adaptive" (without quotes).
std::string settingText(const SettingValue& value);
// The condition as messages say it: "partition": "speed_proportional" (or "a" or "b").
std::string conditionText(const SettingCondition& condition);
// Names as a sentence lists them: "a", "a and b", "a, b and c".
std::string listText(const std::vector<std::string>& names);

// The values as their owner computes with them, so that two owners' values compare equal
// exactly when they are the same settings: every setting of the schema that applies, with its
// default where absent and a single-precision real as the float it is rounded to; keys the
// schema does not declare, and settings whose condition does not hold, dropped.
SettingValues canonicalSettings(std::span<const SettingSchema> schema, const SettingValues& values);

// A config of a registered kind (a dataset's, a model's: `kind` and `parameters`) as the kind
// reads it: the kind named and the parameters canonical; as written when `kind` is null (not
// registered in this build).
template <typename Config, typename Kind>
Config canonicalKindConfig(const Config& config, const Kind* kind) {
  if (kind == nullptr) return config;
  Config out = config;
  out.kind = kind->name;
  out.parameters = canonicalSettings(kind->parameters, config.parameters);
  return out;
}

}  // namespace dtlab::core
