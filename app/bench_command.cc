#include "app/bench_command.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "app/bench_allreduce.h"
#include "app/project_command.h"
#include "core/backend/cpu_backend.h"
#include "core/metrics/metrics.h"
#include "core/train/core_bench.h"
#include "remote/cluster/local_cluster.h"
#include "remote/coordinator/coordinator.h"

namespace dtlab::app {
namespace {

// Where resources/ lives: $DTLAB_RESOURCES, else the source tree this binary was built from.
std::filesystem::path resourcesDir() {
  if (const char* env = std::getenv("DTLAB_RESOURCES")) return env;
  return std::filesystem::path(DTLAB_SOURCE_DIR) / "resources";
}

// A Python that can import torch: Debian's python3-torch lives under /usr/bin/python3,
// which a user's PATH may shadow (pyenv), so that one is tried first.
std::optional<std::string> torchPython() {
  for (const char* candidate : {"/usr/bin/python3", "python3"}) {
    const std::string probe = std::string(candidate) + " -c 'import torch' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return std::string(candidate);
  }
  return std::nullopt;
}

// Runs a command and returns the JSON object on the last line of its stdout.
nlohmann::json runJsonCommand(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run: " + command);
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  if (status != 0)
    throw std::runtime_error("reference failed (exit " + std::to_string(status) + "): " + command);
  const auto end = output.find_last_not_of("\n");
  const auto begin = output.find_last_of('\n', end);
  return nlohmann::json::parse(output.substr(begin == std::string::npos ? 0 : begin + 1));
}

// The MLP shape flags shared by `bench core` and `bench train`.
const std::set<std::string> kShapeFlags = {"--batch", "--in", "--hidden", "--layers", "--classes"};

std::string shapeArgs(const core::CoreBenchConfig& c) {
  return " --batch " + std::to_string(c.batch) + " --in " + std::to_string(c.inputs) +
         " --hidden " + std::to_string(c.hidden) + " --layers " + std::to_string(c.layers) +
         " --classes " + std::to_string(c.classes);
}

void readShape(const Args& args, core::CoreBenchConfig& config) {
  config.batch = args.integer("--batch", 256, 1, 1 << 20);
  config.inputs = args.integer("--in", 256, 1, 1 << 20);
  config.hidden = args.integer("--hidden", 1024, 1, 1 << 16);
  config.layers = args.integer("--layers", 2, 0, 64);
  config.classes = args.integer("--classes", 10, 2, 1 << 16);
}

std::set<std::string> withShape(std::set<std::string> flags) {
  flags.insert(kShapeFlags.begin(), kShapeFlags.end());
  return flags;
}

// Collects rank 0's step times: in synchronous training every rank finishes a step
// together, so rank 0's step time is the cluster's.
class StepTimes : public core::MetricSink {
 public:
  void onStep(const core::StepMetrics& m) override {
    if (m.worker == 0) stepMs.push_back(m.stepMs);
  }
  std::vector<double> stepMs;
};

int benchTrain(const std::vector<std::string>& argv) {
  const Args args(argv, withShape({"--local-nodes", "--reps", "--seconds", "--reference"}),
                  {"--json"});
  if (!args.positionals().empty()) throw UsageError("unexpected argument " + args.positionals()[0]);
  core::CoreBenchConfig shape;
  readShape(args, shape);
  const int nodes = static_cast<int>(args.integer("--local-nodes", 2, 1, 64));
  const int reps = static_cast<int>(args.integer("--reps", 5, 1, 100));
  const int64_t seconds = args.integer("--seconds", 6, 1, 3600);
  const std::string reference = args.value("--reference", "torch");
  if (reference != "torch" && reference != "none")
    throw UsageError("--reference: expected torch or none, got '" + reference + "'");
  if (shape.batch < nodes) throw UsageError("--batch must be at least --local-nodes");

  core::ExperimentSpec spec;
  spec.name = "bench_train";
  spec.dataset.features = shape.inputs;
  spec.dataset.classes = shape.classes;
  spec.dataset.trainSize = shape.batch * 16;
  spec.dataset.testSize = shape.classes;
  spec.model.hidden.assign(static_cast<std::size_t>(shape.layers), shape.hidden);
  spec.optimizer.lr = 0.01f;
  spec.optimizer.momentum = 0.9f;
  spec.training.batchSize = shape.batch;
  spec.training.epochs = 0;
  spec.training.maxSeconds = static_cast<double>(seconds);
  spec.training.evalInterval = int64_t{1} << 40;  // evaluate once, at the end
  spec.cluster.localNodes = nodes;

  std::printf(
      "bench train: sync_allreduce on %d local nodes (1 thread each), MLP %lld-%lldx%lld-%lld, "
      "global batch %lld, %llds\n",
      nodes, static_cast<long long>(shape.inputs), static_cast<long long>(shape.hidden),
      static_cast<long long>(shape.layers), static_cast<long long>(shape.classes),
      static_cast<long long>(shape.batch), static_cast<long long>(seconds));
  std::fflush(stdout);
  StepTimes times;
  {
    remote::LocalCluster cluster(remote::defaultNodeBinary(), std::vector<remote::LocalNodeOptions>(
                                                                  static_cast<std::size_t>(nodes)));
    remote::Coordinator coordinator(cluster.addresses(), {});
    coordinator.connect();
    const core::RunSummary summary = coordinator.run(spec, 0, &times);
    if (summary.status == dtlab::core::RunStatus::kFailed)
      throw std::runtime_error("benchmark run failed: " + summary.error);
  }
  // Warm-up: the first fifth of the steps (at least 10) is not timed; the rest is cut
  // into `reps` consecutive groups, each giving one samples/s figure.
  const std::size_t warm = std::max<std::size_t>(10, times.stepMs.size() / 5);
  if (times.stepMs.size() < warm + static_cast<std::size_t>(reps))
    throw std::runtime_error("too few steps to measure; raise --seconds");
  std::vector<double> rates;
  const std::size_t per = (times.stepMs.size() - warm) / static_cast<std::size_t>(reps);
  for (int r = 0; r < reps; ++r) {
    double ms = 0.0;
    for (std::size_t i = 0; i < per; ++i)
      ms += times.stepMs[warm + static_cast<std::size_t>(r) * per + i];
    rates.push_back(static_cast<double>(per * static_cast<std::size_t>(shape.batch)) * 1000.0 / ms);
  }
  const double rate = core::median(rates);
  std::printf("  dtlab   %d nodes: %12.0f samples/s (median of %d groups of %zu steps)\n", nodes,
              rate, reps, per);
  nlohmann::json out = {{"bench", "train"},
                        {"nodes", nodes},
                        {"samples_per_s", rate},
                        {"steps", times.stepMs.size()}};
  if (reference == "torch") {
    const std::optional<std::string> python = torchPython();
    if (!python) {
      std::printf("  reference: PyTorch not installed (Debian package python3-torch); no ratio\n");
    } else {
      const nlohmann::json r = runJsonCommand(
          *python + " " + (resourcesDir() / "bench" / "torch_ddp.py").string() + " --world " +
          std::to_string(nodes) + " --threads 1 --reps " + std::to_string(reps) + shapeArgs(shape));
      const double refRate = r.at("samples_per_s").get<double>();
      std::printf("  pytorch DDP (gloo, %d processes, 1 thread each): %12.0f samples/s\n", nodes,
                  refRate);
      std::printf("  ratio dtlab/ddp: %.2fx\n", rate / refRate);
      out["reference"] = {{"impl", r.at("impl")}, {"samples_per_s", refRate}};
      out["ratio"] = rate / refRate;
    }
  }
  if (args.has("--json")) std::printf("%s\n", out.dump().c_str());
  return 0;
}

int benchCore(const std::vector<std::string>& argv) {
  const Args args(argv, withShape({"--threads", "--reps", "--reference"}), {"--json"});
  if (!args.positionals().empty()) throw UsageError("unexpected argument " + args.positionals()[0]);
  core::CoreBenchConfig config;
  readShape(args, config);
  config.repetitions = static_cast<int>(args.integer("--reps", 7, 1, 1000));
  const std::string reference = args.value("--reference", "torch");
  if (reference != "torch" && reference != "none")
    throw UsageError("--reference: expected torch or none, got '" + reference + "'");
  const int cores = core::availableCores();
  std::vector<int> threadCounts;
  if (args.has("--threads")) {
    threadCounts.push_back(static_cast<int>(args.integer("--threads", 1, 1, 256)));
  } else {
    for (int t = 1; t <= cores; ++t) threadCounts.push_back(t);
  }

  std::printf("bench core: MLP %lld-%lldx%lld-%lld, batch %lld, cross-entropy, SGD momentum\n",
              static_cast<long long>(config.inputs), static_cast<long long>(config.hidden),
              static_cast<long long>(config.layers), static_cast<long long>(config.classes),
              static_cast<long long>(config.batch));
  core::CoreBenchResult best;
  for (int threads : threadCounts) {
    config.threads = threads;
    const core::CoreBenchResult r = core::benchCoreStep(config);
    std::printf("  dtlab   threads %d: %12.0f samples/s  step %8.3f ms  %6.1f GFLOP/s\n", threads,
                r.samplesPerS, r.stepMs, r.gflops);
    if (r.samplesPerS > best.samplesPerS) best = r;
  }
  std::fflush(stdout);
  const int gemmThreads = std::max(threadCounts.back(), cores);
  const double sgemm = core::benchGemmGflops(gemmThreads, 256, 1024, 1024);
  std::printf("  sgemm 256x1024x1024, %d threads: %.1f GFLOP/s; best step reaches %.0f%% of it\n",
              gemmThreads, sgemm, 100.0 * best.gflops / sgemm);

  nlohmann::json out = {{"bench", "core"},
                        {"threads", best.threads},
                        {"samples_per_s", best.samplesPerS},
                        {"step_ms", best.stepMs},
                        {"gflops", best.gflops},
                        {"sgemm_gflops", sgemm},
                        {"sgemm_fraction", best.gflops / sgemm}};
  if (reference == "torch") {
    const std::optional<std::string> python = torchPython();
    if (!python) {
      std::printf("  reference: PyTorch not installed (Debian package python3-torch); no ratio\n");
      out["reference"] = nullptr;
    } else {
      double refBest = 0.0;
      int refThreads = 0;
      for (int threads : threadCounts) {
        const std::string command =
            *python + " " + (resourcesDir() / "bench" / "torch_mlp.py").string() + " --threads " +
            std::to_string(threads) + " --batch " + std::to_string(config.batch) + " --in " +
            std::to_string(config.inputs) + " --hidden " + std::to_string(config.hidden) +
            " --layers " + std::to_string(config.layers) + " --classes " +
            std::to_string(config.classes) + " --reps " + std::to_string(config.repetitions);
        const nlohmann::json r = runJsonCommand(command);
        const double rate = r.at("samples_per_s").get<double>();
        std::printf("  pytorch threads %d: %12.0f samples/s  (%s)\n", threads, rate,
                    r.at("impl").get<std::string>().c_str());
        if (rate > refBest) {
          refBest = rate;
          refThreads = threads;
        }
      }
      std::printf("  ratio dtlab/pytorch (each at its best thread count): %.2fx\n",
                  best.samplesPerS / refBest);
      out["reference"] = {{"impl", "pytorch"}, {"threads", refThreads}, {"samples_per_s", refBest}};
      out["ratio"] = best.samplesPerS / refBest;
    }
  }
  if (args.has("--json")) std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

int benchCommand(const std::vector<std::string>& argv) {
  if (argv.empty()) throw UsageError("bench: expected what to measure (core, store)");
  const std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (argv[0] == "core") return benchCore(rest);
  if (argv[0] == "train") return benchTrain(rest);
  if (argv[0] == "allreduce") return benchAllReduceCommand(rest);
  if (argv[0] == "allreduce-rank") return benchAllReduceRank(rest);
  if (argv[0] == "tcp-rank") return benchTcpRank(rest);
  if (argv[0] == "store") return benchStore(rest);
  throw UsageError("bench: unknown benchmark '" + argv[0] +
                   "' (expected core, train, allreduce or store)");
}

}  // namespace dtlab::app
