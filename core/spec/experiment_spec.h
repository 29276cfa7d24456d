#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/check.h"
#include "core/spec/settings.h"

namespace dtlab::core {

// A spec that fails validation. path() is the JSON path of the offending field
// ("optimizer.momentum", "model.hidden[1]"); what() reads "path: reason".
class SpecError : public Error {
 public:
  SpecError(std::string path, const std::string& reason)
      : Error(path + ": " + reason), path_(std::move(path)), reason_(reason) {}
  const std::string& path() const { return path_; }
  // The message without the path, for editors that show it beside the offending field.
  const std::string& reason() const { return reason_; }
  // The same error with `context` (e.g. the spec's file name) in front of what(); path() and
  // reason() are unchanged so callers can still locate the field.
  SpecError withContext(const std::string& context) const {
    return SpecError(WithMessage{}, context + ": " + what(), path_, reason_);
  }

 private:
  struct WithMessage {};
  SpecError(WithMessage, const std::string& message, std::string path, std::string reason)
      : Error(message), path_(std::move(path)), reason_(std::move(reason)) {}

  std::string path_;
  std::string reason_;
};

// The synthetic dataset: the fields every kind has, and the kind's own parameters. What a
// kind is, its rules for classes and features and its parameters' schema are in its
// descriptor (core/data/dataset_kinds.h). Fields a kind fixes (spirals' 2 features) are
// ignored by it; the parser refuses a value that differs.
struct DatasetConfig {
  std::string kind;  // a registered kind's name; empty: the first registered (the default)
  int64_t trainSize = 20000;
  int64_t testSize = 2000;
  int64_t classes = 10;  // outputs: 1 for regression
  int64_t features = 32;
  uint64_t seed = 0;  // filled from the spec seed unless the dataset gives its own
  // The kind's parameters ("separation", "noise", ...) by key. A parsed spec holds every one
  // that applies; one built in code may hold fewer, and the kind reads their defaults.
  SettingValues parameters{};

  // Equal as written: a config built in code that leaves a parameter at its default is not
  // equal to the one the parser completes from it; canonicalDataset (core/data/dataset_kinds.h)
  // makes them compare as the kind reads them.
  bool operator==(const DatasetConfig&) const = default;
};

enum class Activation { kReLU, kGELU, kTanh };
enum class InitScheme { kHe, kXavier };
enum class LossKind { kCrossEntropy, kMse };

// The model: a registered kind (core/nn/model_kinds.h) with its own settings; its input width
// and output width come from the dataset.
struct ModelConfig {
  std::string kind;  // a registered kind's name; empty: the first registered (mlp, the default)
  // Widths and activation of the dense layers (an mlp is only these).
  std::vector<int64_t> hidden = {128, 128};
  Activation activation = Activation::kReLU;
  InitScheme init = InitScheme::kHe;
  LossKind loss = LossKind::kCrossEntropy;  // regression datasets need kMse
  // The kind's own settings by key, as DatasetConfig::parameters.
  SettingValues parameters{};

  // Equal as written, as DatasetConfig; canonicalModel (core/nn/model_kinds.h) compares as the
  // kind reads it.
  bool operator==(const ModelConfig&) const = default;
};

enum class OptimizerKind { kSgd, kAdam, kAdamW, kAdadelta };
enum class ScheduleKind { kConstant, kStep, kCosine };

struct ScheduleConfig {
  ScheduleKind kind = ScheduleKind::kConstant;
  int64_t warmupSteps = 0;  // linear warm-up from 0 to the base rate, before any kind
  int64_t stepSize = 1000;  // step: multiply by gamma every stepSize steps
  float gamma = 0.1f;
  float minLr = 0.0f;  // cosine: floor reached at the last step

  bool operator==(const ScheduleConfig&) const = default;
};

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  float lr = 0.05f;
  float momentum = 0.9f;     // sgd
  bool nesterov = false;     // sgd
  float weightDecay = 0.0f;  // sgd/adam: L2 added to the gradient; adamw: decoupled
  float beta1 = 0.9f;        // adam, adamw
  float beta2 = 0.999f;      // adam, adamw
  float eps = 1e-8f;         // adam, adamw (adadelta uses 1e-6 when not given)
  float rho = 0.9f;          // adadelta
  ScheduleConfig schedule;
  // Linear scaling rule (Goyal et al. 2017): lr *= globalBatch / baseBatch when set.
  std::optional<int64_t> scaleLrBaseBatch;

  bool operator==(const OptimizerConfig&) const = default;
};

