#include "core/spec/settings.h"

#include <cmath>

#include <algorithm>

#include "core/common/check.h"
#include "core/spec/number_format.h"

namespace dtlab::core {

std::string SettingSchema::rangeText() const {
  using spec_detail::formatNumber;
  switch (type) {
    case SettingType::kInteger: {  // in full: 0..1000000, not 0..1e+06
      // Doubles hold every integer up to 2^53 exactly; a bound beyond that means "no limit".
      constexpr double kExact = 9007199254740992.0;
      const std::string low = std::to_string(static_cast<int64_t>(std::max(min, -kExact)));
      if (max >= kExact) return std::string(">= ").append(low);
      return low + ".." + std::to_string(static_cast<int64_t>(max));
    }
    case SettingType::kReal:
      if (std::isinf(max)) return (minOpen ? "> " : ">= ") + formatNumber(min);
      return std::string("in ") + (minOpen ? "(" : "[") + formatNumber(min) + ", " +
             formatNumber(max) + (maxOpen ? ")" : "]");
    case SettingType::kChoice: {
      std::string out;
      for (const std::string& c : choices) out += (out.empty() ? "" : ", ") + c;
      return out;
    }
  }
  return {};
}

const SettingValue* SettingValues::find(std::string_view key) const {
  const auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

void SettingValues::erase(std::string_view key) {
  const auto it = values_.find(key);
  if (it != values_.end()) values_.erase(it);
}

const SettingSchema* findSetting(std::span<const SettingSchema> schema, std::string_view key) {
  const auto it = std::find_if(schema.begin(), schema.end(),
                               [&](const SettingSchema& s) { return s.key == key; });
  return it == schema.end() ? nullptr : &*it;
}

std::string settingText(const SettingValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) return spec_detail::formatNumber(*d);
  return std::get<std::string>(value);
}

std::string conditionText(const SettingCondition& condition) {
  std::string out = "\"" + condition.key + "\": ";
  for (std::size_t i = 0; i < condition.values.size(); ++i)
    out += (i == 0 ? "" : " or ") + ("\"" + condition.values[i] + "\"");
  return out;
}

const SettingSchema& SettingsView::schemaOf(std::string_view key) const {
  const SettingSchema* setting = findSetting(schema_, key);
  DTLAB_ENFORCE(setting != nullptr, "setting '", key, "' is not in the schema");
  return *setting;
}

const SettingValue& SettingsView::valueOf(const SettingSchema& setting) const {
  const SettingValue* value = values_.find(setting.key);
  return value != nullptr ? *value : setting.defaultValue;
}

int64_t SettingsView::integer(std::string_view key) const {
  const SettingValue& value = valueOf(schemaOf(key));
  DTLAB_ENFORCE(std::holds_alternative<int64_t>(value), "setting '", key, "' is not an integer");
  return std::get<int64_t>(value);
}

double SettingsView::real(std::string_view key) const {
  const SettingValue& value = valueOf(schemaOf(key));
  if (const auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  DTLAB_ENFORCE(std::holds_alternative<double>(value), "setting '", key, "' is not a number");
  return std::get<double>(value);
}

const std::string& SettingsView::choice(std::string_view key) const {
  const SettingValue& value = valueOf(schemaOf(key));
  DTLAB_ENFORCE(std::holds_alternative<std::string>(value), "setting '", key, "' is not a choice");
  return std::get<std::string>(value);
}

bool SettingsView::declares(std::string_view key) const {
  return findSetting(schema_, key) != nullptr;
}

bool SettingsView::applies(std::string_view key) const {
  const SettingSchema& setting = schemaOf(key);
  if (!setting.when) return true;
  const SettingSchema& on = schemaOf(setting.when->key);
  const std::string held = settingText(valueOf(on));
  const auto& values = setting.when->values;
  return std::find(values.begin(), values.end(), held) != values.end() &&
         applies(setting.when->key);
}

void checkSchema(std::span<const SettingSchema> schema, const std::string& owner) {
  for (const SettingSchema& s : schema) {
    if (s.key.empty()) throw Error(owner + " has a setting without a key");
    if (s.when && findSetting(schema, s.when->key) == nullptr)
      throw Error("setting '" + s.key + "' of " + owner + " depends on '" + s.when->key +
                  "', which it does not have");
  }
}

std::string listText(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

SettingValues canonicalSettings(std::span<const SettingSchema> schema,
                                const SettingValues& values) {
  const SettingsView view(schema, values);
  SettingValues out;
  for (const SettingSchema& s : schema) {
    if (!view.applies(s.key)) continue;
    if (s.singlePrecision)
      out.set(s.key, static_cast<double>(static_cast<float>(view.real(s.key))));
    else
      out.set(s.key, view.value(s.key));
  }
  return out;
}

}  // namespace dtlab::core
