#include "core/spec/dataset_section.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/data/dataset_kinds.h"
#include "core/spec/section_fields.h"
#include "core/spec/setting_json.h"

namespace dtlab::core::spec_detail {
namespace {

// Fields of every dataset, whatever its kind: the schema's (core/spec/spec_fields.h).
bool isCommon(std::string_view key) {
  const std::span<const std::string_view> common = specSectionKeys("dataset");
  return std::find(common.begin(), common.end(), key) != common.end();
}

void readClasses(ObjectReader& r, const DatasetKindDescriptor& kind, DatasetConfig& d) {
  const ClassRule& rule = kind.classes;
  d.classes = rule.defaultValue;
  auto v = SectionFields(r, "dataset").integer("classes");
  if (!v) return;
  if (rule.fixed() && *v != rule.minimum)
    throw SpecError(r.pathOf("classes"), concat("is fixed at ", rule.minimum, " for ", kind.name,
                                                "; remove it (got ", *v, ")"));
  if (*v < rule.minimum || *v > rule.maximum)
    throw SpecError(r.pathOf("classes"), concat("must be between ", rule.minimum, " and ",
                                                rule.maximum, " for ", kind.name, ", got ", *v));
  d.classes = *v;
}

void readFeatures(ObjectReader& r, const DatasetKindDescriptor& kind, DatasetConfig& d) {
  const FeatureRule& rule = kind.features;
  d.features = rule.defaultValue;
  auto v = SectionFields(r, "dataset").integer("features");
  if (!v) return;
  if (rule.fixed && *v != rule.defaultValue)
    throw SpecError(r.pathOf("features"), concat("is fixed at ", rule.defaultValue, " for ",
                                                 kind.name, "; remove it (got ", *v, ")"));
  d.features = *v;
}

// A parameter of other kinds, not of this one. The writers before 2026-12 put every kind's
// parameters on every dataset at their defaults, so a value its owners would accept and that
// equals an owner's default is dropped; any other is refused, as it would be ignored.
void refuseForeign(ObjectReader& r, std::string_view key, const json& value,
                   const DatasetKindDescriptor& kind) {
  std::vector<const SettingSchema*> owned;
  for (const DatasetKindDescriptor* other : datasetKinds())
    if (const SettingSchema* s = findSetting(other->parameters, key)) owned.push_back(s);
  const SettingValue given = readSetting(value, r.pathOf(key), *owned.front());
  for (const SettingSchema* s : owned)
    if (given == s->defaultValue) return;
  const std::string owners = datasetKindList(
      [&](const DatasetKindDescriptor& d) { return findSetting(d.parameters, key) != nullptr; });
  throw SpecError(r.pathOf(key), concat("only used by ", owners, ", not by ", kind.name,
                                        "; remove it (got ", describe(value), ")"));
}

void readParameters(ObjectReader& r, std::span<const std::string_view> fields,
                    const DatasetKindDescriptor& kind, DatasetConfig& d) {
  for (std::string_view key : fields) {
    if (isCommon(key)) continue;
    const json* value = r.find(key);
    if (value == nullptr) continue;
    if (const SettingSchema* own = findSetting(kind.parameters, key))
      d.parameters.set(own->key, readSetting(*value, r.pathOf(key), *own));
    else
      refuseForeign(r, key, *value, kind);
  }
  completeSettings(kind.parameters, d.parameters, r);
}

void checkBytes(ObjectReader& r, const DatasetConfig& d) {
  // In doubles: the product of two unchecked sizes can overflow int64.
  const SampleShape shape = sampleShapeOf(d);
  const double bytes = (static_cast<double>(d.trainSize) + static_cast<double>(d.testSize)) *
                       static_cast<double>(shape.features + shape.targets) * 4.0;
  if (bytes <= static_cast<double>(kMaxDatasetBytes)) return;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  std::ostringstream reason;
  reason << std::fixed << std::setprecision(1) << "the dataset would take " << bytes / kGiB
         << " GiB ((train_size + test_size) x (features + targets) x 4 bytes), above the cap of "
         << static_cast<double>(kMaxDatasetBytes) / kGiB << " GiB";
  throw SpecError(r.pathOf("train_size"), reason.str());
}

}  // namespace

std::vector<std::string_view> datasetFields() {
  const std::span<const std::string_view> common = specSectionKeys("dataset");
  std::vector<std::string_view> fields(common.begin(), common.end());
  for (const DatasetKindDescriptor* d : datasetKinds())
    for (const SettingSchema& s : d->parameters)
      if (std::find(fields.begin(), fields.end(), s.key) == fields.end()) fields.push_back(s.key);
  return fields;
}

DatasetConfig parseDataset(ObjectReader& r, std::span<const std::string_view> fields,
                           uint64_t specSeed) {
  DatasetConfig d;
  const DatasetKindDescriptor* kind = findDatasetKind({});
  if (const json* name = r.find("kind"))
    kind = findDatasetKind(toChoiceName(*name, r.pathOf("kind"), datasetKindNames()));
  d.kind = kind->name;
  SectionFields f(r, "dataset");
  if (auto v = f.integer("train_size")) d.trainSize = *v;
  if (auto v = f.integer("test_size")) d.testSize = *v;
  readClasses(r, *kind, d);
  readFeatures(r, *kind, d);
  d.seed = specSeed;
  if (auto v = r.unsignedInteger("seed")) d.seed = *v;
  readParameters(r, fields, *kind, d);
  if (kind->check) kind->check(d, r.path());
  checkBytes(r, d);
  r.finish();
  return d;
}

json datasetJson(const DatasetConfig& d) {
  const DatasetKindDescriptor& kind = datasetKindOf(d);
  json out = {{"kind", kind.name},    {"train_size", d.trainSize}, {"test_size", d.testSize},
              {"classes", d.classes}, {"features", d.features},    {"seed", d.seed}};
  writeSettings(kind.parameters, kind.view(d), out);
  return out;
}

}  // namespace dtlab::core::spec_detail
