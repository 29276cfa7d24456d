#pragma once
// Settings (core/spec/settings.h) read from and written to a spec's JSON: shared by the
// variants' strategy settings and the dataset kinds' parameters.
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/spec/settings.h"
#include "core/spec/spec_reader.h"

namespace dtlab::core::spec_detail {

// `value` checked against the setting's type and range; throws SpecError at `path`.
SettingValue readSetting(const nlohmann::json& value, const std::string& path,
                         const SettingSchema& setting);
// The value as the writer puts it (a single-precision real as the shortest decimal that reads
// back as the same float).
nlohmann::json settingJson(const SettingSchema& setting, const SettingValue& value);
// Each setting of `schema` that applies, as settingJson writes it, into the object `out`; a
// setting whose 0 stands for a word (zeroMeans) is left out at 0, which is how it reads back.
void writeSettings(std::span<const SettingSchema> schema, const SettingsView& view,
                   nlohmann::json& out);
// `value` as one of `choices`; throws SpecError at `path` naming them (and the closest).
std::string toChoiceName(const nlohmann::json& value, const std::string& path,
                         const std::vector<std::string>& choices);
// After an owner's settings were read from `r`: one given whose condition does not hold is
// refused (it would be ignored), and the others that apply take their defaults, so a parsed
// owner holds every setting that applies.
void completeSettings(std::span<const SettingSchema> schema, SettingValues& values,
                      ObjectReader& r);
// The shortest decimal that reads back as the same float ("0.05", not 0.05000000074505806).
nlohmann::json floatJson(float value);

}  // namespace dtlab::core::spec_detail