// How the training set is divided among a run's workers (training.data_partition). kShared:
// every worker draws from the whole set (sync_allreduce and local_sgd take slices of global
// batches drawn from it, async_ps and ssp give each worker a contiguous range of it, which is
// as good as a random subset because samples are i.i.d. draws of the generator). kIid and
// kDirichlet give each worker its own shard (core/data/partition.h) and it draws its batches
// only from that: kIid is a seeded random split, kDirichlet a label skew, each class spread
// over the workers by Dir(alpha) proportions (smaller alpha: each worker sees fewer classes).
enum class DataPartitionKind { kShared, kIid, kDirichlet };

struct DataPartitionConfig {
  DataPartitionKind kind = DataPartitionKind::kShared;
  double alpha = 0.5;  // kDirichlet only

  bool operator==(const DataPartitionConfig&) const = default;
};

// The arithmetic of the training step's matrix products (training.precision). kFp32: IEEE
// single precision everywhere. kTf32: products on tensor cores with inputs rounded to TF32
// (10-bit mantissa), FP32 accumulation. kBf16: products with BF16 inputs (8-bit mantissa) and
// FP32 accumulation, the weights kept and updated in FP32 (master weights). Only the CUDA
// backend implements kTf32 and kBf16; the CPU backend computes in FP32.
enum class Precision { kFp32, kTf32, kBf16 };

struct TrainingConfig {
  int64_t batchSize = 128;                 // global batch
  int64_t epochs = 5;                      // 0: no epoch limit
  int64_t maxSteps = 0;                    // 0: no step limit
  double maxSeconds = 0.0;                 // 0: no time limit
  std::optional<double> targetAccuracy;    // stop when test accuracy reaches it
  int64_t evalInterval = 200;              // steps between evaluations (and at the end)
  int threads = 0;                         // 0: automatic (1 for small models, else all cores)
  Precision precision = Precision::kFp32;  // kTf32 and kBf16 need cluster.device "cuda"
  DataPartitionConfig dataPartition;
  // Checkpoints (core/train/checkpoint.h) of the strategies that keep them: every this many
  // steps and/or seconds (0: never by that measure), the newest checkpointsKept of them kept.
  int64_t checkpointEvery = 0;
  double checkpointSeconds = 0.0;
  int64_t checkpointsKept = 2;

  bool operator==(const TrainingConfig&) const = default;
};

// One node of the cluster: where it runs, and its compute and link emulation (heterogeneity
// is emulated per node where the hardware is uniform). Defaults leave the
// real machine as it is.
// From step `atStep` on, the node computes at `speed` (emulated; see NodeConfig::speed).
struct SpeedChange {
  int64_t atStep = 1;
  double speed = 1.0;
  bool operator==(const SpeedChange&) const = default;
};

// Random pauses: at each step, with `probability`, the node stalls for `pauseMs` (a straggler).
struct StragglerConfig {
  double probability = 0.0;
  double pauseMs = 0.0;
  bool operator==(const StragglerConfig&) const = default;
};

struct NodeConfig {
  double speed = 1.0;          // compute is stretched to 1/speed of its real time
  double bandwidthMbps = 0.0;  // 0: unlimited
  double latencyMs = 0.0;
  // "host:port" (IPv6 as "[addr]:port") of a running dtlab-node daemon; empty: a local node
  // that the run starts itself. A remote node applies the emulation above per job, in place
  // of its own --speed/--bandwidth-mbps/--latency-ms. Its token is not part of the spec.
  std::string address;

  // The speed changes during the run (steps in increasing order); before the first, `speed`.
  std::vector<SpeedChange> speedSchedule;
  StragglerConfig straggler;
  double speedAt(int64_t step) const {
    double at = speed;
    for (const SpeedChange& c : speedSchedule)
      if (step >= c.atStep) at = c.speed;
    return at;
  }

  bool operator==(const NodeConfig&) const = default;
};

// The cluster a run uses when none is given on the command line. Either a local cluster:
// `localNodes` daemons started on loopback, `nodes` empty (all defaults), one entry
// (applies to every node) or one entry per node, none with an address. Or a remote
// cluster: one entry per running daemon, every one with an address (ranks follow the
// list); `localNodes` then equals the number of nodes (the JSON leaves it out, or gives
// that number) and `threadsPerNode` is not used (each daemon has its own --threads).
// cluster.wait_seconds: its bound, and what a run waits when neither the spec nor the user says.
inline constexpr int64_t kMaxWaitSeconds = 7 * 24 * 3600;
inline constexpr int64_t kDefaultWaitSeconds = 600;

