// `dtlab-cli bench train` (remote/bench/bench_train.h).
#include "remote/bench/bench_train.h"

#include <stdlib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/common/check.h"
#include "core/metrics/metrics.h"
#include "core/spec/experiment_spec.h"
#include "remote/bench/bench_common.h"
#include "remote/bench/reference_process.h"
#include "remote/cluster/local_cluster.h"
#include "remote/common/certificates.h"
#include "remote/coordinator/coordinator.h"

namespace dtlab::bench {
namespace {

// Rank 0's end-of-step wall clock, by step. Every step of sync_allreduce ends on an
// all-reduce that waits for every rank, so two of these timestamps bracket whole steps the
// way barriers do, with everything a step does in between (batch loading, metric emission).
class StepClock : public core::MetricSink {
 public:
  void onStep(const core::StepMetrics& m) override {
    if (m.worker == 0) endMs[m.step] = m.wallMs;
  }
  std::map<int64_t, double> endMs;
};

// The experiment every repetition runs on DTLab's side: sync_allreduce on `nodes` local
// nodes, the benchmark's MLP and global batch, `warmup` + `steps` steps, one evaluation.
core::ExperimentSpec trainBenchSpec(const core::CoreBenchConfig& shape, int nodes, int64_t warmup,
                                    int64_t steps) {
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
  spec.training.maxSteps = warmup + steps;
  spec.training.evalInterval = int64_t{1} << 40;  // evaluate once, after the last step
  spec.cluster.localNodes = nodes;
  return spec;
}

// Starts PyTorch DDP's reference process (`nodes` processes, 1 thread each) and prints what
// it announced in `info`; none (after saying so) when PyTorch is not installed.
std::unique_ptr<ReferenceProcess> startDdpReference(const core::CoreBenchConfig& shape, int nodes,
                                                    int64_t warmup, nlohmann::json& info,
                                                    std::FILE* out) {
  const std::optional<TorchReference> torch = findTorchReference(1, out);
  if (!torch) return nullptr;
  printBlasChoice(*torch, out);
  std::vector<std::string> command = {torch->python,
                                      torch->scripts + "/torch_ddp.py",
                                      "--serve",
                                      "--world",
                                      std::to_string(nodes),
                                      "--threads",
                                      "1",
                                      "--warmup",
                                      std::to_string(warmup)};
  for (const std::string& a : shapeArgs(shape)) command.push_back(a);
  auto ddp = std::make_unique<ReferenceProcess>(command, torch->environment(1));
  info = ddp->readJson();
  std::fprintf(out, "  reference: %s, %d processes, 1 thread each; its sgemm: %.1f GFLOP/s (%s)\n",
               info.at("impl").get<std::string>().c_str(), nodes,
               info.at("sgemm_gflops").get<double>(),
               info.value("core", nlohmann::json()).is_string()
                   ? ("OpenBLAS " + info["core"].get<std::string>()).c_str()
                   : "not OpenBLAS");
  return ddp;
}

// bench train --tls: a CA and certificates for 127.0.0.1 in a directory of its own, removed
// with everything in it at the end.
class CertificateDir {
 public:
  CertificateDir() = default;
  CertificateDir(const CertificateDir&) = delete;
  CertificateDir& operator=(const CertificateDir&) = delete;
  ~CertificateDir() {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  std::string make() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "dtlab-bench-tls-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("bench train --tls: cannot make a temporary directory");
    dir_ = pattern;
    remote::generateCertificates(dir_, {"127.0.0.1"});
    return dir_;
  }

