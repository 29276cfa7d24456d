// `dtlab-cli bench checkpoint` (remote/bench/bench_checkpoint.h).
#include "remote/bench/bench_checkpoint.h"

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <thread>

#include "core/backend/cpu_backend.h"
#include "core/common/check.h"
#include "core/common/statistics.h"
#include "core/metrics/metric_table.h"
#include "core/store/checkpoint_parts.h"
#include "core/store/project_store.h"
#include "remote/bench/bench_common.h"
#include "remote/bench/rank_processes.h"

namespace dtlab::bench {
namespace {

namespace fs = std::filesystem;

int64_t parameterCount(const CheckpointBenchConfig& c) {
  int64_t count = 0, in = c.inputs;
  for (int64_t width : c.hidden) {
    count += in * width + width;
    in = width;
  }
  return count + in * c.classes + c.classes;
}

std::string shape(const CheckpointBenchConfig& c) {
  std::string text = "MLP " + std::to_string(c.inputs);
  for (int64_t width : c.hidden) text.append("-").append(std::to_string(width));
  return text.append("-").append(std::to_string(c.classes));
}

nlohmann::json specOf(const CheckpointBenchConfig& c, bool checkpoints) {
  nlohmann::json training = {
      {"batch_size", c.batch}, {"epochs", 0}, {"max_steps", c.steps}, {"eval_interval", c.steps}};
  if (checkpoints) {
    training["checkpoint_every"] = c.every;
    training["checkpoints_kept"] = 2;
  }
  return {{"name", "checkpoint_bench"},
          {"seed", 11},
          {"dataset",
           {{"kind", "gaussian_blobs"},
            {"train_size", std::max<int64_t>(4096, c.batch * 4)},
            {"test_size", 512},
            {"classes", c.classes},
            {"features", c.inputs},
            {"separation", 4.0},
            {"noise", 1.0}}},
          {"model", {{"hidden", c.hidden}, {"activation", "relu"}, {"init", "he"}}},
          {"optimizer", {{"kind", "sgd"}, {"lr", 0.001}, {"momentum", 0.9}}},
          {"training", training},
          {"cluster", {{"local_nodes", c.localNodes}, {"threads_per_node", 1}}},
          {"variants", {{{"name", c.strategy}, {"strategy", c.strategy}}}}};
}

void writeFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw Error("cannot write " + path.string());
}

// Runs this binary with `args` to its end, its output in `log`; the run's summary (the
// last line's "runs"[0]).
nlohmann::json runSelf(const std::vector<std::string>& args, const fs::path& log) {
  const pid_t pid = spawnSelf(args, log);
  int status = 0;
  ::waitpid(pid, &status, 0);
  try {
    return lastJsonLine(log).at("runs").at(0);
  } catch (const std::exception&) {
    throw Error("dtlab-cli " + args.front() + " printed no summary (its output: " + log.string() +
                ")");
  }
}

std::string checksumOf(const nlohmann::json& summary) {
  if (summary.value("status", "") != "completed")
    throw Error("a run of the benchmark did not complete: " + summary.value("error", "?"));
  return summary.at("param_checksum").at(0).get<std::string>();
}

// Rank 0's points of `key` in run 1, by step.
std::vector<core::SeriesPoint> rankZero(core::ProjectStore& store, const std::string& key) {
  for (const core::SeriesInfo& s : store.series(1))
    if (s.key == key && s.node == 0 && s.worker == 0) return store.readSeries(s.id);
  return {};
}

std::vector<double> values(const std::vector<core::SeriesPoint>& points) {
  std::vector<double> out;
  for (const core::SeriesPoint& p : points) out.push_back(p.value);
  return out;
}

// The newest checkpoint of run 1 in the project a writer is filling (0: none yet, or caught
// between the writer's steps).
int64_t newestCheckpoint(const fs::path& project) {
  if (!fs::exists(project)) return 0;
  try {
    const auto kept = core::ProjectStore::open(project.string(), true)->checkpoints(1);
    return kept.empty() ? 0 : kept.back().step;
  } catch (const std::exception&) {
    return 0;
  }
}

double medianOr0(const std::vector<double>& v) {
  return v.empty() ? 0.0 : core::median(v);
}

}  // namespace

