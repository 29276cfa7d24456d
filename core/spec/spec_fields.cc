#include "core/spec/spec_fields.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "core/common/check.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/setting_json.h"
#include "core/spec/spec_names.h"
#include "core/spec/spec_reader.h"

namespace dtlab::core {

using detail::concat;
using nlohmann::json;
using namespace spec_detail;

namespace {

using enum SpecFieldType;
using enum SpecDefault;

constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxThreads = 256;
constexpr int64_t kMaxHiddenLayers = 16;
constexpr int64_t kMaxNameBytes = 256;
constexpr int64_t kMaxVariants = 64;
constexpr int64_t kMaxSpeedChanges = 4096;
constexpr int64_t kMaxChangeStep = int64_t{1} << 40;
constexpr int64_t kMaxCheckpointsKept = 100;
constexpr double kMaxPauseMs = 600000.0;

// The reader's intervals (core/spec/spec_reader.h), as the schema states them.
RealBounds bounds(const Interval& i) {
  return {i.lo, i.hi, i.loClosed, i.hiClosed};
}

// Defaults as toJson() writes them, taken from the config types' initialisers.
std::string text(int64_t value) {
  return json(value).dump();
}
std::string text(double value) {
  return json(value).dump();
}
std::string text32(float value) {
  return floatJson(value).dump();
}
std::string text(const char* name) {
  return json(name).dump();
}

constexpr const char* kUnsigned64 = "0..18446744073709551615 (an unsigned 64-bit integer)";

SpecSection topLevel() {
  const ExperimentSpec spec;
  return {
      .path = "",
      .title = "Top level",
      .summary = "A spec is one JSON object with these fields.",
      .fields =
          {
              {.key = "name",
               .type = kString,
               .defaultJson = text(spec.name.c_str()),
               .size = IntegerBounds{1, kMaxNameBytes},
               .allowed = "valid UTF-8"},
              {.key = "seed",
               .type = kInteger,
               .defaultJson = text(static_cast<int64_t>(spec.seed)),
               .allowed = concat(kUnsigned64,
                                 "; seeds the dataset (unless `dataset.seed` gives its own), the "
                                 "initial weights, the data order and emulated stragglers")},
              {.key = "repeats",
               .type = kInteger,
               .defaultJson = text(spec.repeats),
               .integer = IntegerBounds{1, kMaxRepeats},
               .allowed = "how many times one execution runs every variant: each repetition "
                          "with its own seed for initial weights, data order and emulated "
                          "stragglers, the same for every variant within it (the variants stay "
                          "paired); the dataset stays the same"},
              {.key = "dataset", .type = kObject, .defaultForm = kFields, .section = "dataset"},
              {.key = "model", .type = kObject, .defaultForm = kFields, .section = "model"},
              {.key = "optimizer", .type = kObject, .defaultForm = kFields, .section = "optimizer"},
              {.key = "training", .type = kObject, .defaultForm = kFields, .section = "training"},
              {.key = "cluster", .type = kObject, .defaultForm = kFields, .section = "cluster"},
              {.key = "variants",
               .type = kList,
               .defaultForm = kDerived,
               .defaultText = concat("one variant of the default strategy, `", kDefaultStrategy,
                                     "`, its settings at their defaults"),
               .size = IntegerBounds{1, kMaxVariants},
               .section = "variants[i]"},
          },
  };
}

SpecSection datasetSection() {
  const DatasetConfig d;
  return {
      .path = "dataset",
      .title = "dataset",
      .summary =
          "The synthetic dataset: these fields are every kind's; the kind's own parameters sit "
          "beside them ([dataset kinds](dataset-kinds.md)). The data must fit in memory: "
          "`(train_size + test_size) x (features + targets) x 4` bytes at most 4 GiB (refused on "
          "`dataset.train_size`).",
      .more = SpecRegistry::kDatasetKinds,
      .fields =
          {
              {.key = "kind",
               .type = kChoice,
               .defaultForm = kFirstRegistered,
               .registry = SpecRegistry::kDatasetKinds,
               .allowed = "a registered dataset kind: [dataset kinds](dataset-kinds.md) lists "
                          "each with its summary, class and feature rules and its own "
                          "parameters"},
              {.key = "train_size",
               .type = kInteger,
               .defaultJson = text(d.trainSize),
               .integer = IntegerBounds{1, kMaxInt},
               .allowed = "training samples; within the memory cap"},
              {.key = "test_size",
               .type = kInteger,
               .defaultJson = text(d.testSize),
               .integer = IntegerBounds{1, kMaxInt},
               .allowed = "test samples; within the memory cap"},
              {.key = "classes",
               .type = kInteger,
               .defaultForm = kDerived,
               .defaultText = "the kind's",
               .integer = IntegerBounds{1, kMaxWidth},
               .allowed = "outputs (1 for regression), as the kind allows: fixed by some (given "
                          "only with that value), a range for others"},
              {.key = "features",
               .type = kInteger,
               .defaultForm = kDerived,
               .defaultText = "the kind's",
               .integer = IntegerBounds{1, kMaxWidth},
               .allowed = "inputs per sample, as the kind allows: fixed by some (given only "
                          "with that value), any for others"},
              {.key = "seed",
               .type = kInteger,
               .defaultForm = kDerived,
               .defaultText = "the spec's `seed`",
               .allowed = kUnsigned64},
          },
  };
}

SpecSection modelSection() {
  const ModelConfig m;
  return {
      .path = "model",
      .title = "model",
      .summary =
          "The model: a registered kind, its input width the dataset's `features` and its "
          "output width the dataset's `classes` (for a sequence dataset, a distribution over "
          "them per token). These fields are every kind's; the "
          "kind's own settings sit beside them ([model kinds](model-kinds.md)).",
      .more = SpecRegistry::kModelKinds,
      .fields =
          {
              {.key = "kind",
               .type = kChoice,
               .defaultForm = kFirstRegistered,
               .registry = SpecRegistry::kModelKinds,
               .allowed = "a registered model kind: [model kinds](model-kinds.md) (adding one: "
                          "[core/nn/README.md](../../core/nn/README.md))"},
              {.key = "hidden",
               .type = kList,
               .defaultJson = json(m.hidden).dump(),
               .integer = IntegerBounds{1, kMaxWidth},
               .size = IntegerBounds{0, kMaxHiddenLayers},
               .allowed = "hidden layer widths; `[]` is a linear model; at most 2^28 parameters "
                          "in all (refused on `model.hidden`)",
               .usedBy = "mlp, cnn (its dense layers after the convolutions); the transformer "
                         "has its own widths"},
              {.key = "activation",
               .type = kChoice,
               .defaultJson = text(toString(m.activation)),
               .choices = namesOf(kActivationNames)},
              {.key = "init",
               .type = kChoice,
               .defaultJson = text(toString(m.init)),
               .choices = namesOf(kInitNames)},
              {.key = "loss",
               .type = kChoice,
               .defaultJson = text(toString(m.loss)),
               .defaultText = "`\"mse\"` for a regression dataset",
               .choices = namesOf(kLossNames),
               .allowed = "`cross_entropy` needs a classification dataset, `mse` a regression one"},
          },
  };
}

SpecSection optimizerSection() {
  const OptimizerConfig o;
  return {
      .path = "optimizer",
      .title = "optimizer",
      .summary = "The optimizer every worker runs, and its learning-rate schedule.",
      .fields =
          {
              {.key = "kind",
               .type = kChoice,
               .defaultJson = text(toString(o.kind)),
               .choices = namesOf(kOptimizerNames)},
              {.key = "lr",
               .type = kReal,
               .defaultJson = text32(o.lr),
               .defaultText = "`1.0` for adadelta",
               .singlePrecision = true,
               .real = bounds(kPositive),
               .allowed = "the base learning rate"},
              {.key = "momentum",
               .type = kReal,
               .defaultJson = text32(o.momentum),
               .singlePrecision = true,
               .real = bounds(kDecayRate),
               .usedBy = "sgd"},
              {.key = "nesterov",
               .type = kBoolean,
               .defaultJson = json(o.nesterov).dump(),
               .allowed = "`true` needs `momentum` > 0",
               .usedBy = "sgd"},
              {.key = "weight_decay",
               .type = kReal,
               .defaultJson = text32(o.weightDecay),
               .singlePrecision = true,
               .real = bounds(kNonNegative),
               .allowed = "L2 added to the gradient for sgd and adam, decoupled for adamw"},
              {.key = "beta1",
               .type = kReal,
               .defaultJson = text32(o.beta1),
               .singlePrecision = true,
               .real = bounds(kDecayRate),
               .usedBy = "adam, adamw"},
              {.key = "beta2",
               .type = kReal,
               .defaultJson = text32(o.beta2),
               .singlePrecision = true,
               .real = bounds(kDecayRate),
               .usedBy = "adam, adamw"},
              {.key = "eps",
               .type = kReal,
               .defaultJson = text32(o.eps),
               .defaultText = "`1e-6` for adadelta",
               .singlePrecision = true,
               .real = bounds(kPositive),
               .usedBy = "adam, adamw, adadelta"},
              {.key = "rho",
               .type = kReal,
               .defaultJson = text32(o.rho),
               .singlePrecision = true,
               .real = bounds(kDecayRate),
               .usedBy = "adadelta"},
              {.key = "schedule",
               .type = kObject,
               .defaultForm = kFields,
               .section = "optimizer.schedule"},
              {.key = "scale_lr_base_batch",
               .type = kInteger,
               .defaultJson = "null",
               .defaultText = "off",
               .nullable = true,
               .integer = IntegerBounds{1, kMaxInt},
               .allowed = "when set, the linear scaling rule: `lr *= batch_size / "
                          "scale_lr_base_batch`"},
          },
  };
}

SpecSection scheduleSection() {
  const ScheduleConfig s;
  return {
      .path = "optimizer.schedule",
      .title = "optimizer.schedule",
      .summary = "How the learning rate changes over the run's steps.",
      .fields =
          {
              {.key = "kind",
               .type = kChoice,
               .defaultJson = text(toString(s.kind)),
               .choices = namesOf(kScheduleNames)},
              {.key = "warmup_steps",
               .type = kInteger,
               .defaultJson = text(s.warmupSteps),
               .integer = IntegerBounds{0, kMaxInt},
               .allowed = "a linear warm-up from 0 to the base rate over these first steps, "
                          "before any kind"},
              {.key = "step_size",
               .type = kInteger,
               .defaultJson = text(s.stepSize),
               .integer = IntegerBounds{1, kMaxInt},
               .usedBy = "step (its decay period: the rate is multiplied by `gamma` every "
                         "`step_size` steps); cosine (its length when the run has no step or "
                         "epoch limit)"},
              {.key = "gamma",
               .type = kReal,
               .defaultJson = text32(s.gamma),
               .singlePrecision = true,
               .real = bounds(kFraction),
               .usedBy = "step"},
              {.key = "min_lr",
               .type = kReal,
               .defaultJson = text32(s.minLr),
               .singlePrecision = true,
               .real = bounds(kNonNegative),
               .allowed = "and at most `optimizer.lr`: the floor reached at the last step",
               .usedBy = "cosine"},
          },
  };
}

SpecSection trainingSection() {
  const TrainingConfig t;
  return {
      .path = "training",
      .title = "training",
      .summary =
          "How long a run trains, how it evaluates and keeps checkpoints. At least one "
          "of `epochs`, `max_steps` and `max_seconds` must be non-zero (else the spec is "
          "refused on `training`): a target accuracy alone may never be reached.",
      .fields =
          {
              {.key = "batch_size",
               .type = kInteger,
               .defaultJson = text(t.batchSize),
               .integer = IntegerBounds{1, kMaxInt},
               .allowed = "the global batch, divided among the workers; at most "
                          "`dataset.train_size`"},
              {.key = "epochs",
               .type = kInteger,
               .defaultJson = text(t.epochs),
               .integer = IntegerBounds{0, kMaxInt},
               .allowed = "0: no epoch limit"},
              {.key = "max_steps",
               .type = kInteger,
               .defaultJson = text(t.maxSteps),
               .integer = IntegerBounds{0, kMaxInt},
               .allowed = "0: no step limit"},
              {.key = "max_seconds",
               .type = kReal,
               .defaultJson = text(t.maxSeconds),
               .real = bounds(kNonNegative),
               .allowed = "0: no time limit"},
              {.key = "target_accuracy",
               .type = kReal,
               .defaultJson = "null",
               .defaultText = "none",
               .nullable = true,
               .real = bounds(kFraction),
               .allowed = "stop when the test accuracy reaches it"},
              {.key = "eval_interval",
               .type = kInteger,
               .defaultJson = text(t.evalInterval),
               .integer = IntegerBounds{1, kMaxInt},
               .allowed = "steps between evaluations (and one at the end)"},
              {.key = "threads",
               .type = kInteger,
               .defaultJson = text(int64_t{t.threads}),
               .integer = IntegerBounds{0, kMaxThreads},
               .allowed = "0: automatic, 1 for models under ~0.2 GFLOP a step, else all cores",
               .usedBy = "`dtlab-cli train` only; `run` uses `cluster.threads_per_node`"},
              {.key = "precision",
               .type = kChoice,
               .defaultJson = text(nameOf(kPrecisionNames, t.precision)),
               .choices = namesOf(kPrecisionNames),
               .allowed = "the matrix products' arithmetic. `tf32` and `bf16` need "
                          "`cluster.device` `cuda` (the CPU backend computes in fp32 only): "
                          "`tf32` takes the products on tensor cores with TF32 inputs and FP32 "
                          "accumulation; `bf16` takes BF16 inputs and FP32 accumulation, the "
                          "weights, gradients and optimizer state staying FP32"},
              {.key = "data_partition",
               .type = kObject,
               .defaultForm = kFields,
               .section = "training.data_partition"},
              {.key = "checkpoint_every",
               .type = kInteger,
               .defaultJson = text(t.checkpointEvery),
               .integer = IntegerBounds{0, kMaxInt},
               .allowed = "a checkpoint every this many steps (0: none by steps), kept in the "
                          "project for `dtlab-cli resume`",
               .usedBy = "the strategies that keep checkpoints ([strategies](strategies.md))"},
              {.key = "checkpoint_seconds",
               .type = kReal,
               .defaultJson = text(t.checkpointSeconds),
               .real = bounds(kNonNegative),
               .allowed = "a checkpoint when this many seconds passed since the last (0: none "
                          "by time)",
               .usedBy = "the strategies that keep checkpoints"},
              {.key = "checkpoints_kept",
               .type = kInteger,
               .defaultJson = text(t.checkpointsKept),
               .integer = IntegerBounds{1, kMaxCheckpointsKept},
               .allowed = "the newest this many checkpoints of a run stay in the project",
               .usedBy = "the strategies that keep checkpoints"},
          },
  };
}

SpecSection dataPartitionSection() {
  const DataPartitionConfig p;
  return {
      .path = "training.data_partition",
      .title = "training.data_partition",
      .summary =
          "How the training set is divided among a run's workers: `shared`, every worker "
          "draws from the whole set; `iid`, each worker owns a random shard; `dirichlet`, a "
          "label skew, each class spread over the workers by Dir(`alpha`) proportions (a "
          "smaller `alpha`: each worker sees fewer classes). What each does to batches, epochs "
          "and memory: [Experiment specs]"
          "(../specs.md#trainingdata_partition-non-iid-data-per-worker).",
      .fields =
          {
              {.key = "kind",
               .type = kChoice,
               .defaultJson = text(toString(p.kind)),
               .choices = namesOf(kDataPartitionNames),
               .allowed = "`dirichlet` needs a classification dataset"},
              {.key = "alpha",
               .type = kReal,
               .defaultJson = text(p.alpha),
               .real = bounds(kPositive),
               .allowed = "given only with `dirichlet`",
               .usedBy = "dirichlet"},
          },
  };
}

SpecSection clusterSection() {
  const ClusterConfig c;
  return {
      .path = "cluster",
      .title = "cluster",
      .summary =
          "The cluster a run uses when `dtlab-cli run` is given no `--node` or "
          "`--local-nodes`, and the one the GUI runs an experiment on: a local cluster of "
          "`local_nodes` daemons the run starts on loopback, none of `nodes` with an "
          "`address`; or a remote cluster, one entry of `nodes` per running `dtlab-node`, "
          "every one with an `address` (ranks follow the list). More: "
          "[Experiment specs](../specs.md#cluster).",
      .fields =
          {
              {.key = "local_nodes",
               .type = kInteger,
               .defaultJson = text(c.localNodes),
               .defaultText = "with addresses, the number of nodes (and left out)",
               .integer = IntegerBounds{1, kMaxClusterNodes},
               .allowed = "daemons; with addresses, left out or the number of nodes"},
              {.key = "nodes",
               .type = kList,
               .defaultJson = "[]",
               .size = IntegerBounds{0, kMaxClusterNodes},
               .section = "cluster.nodes[i]",
               .allowed = "empty (every node at the defaults), one object (applies to every "
                          "node) or one per node (`local_nodes` of them without addresses)"},
              {.key = "threads_per_node",
               .type = kInteger,
               .defaultJson = text(int64_t{c.threadsPerNode}),
               .integer = IntegerBounds{1, kMaxThreads},
               .allowed = "CPU threads per worker",
               .usedBy = "local nodes (a remote daemon has its own `--threads`)"},
              {.key = "device",
               .type = kChoice,
               .defaultJson = text(c.device.c_str()),
               .choices = {"cpu", "cuda"},
               .allowed =
                   "`cuda`: each node's worker trains on a GPU. A local cluster gives node i the "
                   "GPU `cuda:i` (a machine with fewer GPUs than `local_nodes` is refused); a "
                   "remote daemon uses the one it was started with (`dtlab-node --devices "
                   "cuda:N`) and refuses the job without one. Between GPUs the collectives are "
                   "NCCL's; `sync_allreduce` and `local_sgd` only, so far"},
              {.key = "wait_seconds",
               .type = kInteger,
               .defaultForm = kOmitted,
               .defaultText =
                   concat("unset: ", kDefaultWaitSeconds, ", or what `dtlab-cli run --wait` says"),
               .integer = IntegerBounds{0, kMaxWaitSeconds},
               .allowed = "how long each run waits in the daemons' queues while other runs hold "
                          "its nodes; 0 fails it at once, naming the node and whose run holds "
                          "it (`dtlab-cli run --wait S` and `--no-wait` override it)"},
          },
  };
}

SpecSection nodeSection() {
  const NodeConfig n;
  return {
      .path = "cluster.nodes[i]",
      .title = "cluster.nodes[i]",
      .summary =
          "One node: where it runs, and the emulation of its compute and link. A remote "
          "daemon applies `speed`, `bandwidth_mbps` and `latency_ms` to the run's jobs; "
          "its own `--speed`, `--bandwidth-mbps` and `--latency-ms` are only the default "
          "for jobs that carry none.",
      .fields =
          {
              {.key = "address",
               .type = kString,
               .defaultForm = kOmitted,
               .defaultText = "none: a local node",
               .allowed = "`\"host:port\"` of a running daemon: a host name or IPv4 address, or "
                          "an IPv6 address in brackets (`\"[fe80::1]:7070\"`); port 1..65535; "
                          "on every node or on none, each address once"},
              {.key = "speed",
               .type = kReal,
               .defaultJson = text(n.speed),
               .real = bounds(kNodeSpeed),
               .allowed = "compute takes 1/speed of its real time: each gradient hand-off waits "
                          "until the step's work so far (the worker thread's CPU time with a "
                          "one-thread backend, else wall time) divided by speed has passed, so "
                          "delays shorter than that slack do not show"},
              {.key = "bandwidth_mbps",
               .type = kReal,
               .defaultJson = text(n.bandwidthMbps),
               .real = bounds(kNonNegative),
               .allowed = "0: unlimited; emulated on the node's collectives"},
              {.key = "latency_ms",
               .type = kReal,
               .defaultJson = text(n.latencyMs),
               .real = bounds(kNodeLatencyMs),
               .allowed = "per message step"},
              {.key = "speed_schedule",
               .type = kList,
               .defaultForm = kOmitted,
               .defaultText = "none",
               .size = IntegerBounds{0, kMaxSpeedChanges},
               .section = "cluster.nodes[i].speed_schedule[k]",
               .allowed = "changes of `speed` during the run, steps increasing; before the "
                          "first, the node computes at `speed`"},
              {.key = "straggler",
               .type = kObject,
               .defaultForm = kOmitted,
               .defaultText = "none",
               .section = "cluster.nodes[i].straggler"},
          },
  };
}

SpecSection speedChangeSection() {
  return {
      .path = "cluster.nodes[i].speed_schedule[k]",
      .title = "cluster.nodes[i].speed_schedule[k]",
      .summary = "From step `at_step` on, the node computes at `speed`.",
      .fields =
          {
              {.key = "at_step",
               .type = kInteger,
               .defaultForm = kRequired,
               .integer = IntegerBounds{1, kMaxChangeStep},
               .allowed = "after the previous change's step"},
              {.key = "speed",
               .type = kReal,
               .defaultForm = kRequired,
               .real = bounds(kNodeSpeed),
               .allowed = "as the node's `speed`"},
          },
  };
}

SpecSection stragglerSection() {
  const StragglerConfig s;
  return {
      .path = "cluster.nodes[i].straggler",
      .title = "cluster.nodes[i].straggler",
      .summary =
          "Random pauses: at each step the node stalls for `pause_ms` with probability "
          "`probability`, inside its compute, drawn from the seed, the rank and the step "
          "(so a run repeats).",
      .fields =
          {
              {.key = "probability",
               .type = kReal,
               .defaultJson = text(s.probability),
               .real = bounds(kProbability)},
              {.key = "pause_ms",
               .type = kReal,
               .defaultJson = text(s.pauseMs),
               .real = RealBounds{0.0, kMaxPauseMs, true, true}},
          },
  };
}

SpecSection variantSection() {
  return {
      .path = "variants[i]",
      .title = "variants[i]",
      .summary =
          "One variant: one run of a strategy, on the same data and initial weights as "
          "every other variant. These fields are every variant's; the strategy's own "
          "settings sit beside them ([strategies](strategies.md)), and a setting it does "
          "not read is an error. What `on_node_loss` does for each strategy: "
          "[Experiment specs](../specs.md#variants).",
      .more = SpecRegistry::kStrategies,
      .fields =
          {
              {.key = "name",
               .type = kString,
               .defaultForm = kDerived,
               .defaultText = "the strategy's name",
               .size = IntegerBounds{1, kMaxNameBytes},
               .allowed = "unique within the spec"},
              {.key = "strategy",
               .type = kChoice,
               .defaultForm = kFirstRegistered,
               .registry = SpecRegistry::kStrategies,
               .allowed = "a registered strategy: [strategies](strategies.md) lists each with "
                          "every setting it takes (type, default, range, when it applies)"},
              {.key = "nodes",
               .type = kInteger,
               .defaultForm = kOmitted,
               .defaultText = "all the cluster's nodes",
               .integer = IntegerBounds{1, kMaxClusterNodes},
               .allowed = "at most the cluster's nodes: the variant runs on the cluster's first "
                          "N nodes only, so one experiment holds a 1-node baseline beside the "
                          "whole cluster (same data, same initial weights, same global batch)"},
          },
  };
}

}  // namespace

std::string IntegerBounds::text() const {
  if (max == kMaxInt) return concat(">= ", min);
  return concat(min, "..", max);
}

bool RealBounds::contains(double value) const {
  return Interval{min, max, minClosed, maxClosed}.contains(value);
}

std::string RealBounds::text() const {
  // Whole numbers in full (600000, where messages may write 6e+05).
  const auto number = [](double v) {
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
      return concat(static_cast<int64_t>(v));
    return formatNumber(v);
  };
  if (std::isinf(max)) return concat(minClosed ? ">= " : "> ", number(min));
  return concat("in ", minClosed ? "[" : "(", number(min), ", ", number(max),
                maxClosed ? "]" : ")");
}

const SpecField& SpecSection::field(std::string_view key) const {
  const auto it =
      std::find_if(fields.begin(), fields.end(), [&](const SpecField& f) { return f.key == key; });
  DTLAB_ENFORCE(it != fields.end(), "the spec schema's section '", path, "' has no field '", key,
                "'");
  return *it;
}

const std::vector<SpecSection>& specSections() {
  static const std::vector<SpecSection> sections = {
      topLevel(),        datasetSection(),     modelSection(),         optimizerSection(),
      scheduleSection(), trainingSection(),    dataPartitionSection(), clusterSection(),
      nodeSection(),     speedChangeSection(), stragglerSection(),     variantSection(),
  };
  return sections;
}

const SpecSection& specSection(std::string_view path) {
  const std::vector<SpecSection>& sections = specSections();
  const auto it = std::find_if(sections.begin(), sections.end(),
                               [&](const SpecSection& s) { return s.path == path; });
  DTLAB_ENFORCE(it != sections.end(), "the spec schema has no section '", path, "'");
  return *it;
}

std::span<const std::string_view> specSectionKeys(std::string_view path) {
  // Views of the keys of specSections(), which is built once and never changes.
  static const std::map<std::string, std::vector<std::string_view>, std::less<>> keys = [] {
    std::map<std::string, std::vector<std::string_view>, std::less<>> out;
    for (const SpecSection& s : specSections())
      for (const SpecField& f : s.fields) out[s.path].push_back(f.key);
    return out;
  }();
  const auto it = keys.find(path);
  DTLAB_ENFORCE(it != keys.end(), "the spec schema has no section '", path, "'");
  return it->second;
}

std::vector<std::string> specParserRules() {
  std::string nullable;
  for (const SpecSection& s : specSections())
    for (const SpecField& f : s.fields)
      if (f.nullable) nullable += concat(nullable.empty() ? "" : ", ", "`", f.key, "`");
  return {
      "Every field is optional; a missing field takes its default (the tables below), so `{}` "
      "is a valid spec. (A speed change's two fields are the exception.)",
      "Keys are snake_case. An unknown key is an error at every level, with the closest known "
      "key suggested (`dataset.clases: unknown field (did you mean 'classes'?)`). A repeated "
      "key is an error.",
      concat("Integers may be written `3` or `3.0`, but not `3.5`. `null` is accepted only where "
             "the default is \"not set\" (",
             nullable, ")."),
      "Reals marked 32-bit are stored as 32-bit floats, and their ranges are checked on the "
      "stored value: `momentum: 0.99999999` is 1 as a float and is rejected.",
      "A field that the chosen `kind` does not use (its \"used by\" names others) may appear "
      "only with its default value (`toJson` writes every field); any other value would be "
      "ignored silently, so it is rejected. Fields a kind fixes (e.g. `features` for `shapes`) "
      "may be restated with the fixed value only.",
      "Errors name the field by its JSON path and say what was received: `spec.json: "
      "optimizer.lr: must be > 0, got -1`. Syntax errors use the path `(json)`.",
  };
}

}  // namespace dtlab::core