struct ClusterConfig {
  int64_t localNodes = 1;
  std::vector<NodeConfig> nodes;
  int threadsPerNode = 1;
  // Where workers train: "cpu", or "cuda" (each node's worker on the GPU its daemon was
  // started with, dtlab-node --devices cuda:N; local nodes get one GPU each).
  std::string device = "cpu";
  // How long a run waits for its nodes while other people's runs hold them (nodes shared by
  // several users queue runs); 0: not at all. Unset: kDefaultWaitSeconds, or the user's choice.
  // Written to JSON only when set.
  std::optional<int64_t> waitSeconds;

  NodeConfig node(int64_t index) const {
    if (nodes.empty()) return {};
    return nodes.size() == 1 ? nodes.front() : nodes.at(static_cast<std::size_t>(index));
  }
  // Whether the nodes are running daemons at the nodes' addresses (a parsed spec has
  // addresses on all nodes or on none).
  bool remote() const { return !nodes.empty() && !nodes.front().address.empty(); }
  std::vector<std::string> addresses() const {
    std::vector<std::string> out;
    for (const NodeConfig& n : nodes) out.push_back(n.address);
    return out;
  }
  bool operator==(const ClusterConfig&) const = default;
};

// One strategy variant: every variant of a spec runs on the same data and initial weights.
// The strategy is named by its registered descriptor (core/train/strategy_registry.h), which
// declares the settings the variant may give; the spec keeps their values by key.
struct VariantConfig {
  std::string name{};        // defaults to the strategy's name
  std::string strategy{};    // a registered strategy's name; empty: the registry's first (default)
  int64_t nodes = 0;         // run on the cluster's first `nodes` nodes only (a baseline); 0: all
  SettingValues settings{};  // the strategy's own settings, by key (its descriptor's schema)

  bool operator==(const VariantConfig&) const = default;
};

// The default strategy: the strategy registry's first entry, which the registry checks
// (core/train/strategy_registry.h), named here so that a spec's types need no registry.
inline constexpr std::string_view kDefaultStrategy = "sync_allreduce";

// What a spec without "variants" runs: one variant of the default strategy, its settings left
// to their defaults (the parser writes them out; canonicalVariant completes one built in code).
inline std::vector<VariantConfig> defaultVariants() {
  return {VariantConfig{.name = std::string(kDefaultStrategy),
                        .strategy = std::string(kDefaultStrategy)}};
}

struct ExperimentSpec;
// The variant a run of `spec` ran, from the run's name: `dtlab-cli run` and the GUI name a
// variant's run "EXPERIMENT/VARIANT"; a spec of one variant needs no name. Throws Error
// naming the variant it could not find.
int variantOfRun(const ExperimentSpec& spec, const std::string& runName);

struct ExperimentSpec {
  std::string name = "experiment";
  uint64_t seed = 1;
  // How many times one execution runs every variant (core/spec/execution_plan.h): each
  // repetition with its own seed for initial weights, data order and emulated stragglers,
  // the same for every variant within it (the variants stay paired); the dataset is the same.
  int64_t repeats = 1;
  DatasetConfig dataset;
  ModelConfig model;
  OptimizerConfig optimizer;
  TrainingConfig training;
  ClusterConfig cluster;
  std::vector<VariantConfig> variants = defaultVariants();

  // Equal as written; sameExperiment (core/spec/spec_json.h) compares specs as DTLab reads them.
  bool operator==(const ExperimentSpec&) const = default;
};

// Most repetitions one execution of a spec may ask for.
inline constexpr int64_t kMaxRepeats = 1000;

// Most nodes a cluster (and so a variant, and its parameter-server shards) may have.
inline constexpr int64_t kMaxClusterNodes = 256;

// Widest layer, feature vector or class count a spec may ask for (hidden widths, features,
// classes, a teacher network's width).
inline constexpr int64_t kMaxWidth = 65536;

// Largest dataset a spec may ask for (train + test features and labels, as float32).
inline constexpr int64_t kMaxDatasetBytes = int64_t{4} << 30;

// Empty when `address` is a usable "host:port" of a node daemon (host: a name, an IPv4
// address, or an IPv6 address in brackets; port 1..65535), else why not.
std::string nodeAddressProblem(std::string_view address);

// The names used in JSON ("gaussian_blobs", "relu", "sgd", "cosine", ...).
const char* toString(Activation activation);
const char* toString(InitScheme init);
const char* toString(LossKind loss);
const char* toString(OptimizerKind kind);
const char* toString(ScheduleKind kind);
const char* toString(DataPartitionKind kind);
const char* toString(Precision precision);  // "fp32", "tf32", "bf16"

}  // namespace dtlab::core