CheckpointBenchOutcome runCheckpointBench(const CheckpointBenchConfig& config, std::FILE* out) {
  DTLAB_ENFORCE(config.every > 0 && config.steps >= 2 * config.every,
                "bench checkpoint: --steps must hold two checkpoints at least");
  const int64_t params = parameterCount(config);
  const double stateMb = static_cast<double>(params) * 2 * sizeof(float) / 1e6;
  uint64_t seed = config.seed;
  if (seed == 0) seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  const int64_t checkpoints = config.steps / config.every;
  const int64_t killAfter =
      config.every * std::uniform_int_distribution<int64_t>(1, checkpoints - 1)(rng);

  std::fprintf(out,
               "bench checkpoint: %s, %.1f M parameters (%.0f MB with SGD momentum's state), %s "
               "on %d local nodes, global batch %lld, %lld steps, a checkpoint every %lld\n",
               shape(config).c_str(), static_cast<double>(params) / 1e6, stateMb,
               config.strategy.c_str(), config.localNodes, static_cast<long long>(config.batch),
               static_cast<long long>(config.steps), static_cast<long long>(config.every));
  std::fprintf(out, "  %s, %s\n", machineDescription().c_str(), utcNow().c_str());
  std::fflush(out);

  std::optional<ScratchDir> scratch;
  fs::path dir = config.directory;
  if (dir.empty()) {
    scratch.emplace("dtlab-bench-checkpoint");
    dir = scratch->path();
  }
  fs::create_directories(dir);
  for (const char* name : {"plain.dtlab", "checkpoints.dtlab", "killed.dtlab"})
    fs::remove(dir / name);
  writeFile(dir / "plain.json", specOf(config, false).dump(2));
  writeFile(dir / "checkpoints.json", specOf(config, true).dump(2));

  // 1. Uninterrupted, without checkpoints and with them.
  std::fprintf(stderr, "  running without checkpoints ...\n");
  const std::string reference = checksumOf(runSelf({"run", (dir / "plain.json").string(), "--quiet",
                                                    "--project", (dir / "plain.dtlab").string()},
                                                   dir / "plain.log"));
  std::fprintf(stderr, "  running with checkpoints ...\n");
  const std::string withCheckpoints =
      checksumOf(runSelf({"run", (dir / "checkpoints.json").string(), "--quiet", "--project",
                          (dir / "checkpoints.dtlab").string()},
                         dir / "checkpoints.log"));

  // 2. Killed after a checkpoint, resumed.
  std::fprintf(stderr,
               "  running again, killed after the checkpoint of step %lld (seed %llu) ...\n",
               static_cast<long long>(killAfter), static_cast<unsigned long long>(seed));
  const fs::path killed = dir / "killed.dtlab";
  const pid_t pid = spawnSelf(
      {"run", (dir / "checkpoints.json").string(), "--quiet", "--project", killed.string()},
      dir / "killed.log");
  int status = 0;
  bool exited = false;
  while (newestCheckpoint(killed) < killAfter) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (exited)
    throw Error("the run to be killed ended before the checkpoint of step " +
                std::to_string(killAfter) + " (its output: " + (dir / "killed.log").string() + ")");
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  const int64_t killedAt = newestCheckpoint(killed);
  std::fprintf(stderr, "  resuming ...\n");
  const std::string resumed =
      checksumOf(runSelf({"resume", killed.string(), "1", "--quiet"}, dir / "resume.log"));

  // 3. The figures, from the projects.
  auto plainStore = core::ProjectStore::open((dir / "plain.dtlab").string(), true);
  auto store = core::ProjectStore::open((dir / "checkpoints.dtlab").string(), true);
  const std::vector<double> plainSteps = values(rankZero(*plainStore, "step_ms"));
  const std::vector<double> steps = values(rankZero(*store, "step_ms"));
  const std::vector<double> stalls = values(rankZero(*store, "checkpoint_stall_ms"));
  const std::vector<double> writes = values(rankZero(*store, "checkpoint_write_ms"));
  const std::vector<core::CheckpointInfo> kept = store->checkpoints(1);
  const int64_t bytes = kept.empty() ? 0 : kept.back().bytes;
  const int64_t parts =
      static_cast<int64_t>((static_cast<std::size_t>(bytes) + core::kCheckpointPartBytes - 1) /
                           core::kCheckpointPartBytes);

  const double plainStep = medianOr0(plainSteps);
  const double step = medianOr0(steps);
  const double stall = medianOr0(stalls);
  const double write = medianOr0(writes);
  CheckpointBenchOutcome outcome;
  outcome.sameParameters = withCheckpoints == reference && resumed == reference;
  outcome.mustMatch = config.strategy == "sync_allreduce";
  outcome.stallShare = plainStep > 0.0 ? stall / plainStep : 0.0;

  std::fprintf(out, "  %-34s %16s %10s\n", "run", "step ms (median)", "checksum");
  std::fprintf(out, "  %-34s %16.1f %10s\n", "without checkpoints", plainStep, reference.c_str());
  std::fprintf(out, "  %-34s %16.1f %10s\n", "with checkpoints", step, withCheckpoints.c_str());
  std::fprintf(out, "  %-34s %16s %10s\n",
               ("killed after step " + std::to_string(killedAt) + ", resumed").c_str(), "",
               resumed.c_str());
  std::fprintf(out,
               "  stall of a step at a checkpoint: median %.2f ms over %zu (the first, which "
               "allocates its buffer: %.1f ms) = %.1f%% of a step without checkpoints (target "
               "<= 10%%: %s)\n",
               stall, stalls.size(), stalls.empty() ? 0.0 : stalls.front(),
               100.0 * outcome.stallShare, outcome.stallShare <= 0.10 ? "met" : "missed");
  std::fprintf(out,
               "  write beside the training (encode, checksum, hand-over): median %.0f ms; "
               "stored %.1f MB in %lld parts of at most %zu MiB, %zu kept\n",
               write, static_cast<double>(bytes) / 1e6, static_cast<long long>(parts),
               core::kCheckpointPartBytes >> 20, kept.size());
  std::fprintf(out,
               "  steps with checkpoints take %+.0f%% (their encoding, transfer and storing "
               "share this machine's %d cores with the ranks)\n",
               plainStep > 0.0 ? 100.0 * (step / plainStep - 1.0) : 0.0, core::availableCores());
  std::fprintf(out, "  parameters after checkpoints and after kill + resume: %s\n",
               outcome.sameParameters ? "bit for bit the uninterrupted run's"
               : outcome.mustMatch    ? "DIFFERENT from the uninterrupted run's"
                                      : "other than the uninterrupted run's (as an asynchronous "
                                        "run's order of pushes is)");
  std::fflush(out);

  outcome.json = {{"bench", "checkpoint"},
                  {"model", shape(config)},
                  {"parameters", params},
                  {"strategy", config.strategy},
                  {"local_nodes", config.localNodes},
                  {"steps", config.steps},
                  {"every", config.every},
                  {"seed", seed},
                  {"step_ms_without", plainStep},
                  {"step_ms_with", step},
                  {"stall_ms", stalls},
                  {"stall_ms_median", stall},
                  {"stall_share", outcome.stallShare},
                  {"write_ms", writes},
                  {"checkpoint_bytes", bytes},
                  {"checkpoint_parts", parts},
                  {"killed_after_step", killedAt},
                  {"checksum", reference},
                  {"checksum_with_checkpoints", withCheckpoints},
                  {"checksum_resumed", resumed},
                  {"same_parameters", outcome.sameParameters},
                  {"must_match", outcome.mustMatch}};
  return outcome;
}

}  // namespace dtlab::bench
