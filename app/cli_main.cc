// dtlab-cli: headless DTLab. Subcommands parse their flags here and call into core/.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "app/bench_command.h"
#include "app/progress.h"
#include "core/common/config.h"
#include "core/spec/experiment_spec.h"
#include "core/train/local_trainer.h"

namespace {

using dtlab::app::Args;
using dtlab::app::UsageError;

constexpr const char* kUsage = R"(usage: dtlab-cli <command> [options]

commands:
  train SPEC.json [--threads N] [--device cpu] [--quiet]
      Train the spec's model in this process. Progress goes to stderr; the last
      line of stdout is {"runs":[summary]}.
  bench core [--threads N] [--batch B] [--in D] [--hidden H] [--layers L]
             [--classes C] [--reps R] [--reference torch|none] [--json]
      Median samples/s of full training steps (forward, backward, SGD momentum).
      Without --threads, every thread count from 1 to the cores is measured and the
      best reported. --reference torch (the default when PyTorch is installed) times
      the same step in PyTorch side by side and prints the ratio.
  version
  help
)";

int train(const std::vector<std::string>& argv) {
  const Args args(argv, {"--threads", "--device"}, {"--quiet"});
  if (args.positionals().size() != 1) throw UsageError("train: expected one SPEC.json");
  const dtlab::core::ExperimentSpec spec = dtlab::core::loadExperimentSpec(args.positionals()[0]);
  dtlab::core::LocalTrainOptions options;
  options.threads = static_cast<int>(args.integer("--threads", 0, 0, 256));
  options.device = args.value("--device", "cpu");
  const int64_t stepsPerEpoch = spec.dataset.trainSize / spec.training.batchSize;
  dtlab::app::ProgressPrinter progress(spec.name, dtlab::core::plannedSteps(spec, stepsPerEpoch),
                                       args.has("--quiet"));
  const dtlab::core::RunSummary summary = dtlab::core::trainLocal(spec, options, &progress);
  nlohmann::json runs = nlohmann::json::array({dtlab::core::toJson(summary)});
  std::cout << nlohmann::json{{"runs", runs}}.dump() << std::endl;
  if (summary.status == "failed") {
    std::cerr << "dtlab-cli train: run failed: " << summary.error << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "train") return train(args);
    if (command == "bench") return dtlab::app::benchCommand(args);
    if (command == "version" || command == "--version") {
      std::cout << "dtlab-cli " << DTLAB_VERSION << "\n";
      return 0;
    }
    throw UsageError("unknown command '" + command + "'");
  } catch (const UsageError& e) {
    std::cerr << "dtlab-cli " << command << ": " << e.what() << "\n"
              << "run 'dtlab-cli help' for usage\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "dtlab-cli " << command << ": " << e.what() << "\n";
    return 1;
  }
}
