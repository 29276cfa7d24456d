#include "app/bench_command.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "core/backend/cpu_backend.h"
#include "core/train/core_bench.h"

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

int benchCore(const std::vector<std::string>& argv) {
  const Args args(argv,
                  {"--threads", "--batch", "--in", "--hidden", "--layers", "--classes", "--reps",
                   "--reference"},
                  {"--json"});
  if (!args.positionals().empty()) throw UsageError("unexpected argument " + args.positionals()[0]);
  core::CoreBenchConfig config;
  config.batch = args.integer("--batch", 256, 1, 1 << 20);
  config.inputs = args.integer("--in", 256, 1, 1 << 20);
  config.hidden = args.integer("--hidden", 1024, 1, 1 << 16);
  config.layers = args.integer("--layers", 2, 0, 64);
  config.classes = args.integer("--classes", 10, 2, 1 << 16);
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
  if (argv.empty()) throw UsageError("bench: expected what to measure (core)");
  const std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (argv[0] == "core") return benchCore(rest);
  throw UsageError("bench: unknown benchmark '" + argv[0] + "' (expected core)");
}

}  // namespace dtlab::app