 private:
  std::string dir_;
};

// One repetition on DTLab's side: samples/s over the steps after the warm-up, by rank 0's
// end-of-step clock; throws when the run fails.
double timeDtlabRun(remote::Coordinator& coordinator, const core::ExperimentSpec& spec,
                    int64_t warmup, int64_t steps, double samples) {
  StepClock clock;
  const core::RunSummary summary = coordinator.run(spec, 0, &clock);
  if (summary.status == core::RunStatus::kFailed)
    throw std::runtime_error("benchmark run failed: " + summary.error);
  const auto first = clock.endMs.find(warmup);
  const auto last = clock.endMs.find(warmup + steps);
  if (first == clock.endMs.end() || last == clock.endMs.end())
    throw std::runtime_error("rank 0 reported no end time for step " +
                             std::to_string(first == clock.endMs.end() ? warmup : warmup + steps));
  return samples * 1000.0 / (last->second - first->second);
}

// Prints the medians and their ratio, and returns the result with its JSON report. `ddpInfo`
// is the reference's announcement; `theirs` is empty when it did not run.
TrainBenchResult reportTrainBench(const TrainBenchOptions& options, const std::vector<double>& ours,
                                  const std::vector<double>& theirs, bool ranDdp,
                                  const nlohmann::json& ddpInfo, std::FILE* out) {
  const int nodes = options.nodes;
  const int reps = options.repetitions;
  const double rate = core::median(ours);
  std::fprintf(out, "  dtlab%s %d nodes: %10.0f samples/s (median of %d)\n",
               options.tls ? " (mutual TLS)" : "      ", nodes, rate, reps);
  TrainBenchResult result;
  result.samplesPerS = rate;
  nlohmann::json& json = result.json;
  if (options.tls) {
    const double plain = core::median(theirs);
    std::fprintf(out, "  dtlab (plain text) %d nodes: %10.0f samples/s (median of %d)\n", nodes,
                 plain, reps);
    std::fprintf(out, "  ratio mutual TLS / plain text: %.3fx\n", rate / plain);
    json = {{"bench", "train"},
            {"transport", "mutual_tls"},
            {"nodes", nodes},
            {"steps", options.steps},
            {"warmup_steps", options.warmup},
            {"repetitions", reps},
            {"samples_per_s", rate},
            {"repetition_samples_per_s", ours},
            {"reference",
             {{"impl", "dtlab plain text"},
              {"samples_per_s", plain},
              {"repetition_samples_per_s", theirs}}},
            {"ratio", rate / plain}};
    result.ratio = rate / plain;
    return result;
  }
  json = {{"bench", "train"},
          {"nodes", nodes},
          {"steps", options.steps},
          {"warmup_steps", options.warmup},
          {"repetitions", reps},
          {"samples_per_s", rate},
          {"repetition_samples_per_s", ours}};
  if (ranDdp) {
    const double refRate = core::median(theirs);
    std::fprintf(out, "  pytorch DDP %d procs: %10.0f samples/s (median of %d)\n", nodes, refRate,
                 reps);
    std::fprintf(out, "  ratio dtlab / pytorch DDP: %.2fx\n", rate / refRate);
    json["reference"] = {{"impl", ddpInfo.at("impl")},
                         {"samples_per_s", refRate},
                         {"repetition_samples_per_s", theirs},
                         {"blas", ddpInfo.value("blas", nlohmann::json())},
                         {"blas_core", ddpInfo.value("core", nlohmann::json())},
                         {"sgemm_gflops", ddpInfo.at("sgemm_gflops")}};
    json["ratio"] = rate / refRate;
    result.ratio = rate / refRate;
  } else {
    json["reference"] = nullptr;
  }
  return result;
}

}  // namespace

TrainBenchResult runTrainBench(const TrainBenchOptions& options, std::FILE* out) {
  const core::CoreBenchConfig& shape = options.shape;
  const int nodes = options.nodes;
  const int reps = options.repetitions;
  const int64_t steps = options.steps;
  const int64_t warmup = options.warmup;
  DTLAB_ENFORCE(nodes >= 1 && shape.batch % nodes == 0,
                "bench train: the global batch must split evenly over the nodes");
  const core::ExperimentSpec spec = trainBenchSpec(shape, nodes, warmup, steps);

  std::fprintf(
      out,
      "bench train: sync_allreduce on %d local nodes (1 thread each), %s, global batch %lld;\n"
      "  per repetition %lld untimed steps, then the wall clock of %lld whole steps; %d "
      "repetitions, interleaved with the reference's\n",
      nodes, shapeText(shape).c_str(), static_cast<long long>(shape.batch),
      static_cast<long long>(warmup), static_cast<long long>(steps), reps);
  std::fprintf(out, "  %s\n", machineDescription().c_str());
  std::fflush(out);

  nlohmann::json ddpInfo;
  std::unique_ptr<ReferenceProcess> ddp;
  if (options.reference && !options.tls)
    ddp = startDdpReference(shape, nodes, warmup, ddpInfo, out);

  // --tls: certificates for loopback, made for this run only.
  CertificateDir certs;
  remote::CoordinatorOptions coordinatorOptions;
  std::vector<remote::LocalNodeOptions> nodeOptions(static_cast<std::size_t>(nodes));
  if (options.tls) {
    const std::string dir = certs.make();
    for (remote::LocalNodeOptions& node : nodeOptions)
      node.tls = {dir + "/node.pem", dir + "/node.key", dir + "/ca.pem"};
    coordinatorOptions.tls = {dir + "/client.pem", dir + "/client.key", dir + "/ca.pem"};
    std::fprintf(out,
                 "  DTLab over mutual TLS (ECDSA P-256 certificates) against the same run "
                 "in plain text, interleaved\n");
  }
  remote::LocalCluster cluster(remote::defaultNodeBinary(), nodeOptions);
  remote::Coordinator coordinator(cluster.addresses(), coordinatorOptions);
  coordinator.connect();
  const double samples = static_cast<double>(steps * shape.batch);
  // The plain-text reference of --tls.
  std::unique_ptr<remote::LocalCluster> plainCluster;
  std::unique_ptr<remote::Coordinator> plain;
  if (options.tls) {
    plainCluster = std::make_unique<remote::LocalCluster>(
        remote::defaultNodeBinary(),
        std::vector<remote::LocalNodeOptions>(static_cast<std::size_t>(nodes)));
    plain = std::make_unique<remote::Coordinator>(plainCluster->addresses(),
                                                  remote::CoordinatorOptions{});
    plain->connect();
  }
  auto runDdp = [&]() {
    if (plain) return timeDtlabRun(*plain, spec, warmup, steps, samples);
    const nlohmann::json r = ddp->request("steps " + std::to_string(steps));
    return samples / r.at("seconds").get<double>();
  };

  std::vector<double> ours, theirs;
  for (int rep = 0; rep < reps; ++rep) {
    // Alternate which side goes first, so neither always follows the other.
    for (int k = 0; k < 2; ++k) {
      const bool dtlabTurn = (rep + k) % 2 == 0;
      if (!dtlabTurn && !ddp && !plain) continue;
      settle();
      (dtlabTurn ? ours : theirs)
          .push_back(dtlabTurn ? timeDtlabRun(coordinator, spec, warmup, steps, samples)
                               : runDdp());
    }
    std::fprintf(out, "  repetition %d: dtlab %10.0f samples/s", rep + 1, ours.back());
    if (ddp || plain)
      std::fprintf(out, "   %s %10.0f samples/s", plain ? "plain text" : "pytorch DDP",
                   theirs.back());
    std::fprintf(out, "\n");
    std::fflush(out);
  }
  return reportTrainBench(options, ours, theirs, ddp != nullptr, ddpInfo, out);
}

}  // namespace dtlab::bench
