#include "core/spec/setting_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/spec/spec_reader.h"

namespace dtlab::core::spec_detail {

std::string toChoiceName(const json& value, const std::string& path,
                         const std::vector<std::string>& choices) {
  const std::vector<std::string_view> allowed(choices.begin(), choices.end());
  std::string reason = concat("must be one of ", joinNames(allowed), "; got ", describe(value));
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    if (std::find(choices.begin(), choices.end(), text) != choices.end()) return text;
    if (const std::string suggestion = closest(text, allowed); !suggestion.empty())
      reason += " (did you mean '" + suggestion + "'?)";
  }
  throw SpecError(path, reason);
}

SettingValue readSetting(const json& value, const std::string& path, const SettingSchema& s) {
  switch (s.type) {
    case SettingType::kInteger:
      return toInteger(value, path, static_cast<int64_t>(s.min), static_cast<int64_t>(s.max));
    case SettingType::kReal: {
      const Interval allowed{s.min, s.max, !s.minOpen, !s.maxOpen};
      if (s.singlePrecision) return static_cast<double>(toReal32(value, path, allowed));
      return toReal(value, path, allowed);
    }
    case SettingType::kChoice:
      return toChoiceName(value, path, s.choices);
  }
  return {};
}

json floatJson(float value) {
  // Falls back to the exact double in the rare case where reading the short form as a double
  // and then narrowing it rounds differently.
  if (!std::isfinite(value)) return static_cast<double>(value);
  const std::string text = formatFloat(value);
  double shortest = 0.0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), shortest);
  if (result.ec == std::errc() && static_cast<float>(shortest) == value) return shortest;
  return static_cast<double>(value);
}

json settingJson(const SettingSchema& setting, const SettingValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return *i;
  if (const auto* d = std::get_if<double>(&value))
    return setting.singlePrecision ? floatJson(static_cast<float>(*d)) : json(*d);
  return std::get<std::string>(value);
}

void writeSettings(std::span<const SettingSchema> schema, const SettingsView& view, json& out) {
  for (const SettingSchema& s : schema) {
    if (!view.applies(s.key)) continue;
    const SettingValue& value = view.value(s.key);
    if (!s.zeroMeans.empty() && value == SettingValue(int64_t{0})) continue;
    out[s.key] = settingJson(s, value);
  }
}

void completeSettings(std::span<const SettingSchema> schema, SettingValues& values,
                      ObjectReader& r) {
  const SettingsView view(schema, values);
  for (const SettingSchema& s : schema) {
    if (!view.applies(s.key)) {
      if (values.has(s.key))
        throw SpecError(r.pathOf(s.key), "applies only to " + conditionText(*s.when));
      continue;
    }
    if (!values.has(s.key)) values.set(s.key, s.defaultValue);
  }
}

}  // namespace dtlab::core::spec_detail
