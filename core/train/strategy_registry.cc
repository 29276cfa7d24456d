#include "core/train/strategy_registry.h"

#include "core/common/check.h"
#include "core/common/registry.h"
#include "core/train/strategy.h"

namespace dtlab::core {
namespace {

void checkComplete(const StrategyDescriptor& d) {
  if (!d.make) throw Error("strategy '" + d.name + "' has no make function");
  checkSchema(d.settings, "strategy '" + d.name + "'");
}

Registry<StrategyDescriptor>& registry() {
  // Never destroyed: strategies may be looked up during exit. The built-in strategies, in the
  // order the spec and the GUI list them; the first is the default.
  static auto* instance = [] {
    std::vector<StrategyDescriptor> builtIns = builtinStrategies();
    // A spec's default variant names the default strategy without asking the registry.
    DTLAB_ENFORCE(!builtIns.empty() && builtIns.front().name == kDefaultStrategy,
                  "the first built-in strategy is ", kDefaultStrategy);
    return new Registry<StrategyDescriptor>("strategy", checkComplete, std::move(builtIns));
  }();
  return *instance;
}

}  // namespace

const char* toString(NodeLossPolicy policy) {
  switch (policy) {
    case NodeLossPolicy::kFail:
      return "fail";
    case NodeLossPolicy::kContinue:
      return "continue";
    case NodeLossPolicy::kRestart:
      return "restart";
  }
  return "fail";
}

SettingSchema onNodeLossSetting(NodeLossPolicy survives) {
  DTLAB_ENFORCE(survives != NodeLossPolicy::kFail, "a policy that survives a lost node");
  SettingSchema s{.key = "on_node_loss",
                  .type = SettingType::kChoice,
                  .label = "On node\nloss",
                  .help = survives == NodeLossPolicy::kContinue
                              ? "When a worker's node is lost: fail the run, or let the other "
                                "workers continue"
                              : "When a node is lost: fail the run, or restart the group on the "
                                "surviving nodes from the last checkpoint",
                  .defaultValue = std::string(toString(NodeLossPolicy::kFail)),
                  .choices = {toString(NodeLossPolicy::kFail), toString(survives)}};
  return s;
}

NodeLossPolicy nodeLossPolicy(const VariantConfig& variant) {
  const StrategyDescriptor& strategy = strategyOf(variant);
  if (findSetting(strategy.settings, "on_node_loss") == nullptr) return NodeLossPolicy::kFail;
  const std::string& value = strategy.view(variant).choice("on_node_loss");
  for (NodeLossPolicy p : {NodeLossPolicy::kContinue, NodeLossPolicy::kRestart})
    if (value == toString(p)) return p;
  return NodeLossPolicy::kFail;
}

std::vector<const StrategyDescriptor*> strategies() {
  return registry().all();
}

const StrategyDescriptor* findStrategy(std::string_view name) {
  return registry().find(name);
}

const StrategyDescriptor& strategyOf(const VariantConfig& variant) {
  const StrategyDescriptor* d = findStrategy(variant.strategy);
  if (d == nullptr)
    throw Error("strategy '" + variant.strategy + "' is not available in this build (it has: " +
                strategyList([](const StrategyDescriptor&) { return true; }) + ")");
  return *d;
}

void registerStrategy(StrategyDescriptor descriptor) {
  registry().add(std::move(descriptor));
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

VariantConfig canonicalVariant(const VariantConfig& variant) {
  const StrategyDescriptor* strategy = findStrategy(variant.strategy);
  if (strategy == nullptr) return variant;  // an unknown strategy: compared as written
  VariantConfig out = variant;
  out.strategy = strategy->name;
  if (out.name.empty()) out.name = strategy->name;
  out.settings = canonicalSettings(strategy->settings, variant.settings);
  return out;
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
