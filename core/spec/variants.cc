#include "core/spec/variants.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/spec/section_fields.h"
#include "core/spec/setting_json.h"
#include "core/spec/spec_reader.h"
#include "core/train/strategy_registry.h"

namespace dtlab::core::spec_detail {
namespace {

// Fields of every variant, whatever its strategy: the schema's (core/spec/spec_fields.h).
std::span<const std::string_view> commonFields() {
  return specSectionKeys("variants[i]");
}

// Settings that writers before 2026-12 put on every variant, whatever its strategy: a variant
// whose strategy does not take one still reads it (checked as its owners check it) and drops
// it, when it holds the value the old writer wrote for a strategy that ignored it (any value
// where `value` is empty), so that saved projects keep opening. Any other value is refused.
struct LegacySetting {
  std::string_view key;
  std::string_view value;
};
constexpr LegacySetting kLegacySettings[] = {{"partition", "equal"}, {"bucket_kb", ""}};

// Every key a variant object may hold: the common fields, then each registered strategy's
// settings (the first declaration of a shared key), then legacy keys nobody declares now.
std::vector<std::string_view> variantFields(const std::vector<const StrategyDescriptor*>& all) {
  std::vector<std::string_view> fields(commonFields().begin(), commonFields().end());
  auto add = [&](std::string_view key) {
    if (std::find(fields.begin(), fields.end(), key) == fields.end()) fields.push_back(key);
  };
  for (const StrategyDescriptor* d : all)
    for (const SettingSchema& s : d->settings) add(s.key);
  for (const LegacySetting& legacy : kLegacySettings) add(legacy.key);
  return fields;
}

// Who reads `key`, for the message that refuses it elsewhere: "ssp", "async_ps, ssp and
// hybrid", or "\"strategy\": \"hybrid\" with \"policy\": \"adaptive\"".
std::string ownersOf(std::string_view key, const std::vector<const StrategyDescriptor*>& all) {
  std::vector<std::pair<const StrategyDescriptor*, const SettingSchema*>> owners;
  for (const StrategyDescriptor* d : all)
    if (const SettingSchema* s = findSetting(d->settings, key)) owners.emplace_back(d, s);
  if (owners.size() == 1 && owners.front().second->when)
    return "\"strategy\": \"" + owners.front().first->name + "\" with " +
           conditionText(*owners.front().second->when);
  return strategyList(
      [&](const StrategyDescriptor& d) { return findSetting(d.settings, key) != nullptr; });
}

// A key the variant's strategy does not declare: refused, unless an old writer's.
void refuseForeign(ObjectReader& r, std::string_view key, const json& value,
                   const StrategyDescriptor& strategy,
                   const std::vector<const StrategyDescriptor*>& all) {
  const std::string owners = ownersOf(key, all);
  for (const LegacySetting& legacy : kLegacySettings) {
    if (legacy.key != key) continue;
    for (const StrategyDescriptor* d : all)  // a value its owners would refuse is wrong anyway
      if (const SettingSchema* s = findSetting(d->settings, key)) {
        readSetting(value, r.pathOf(key), *s);
        break;
      }
    if (legacy.value.empty() || (value.is_string() && value.get<std::string>() == legacy.value))
      return;
  }
  throw SpecError(r.pathOf(key), concat("applies only to ", owners.empty() ? "no strategy" : owners,
                                        ", not to \"strategy\": \"", strategy.name, "\""));
}

VariantConfig parseVariant(ObjectReader& r, const ExperimentSpec& spec,
                           const std::vector<const StrategyDescriptor*>& all,
                           const std::vector<std::string_view>& fields) {
  VariantConfig v;
  const StrategyDescriptor* strategy = all.front();
  if (const json* name = r.find("strategy")) {
    const std::string chosen = toChoiceName(*name, r.pathOf("strategy"), strategyNames());
    strategy = findStrategy(chosen);
  }
  v.strategy = strategy->name;
  const int64_t clusterNodes = spec.cluster.localNodes;
  SectionFields f(r, "variants[i]");
  if (auto n = f.integer("nodes")) {
    if (*n > clusterNodes)
      throw SpecError(r.pathOf("nodes"),
                      concat("at most the cluster's ", clusterNodes, " nodes, got ", *n));
    v.nodes = *n;
  }

  // The strategy's own settings as given; any other setting is refused by name.
  for (std::string_view key : fields) {
    if (std::find(commonFields().begin(), commonFields().end(), key) != commonFields().end())
      continue;
    const json* value = r.find(key);
    if (value == nullptr) continue;
    if (const SettingSchema* own = findSetting(strategy->settings, key))
      v.settings.set(own->key, readSetting(*value, r.pathOf(key), *own));
    else
      refuseForeign(r, key, *value, *strategy, all);
  }
  completeSettings(strategy->settings, v.settings, r);

  v.name = strategy->name;
  if (auto name = r.text("name")) {
    const IntegerBounds bytes = f.size("name");
    if (static_cast<int64_t>(name->size()) < bytes.min ||
        static_cast<int64_t>(name->size()) > bytes.max)
      throw SpecError(r.pathOf("name"),
                      concat("must be a non-empty string of at most ", bytes.max, " bytes"));
    v.name = *name;
  }
  if (strategy->check) {
    const VariantCheckContext context{spec, v.nodes > 0 ? v.nodes : clusterNodes, r.path()};
    strategy->check(v, context);
  }
  r.finish();
  return v;
}

}  // namespace

std::vector<VariantConfig> parseVariants(const json* list, const std::string& path,
                                         const ExperimentSpec& spec) {
  if (list == nullptr) return {defaultVariant()};
  if (!list->is_array() || list->empty())
    throw SpecError(path, "must be a non-empty list of strategy variants, got " + describe(*list));
  const int64_t maxVariants = specSection("").field("variants").size->max;
  if (list->size() > static_cast<std::size_t>(maxVariants))
    throw SpecError(path, concat("at most ", maxVariants, " variants, got ", list->size()));
  const std::vector<const StrategyDescriptor*> all = strategies();
  const std::vector<std::string_view> fields = variantFields(all);
  std::vector<VariantConfig> variants;
  for (std::size_t i = 0; i < list->size(); ++i) {
    ObjectReader r((*list)[i], concat(path, "[", i, "]"), fields);
    VariantConfig v = parseVariant(r, spec, all, fields);
    for (const VariantConfig& earlier : variants)
      if (earlier.name == v.name)
        throw SpecError(r.pathOf("name"),
                        "duplicate variant name '" + v.name + "'; give each variant its own name");
    variants.push_back(std::move(v));
  }
  return variants;
}

json variantsJson(const std::vector<VariantConfig>& variants) {
  json out = json::array();
  for (const VariantConfig& v : variants) {
    const StrategyDescriptor& strategy = strategyOf(v);
    json variant = {{"name", v.name.empty() ? strategy.name : v.name}, {"strategy", strategy.name}};
    if (v.nodes > 0) variant["nodes"] = v.nodes;
    writeSettings(strategy.settings, strategy.view(v), variant);
    out.push_back(std::move(variant));
  }
  return out;
}

}  // namespace dtlab::core::spec_detail

namespace dtlab::core {

int variantOfRun(const ExperimentSpec& spec, const std::string& runName) {
  if (spec.variants.size() == 1) return 0;
  const std::string name = runName.substr(runName.rfind('/') + 1);
  for (std::size_t v = 0; v < spec.variants.size(); ++v)
    if (spec.variants[v].name == name) return static_cast<int>(v);
  throw Error("run '" + runName + "': its spec has no variant named '" + name + "'");
}

}  // namespace dtlab::core
