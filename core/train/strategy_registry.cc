#include "core/train/strategy_registry.h"

#include <deque>
#include <mutex>

#include "core/train/async_ps.h"
#include "core/train/hybrid.h"
#include "core/train/local_sgd.h"
#include "core/train/sync_allreduce.h"

namespace dtlab::core {
namespace {

struct Registry {
  std::mutex mutex;
  std::deque<StrategyDescriptor> entries;  // a deque: references survive later additions
};

void checkComplete(const StrategyDescriptor& d, const std::deque<StrategyDescriptor>& entries) {
  if (d.name.empty()) throw Error("a strategy needs a name");
  if (!d.make) throw Error("strategy '" + d.name + "' has no make function");
  for (const StrategyDescriptor& e : entries)
    if (e.name == d.name) throw Error("strategy '" + d.name + "' is registered already");
  for (const SettingSchema& s : d.settings) {
    if (s.key.empty()) throw Error("strategy '" + d.name + "' has a setting without a key");
    if (s.when && findSetting(d.settings, s.when->key) == nullptr)
      throw Error("setting '" + s.key + "' of strategy '" + d.name + "' depends on '" +
                  s.when->key + "', which the strategy does not have");
  }
}

Registry& registry() {
  static Registry* instance = [] {
    auto* r = new Registry;  // never destroyed: strategies may be looked up during exit
    // The built-in strategies, in the order the spec and the GUI list them; the first is the
    // default.
    for (StrategyDescriptor d : {syncAllReduceDescriptor(), asyncPsDescriptor(), sspDescriptor(),
                                 localSgdDescriptor(), hybridDescriptor()}) {
      checkComplete(d, r->entries);
      r->entries.push_back(std::move(d));
    }
    return r;
  }();
  return *instance;
}

}  // namespace

std::vector<const StrategyDescriptor*> strategies() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<const StrategyDescriptor*> out;
  for (const StrategyDescriptor& d : r.entries) out.push_back(&d);
  return out;
}

const StrategyDescriptor* findStrategy(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (name.empty()) return &r.entries.front();
  for (const StrategyDescriptor& d : r.entries)
    if (d.name == name) return &d;
  return nullptr;
}

const StrategyDescriptor& strategyOf(const VariantConfig& variant) {
  const StrategyDescriptor* d = findStrategy(variant.strategy);
  if (d == nullptr)
    throw Error("strategy '" + variant.strategy + "' is not available in this build (it has: " +
                strategyList([](const StrategyDescriptor&) { return true; }) + ")");
  return *d;
}

void registerStrategy(StrategyDescriptor descriptor) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  checkComplete(descriptor, r.entries);
  r.entries.push_back(std::move(descriptor));
}

std::vector<std::string> strategyNames() {
  std::vector<std::string> names;
  for (const StrategyDescriptor* d : strategies()) names.push_back(d->name);
  return names;
}

VariantConfig defaultVariant(std::string_view strategy) {
  const StrategyDescriptor* d = findStrategy(strategy);
  if (d == nullptr) throw Error("strategy '" + std::string(strategy) + "' is not registered");
  VariantConfig v;
  v.name = d->name;
  v.strategy = d->name;
  for (const SettingSchema& s : d->settings)
    if (d->view(v).applies(s.key)) v.settings.set(s.key, s.defaultValue);
  return v;
}

std::unique_ptr<Strategy> makeStrategy(StrategyContext& context) {
  return strategyOf(context.job.spec.variants.at(static_cast<std::size_t>(context.job.variant)))
      .make(context);
}

std::string strategyList(const std::function<bool(const StrategyDescriptor&)>& pick) {
  std::vector<std::string> names;
  for (const StrategyDescriptor* d : strategies())
    if (pick(*d)) names.push_back(d->name);
  return listText(names);
}

}  // namespace dtlab::core
