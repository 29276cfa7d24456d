#pragma once
// The strategies this build can run, each described once by a StrategyDescriptor that its own
// files define (name, traits, settings schema, checks, how to build it). The spec's parser and
// writer, the training loop, the coordinator, the node daemon, the GUI's variants table and the
// comparison read this list; no code outside a strategy's own files names that strategy.
// Adding one: core/train/README.md.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/metrics/event_facts.h"
#include "core/sim/calibration.h"
#include "core/sim/step_models.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/settings.h"

namespace dtlab::core {

class Strategy;
struct StrategyContext;

// What the rest of DTLab needs to know of a strategy without knowing which one it is.
struct StrategyTraits {
  // Workers exchange gradients and weights through parameter-server shards (one shard per
  // node, on the run's first ps_shards nodes), so a node runs one worker of such a variant.
  bool usesParameterServer = false;
  // The ranks form a collective group (Gloo or NCCL) for the run.
  bool needsCollectiveGroup = true;
  // Keeps checkpoints (core/train/checkpoint.h: Strategy::checkpoint and restore) when the
  // spec asks for them, so a run can resume and a lost node's state be restored; a strategy
  // without them refuses resume and notes that it keeps none.
  bool keepsCheckpoints = false;
  // Its runs record the order the parameter server applied their pushes in, and replay from
  // that record to the same parameters (core/train/ps_replay.h): async_ps, ssp and the
  // hybrid's asynchronous phases. (A synchronous strategy's workers agree on every step, so
  // its runs repeat from the seed.)
  bool replaysFromRecord = false;
  // Switches between synchronous and asynchronous training during a run (the hybrid): a run
  // may end in either phase, and its record holds only the asynchronous ones, so the replicas
  // replayed to the record's end are not the run's final parameters.
  bool switchesPhases = false;
};

// Where a variant check stands in the spec, for its messages.
struct VariantCheckContext {
  const ExperimentSpec& spec;  // parsed up to the variants (dataset, training, cluster)
  int64_t runNodes;            // the nodes this variant runs on
  std::string path;            // "variants[2]"
};

// For strategies with a parameter server whose board watches the straggler ratio: the ratio
// above which the run trains asynchronously and the steps it must hold.
struct ServerWatchSettings {
  double above = 0.0;
  int64_t window = 0;
};

struct StrategyDescriptor {
  std::string name;     // the spec's "strategy" value
  std::string summary;  // one line: what it does (GUI tooltips)
  StrategyTraits traits;
  // The strategy's own settings, in the order specs and tables show them.
  std::vector<SettingSchema> settings;
  // Checks the schema cannot express (a value against the cluster or another section); throws
  // SpecError naming the field. Optional.
  std::function<void(const VariantConfig&, const VariantCheckContext&)> check;
  // For usesParameterServer: what the server's board watches (nullopt: nothing). Optional.
  std::function<std::optional<ServerWatchSettings>(const VariantConfig&)> serverWatch;
  // Builds one rank's strategy.
  std::function<std::unique_ptr<Strategy>(StrategyContext&)> make;
  // The scale simulator's model of a variant of it (core/sim/step_models.h) on a modelled
  // cluster; empty: the simulator has no model of this strategy yet, and says so. Optional.
  std::function<sim::SimResult(const VariantConfig&, const sim::ClusterModel&,
                               const sim::ModelShape&, const sim::SimOptions&)>
      simulate;
  // What its runs' per-step transfers measure for the simulator's calibration, and how a
  // variant's synchronous steps cut their gradients: from the variant, and from what a run's
  // "start" event's facts say it measured (`measured`; empty for a run yet to be). Optional:
  // nothing (TransferPath::kNone).
  std::function<sim::TransferPattern(const VariantConfig&, const CollectiveFacts& measured)>
      transferPattern;

  SettingsView view(const VariantConfig& variant) const { return {settings, variant.settings}; }
};

// What a run does when one of its nodes is lost (the variant setting "on_node_loss").
enum class NodeLossPolicy {
  kFail,      // the run fails naming the node (every strategy)
  kContinue,  // the other workers go on without it (parameter-server strategies)
  kRestart,   // the group re-forms from the survivors at the last checkpoint (synchronous)
};
const char* toString(NodeLossPolicy policy);
// The "on_node_loss" setting of a strategy that can survive a lost node, offering "fail" and
// `survives` ("continue" or "restart"). A strategy without it always fails.
SettingSchema onNodeLossSetting(NodeLossPolicy survives);
// The variant's policy: its "on_node_loss" value, kFail for a strategy without the setting.
NodeLossPolicy nodeLossPolicy(const VariantConfig& variant);

// Every registered strategy, in registration order (the built-in ones first). The first is the
// default of a variant that names none. References stay valid for the life of the process.
std::vector<const StrategyDescriptor*> strategies();
// The descriptor named `name`, or nullptr.
const StrategyDescriptor* findStrategy(std::string_view name);
// The descriptor of a variant's strategy; throws Error naming an unknown one.
const StrategyDescriptor& strategyOf(const VariantConfig& variant);
// Adds a strategy (a plug-in, or a test's own). Throws Error when the name is taken or the
// descriptor is incomplete. Register before any spec that names it is parsed.
void registerStrategy(StrategyDescriptor descriptor);
// The names of every registered strategy, in order.
std::vector<std::string> strategyNames();
// A variant of `strategy` (empty: the default) named after it, every setting at its default.
VariantConfig defaultVariant(std::string_view strategy = {});
// The variant as its strategy reads it (core/spec/settings.h's canonicalSettings), its name and
// strategy spelled out; an unknown strategy's variant as it is.
VariantConfig canonicalVariant(const VariantConfig& variant);
// Builds the variant's strategy for one rank; throws Error when it is not registered.
std::unique_ptr<Strategy> makeStrategy(StrategyContext& context);
// "async_ps, ssp and hybrid": the registered strategies for which `pick` holds.
std::string strategyList(const std::function<bool(const StrategyDescriptor&)>& pick);

// The strategies this build comes with, first the default (core/train/builtin_strategies.cc,
// which includes each of them: the registry itself includes none, since they include it).
std::vector<StrategyDescriptor> builtinStrategies();

}  // namespace dtlab::core
