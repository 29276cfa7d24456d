// dtlab-cli: headless DTLab. Subcommands parse their flags here and call into core/.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "app/bench_command.h"
#include "app/compare_command.h"
#include "app/predict_command.h"
#include "app/progress.h"
#include "app/project_command.h"
#include "app/reference_docs.h"
#include "app/replay_command.h"
#include "app/report_command.h"
#include "app/resume_command.h"
#include "app/run_command.h"
#include "core/common/config.h"
#include "core/common/process_memory.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/train/local_trainer.h"
#include "remote/common/versions.h"

namespace {

using dtlab::app::Args;
using dtlab::app::UsageError;

constexpr const char* kUsageBeforeBench = R"(usage: dtlab-cli <command> [options]

commands:
  train SPEC.json [--threads N] [--device cpu|cuda:N] [--quiet] [--project P.dtlab]
      Train the spec's model in this process. Progress goes to stderr; the last
      line of stdout is {"runs":[summary]}. --project records the run, its metric
      series, events and summary in the project file (created when missing).
  run SPEC.json [--local-nodes N | --node HOST:PORT ... | --hostfile FILE]
      [--token T | --token-file F]
      [--project P.dtlab] [--repeats N] [--connect-timeout S] [--wait S | --no-wait]
      [--tls-cert F --tls-key F --tls-ca F] [--quiet]
      Run every strategy variant of the spec in turn on a cluster of dtlab-node
      daemons: the given --node daemons (ranks in the order given; each applies its
      own --speed/--bandwidth-mbps/--latency-ms), else those of a hostfile (one
      "HOST[:PORT] [slots=N] [speed=F] [bandwidth_mbps=F] [latency_ms=F]" a line, # for
      comments, port 7000 where none is given; ranks in line order, each given its
      line's emulation; slots=N checked against the daemon's workers), else N local
      ones on loopback
      (--local-nodes N), else the spec's cluster: the running daemons its nodes name
      by "address" (each given its node entry's speed, bandwidth and latency), or
      cluster.local_nodes local daemons. --token: the token of every node (local
      daemons are started with it); --token-file F: read from F (owner-only
      permissions), kept out of ps, as is the DTLAB_TOKEN environment variable. The last line of stdout is {"runs":[...]}, one
      summary per variant with a parameter checksum per replica. --project records
      every variant as a run (series per worker, events, summary) in the project file,
      the runs of this invocation grouped as one execution of the experiment.
      --repeats N (default: the spec's "repeats", 1): run every variant N times, all
      variants of repetition 1, then of repetition 2, ...; repetition r > 1 derives its
      own seed (initial weights, data order, emulated stragglers) from the spec's, the
      same for every variant, so the variants stay paired; the dataset is the same.
      At the end, the variants' comparison table (as `compare` prints it) goes to stderr.
      --connect-timeout: seconds the nodes may take to connect to each other (default:
      each node's own, 30). --tls-*: mutual TLS to daemons started with TLS (this
      client's certificate and key, the cluster's CA; dtlab-node gen-certs makes them).
      Nodes shared with other runs: each variant (and repetition) reserves all of its
      nodes at once and waits in their queues while others' runs hold them, saying what
      it waits for, up to --wait S seconds (default: the spec's cluster.wait_seconds,
      else 600); --no-wait fails a variant at once, naming the node and whose run holds it.
      SIGINT/SIGTERM cancels the run (a variant waiting for its nodes leaves the queues); the same signal again exits at once (so a
      launcher may send SIGINT after a job-wide SIGTERM without losing the record).
  resume P.dtlab RUN [--step S] [--local-nodes N | --node HOST:PORT ... | --hostfile FILE]
      [--token T]
      [--tls-cert F --tls-key F --tls-ca F] [--connect-timeout S] [--wait S | --no-wait]
      [--quiet]
      Continue a failed, cancelled or interrupted run from its newest checkpoint (or
      the one of step S; the spec's training.checkpoint_every / checkpoint_seconds
      keep them, the newest training.checkpoints_kept), on the nodes chosen as for
      `run`, into the same run: its points after that step are dropped and recorded
      again, and a "resume" event marks it. A synchronous run resumed on as many
      ranks ends with the parameters it would have had uninterrupted; a parameter-server
      run (async_ps, ssp) continues from its server's blocks, each worker from its own
      step (on another number of ranks, every worker from the run's progress), and a
      hybrid run in the phase its checkpoint was taken in.
  replay P.dtlab RUN [--until STEP [--weights FILE]]
      Re-run an async_ps, ssp or hybrid run in this process from its record of pushes
      (which worker's gradient the parameter server applied when, to which versions; a
      hybrid's asynchronous phases from the values each began with), one CPU thread per
      worker, and compare every recorded replica (each worker's at the end, and at the
      end of each asynchronous phase) with the run's checksums. Exit 0: the same bit for
      bit; 1: the replay diverged (it names the first push whose gradient came out other
      than the run's) or was refused. The last line of stdout is {"replay":{...}}.
      --until STEP: stop at the server's state after global step STEP (every block at
      version STEP x workers), print its checksum and the pushes in flight then (computed
      before, applied after, with their staleness); --weights FILE writes its parameters
      as float32. Synchronous strategies need no record: the same spec and seed repeat
      them.
)";

constexpr const char* kUsageAfterBench = R"(  project new P.dtlab [--name NAME]
  project add P.dtlab SPEC.json [--name NAME]
  project list P.dtlab [--json]
  project show P.dtlab [RUN] [--json]
  project export-csv P.dtlab [RUN [--key K ...]] [-o FILE]
  project delete-run P.dtlab RUN [--force]
      Create a project file; add a spec's dataset, cluster (as a topology) and
      experiment for the window's editors, without running it (named NAME, else the
      spec's name; entries of that name are replaced; the project is created when
      missing); list its runs; show the project or one run (metrics, series, events,
      summary); export runs (no RUN) or a run's points as CSV; delete a run with its
      data (--force: one still marked running).
  export-trace P.dtlab RUN [-o trace.json] [--from-step A] [--to-step B]
      The run's per-worker compute / communication / wait spans as Chrome
      trace-event JSON, for https://ui.perfetto.dev or chrome://tracing.
  compare P.dtlab [EXPERIMENT] [--execution N] [--pair VARIANT:BASELINE ...]
      [--seed-table] [--format table|csv|json]
      An experiment's variants side by side, as its latest execution (or execution N)
      ran them: staleness (mean, max), divergence, time to target, samples/s,
      utilisation, wait fraction, communication per sample, peak memory, final test
      accuracy, and why it stopped. With repetitions, one row per variant: the median
      of each figure over its completed runs with a 95% percentile-bootstrap interval,
      then, for each pair (--pair; default: every variant against the first), the ratio
      of medians of time to target, samples/s and utilisation with a paired-bootstrap
      interval, in how many repetitions it was higher or lower, and whether it holds
      (two-sided paired t-test on the log ratios, p < 0.05). CSV: one line per run;
      JSON: the runs and "statistics". EXPERIMENT: a name (default: the project's most
      recent). A figure a run did not record shows as "–" (CSV: empty, JSON: null).
      --seed-table: the seed article's comparison instead, a column per variant:
      consistency (max staleness, divergence), efficiency (time to target, samples/s,
      utilisation), memory (peak per worker), communication (bytes per sample),
      debuggability (replay), fault tolerance (node losses met); every cell a median
      with its interval or why there is none (JSON: each cell with how it was measured).
      With a calibration of the experiment (dtlab-cli calibrate), a yardstick follows the
      table: per run, the scale simulator's time per step for it as it ran and for its
      strategy's ideal, beside the measured one (JSON: "yardstick").
  report P.dtlab [EXPERIMENT] [--execution N] -o REPORT.html|REPORT.pdf
      An experiment's report as one self-contained file, to show without DTLab: the
      experiment in words (dataset, model, training, cluster with node speeds and
      links, variants), the comparison with medians and 95% intervals and the ratios,
      the seed table, the standard charts (loss and test accuracy against time and
      steps, throughput, utilisation, staleness; bytes per sample and time to target as
      bars) with each variant's median and band, the events that mattered, and the
      machines and versions it ran on. HTML: opens in a browser without a network
      (charts as inline SVG); PDF: A4 landscape, vector charts. Of the latest
      execution of EXPERIMENT (default: the project's most recent), or execution N.
  docs --out DIR | --check DIR
      The reference pages (docs/reference: strategies, dataset kinds, model kinds,
      metrics, this usage) as this build's registries describe them: --out writes them,
      --check fails naming each page that is not what this build makes.
  version
  help [COMMAND], COMMAND --help
      This text, or the part of it about one command. --dry-run COMMAND ... (or
      COMMAND ... --dry-run): parse the command's arguments as the command itself does,
      then stop: exit 0 saying they parse, or 2 with the usage error the command would
      give (an unknown flag, a missing value, a malformed integer). Nothing is read,
      written, started or connected: SPEC.json, P.dtlab and RUN are not looked at, and
      value ranges and flags that exclude each other are left to the command itself.
)";

std::string fullUsage() {
  return std::string(kUsageBeforeBench) + dtlab::app::benchUsage() + dtlab::app::predictUsage() +
         kUsageAfterBench;
}

// The part of the usage about `command`: its entries (a line indented by two spaces that
// starts with the command's name) and their descriptions (indented further).
std::string usageOf(const std::string& command) {
  std::string out;
  bool inside = false;
  std::size_t start = 0;
  const std::string text = fullUsage();
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    const bool entry = line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ';
    if (entry) {
      const std::string word = line.substr(2, line.find(' ', 2) - 2);
      inside = word == command;
    } else if (line.rfind("    ", 0) != 0) {
      inside = false;
    }
    if (inside) out += line + "\n";
  }
  return out;
}

int train(const std::vector<std::string>& argv) {
  const Args args(argv, {"--threads", "--device", "--project"}, {"--quiet"});
  if (args.positionals().size() != 1) throw UsageError("train: expected one SPEC.json");
  const dtlab::core::ExperimentSpec spec = dtlab::core::loadExperimentSpec(args.positionals()[0]);
  dtlab::core::LocalTrainOptions options;
  options.threads = static_cast<int>(args.integer("--threads", 0, 0, 256));
  // The spec's device unless --device says otherwise: a cuda spec trains on the first GPU, and
  // where there is none the run fails saying so rather than train on the CPU.
  options.device = args.value("--device", spec.cluster.device == "cuda" ? "cuda:0" : "cpu");
  const int64_t stepsPerEpoch = spec.dataset.trainSize / spec.training.batchSize;
  dtlab::app::ProgressPrinter progress(spec.name, dtlab::core::plannedSteps(spec, stepsPerEpoch),
                                       args.has("--quiet"));
  std::unique_ptr<dtlab::app::TrainRecording> recording;
  if (args.has("--project"))
    recording =
        std::make_unique<dtlab::app::TrainRecording>(args.value("--project", ""), spec, &progress);
  const dtlab::core::RunSummary summary =
      dtlab::core::trainLocal(spec, options, recording ? recording->sink() : &progress);
  const bool recorded = !recording || recording->finish(summary);
  nlohmann::json runs = nlohmann::json::array({dtlab::core::toJson(summary)});
  std::cout << nlohmann::json{{"runs", runs}}.dump() << std::endl;
  if (summary.status == dtlab::core::RunStatus::kFailed) {
    std::cerr << "dtlab-cli train: run failed: " << summary.error << "\n";
    return 1;
  }
  return recorded ? 0 : 1;
}

// `bench WHAT` and `project WHAT` name their action in what a dry run says.
std::string commandName(const std::string& command, const std::vector<std::string>& args) {
  if ((command == "bench" || command == "project") && !args.empty() && args[0][0] != '-')
    return command + " " + args[0];
  return command;
}

}  // namespace

int main(int argc, char** argv) {
  dtlab::core::keepLargeAllocationsInTheHeap();
  std::vector<std::string> args(argv + 1, argv + argc);
  // --dry-run before the command or as the last argument: every Args stops the command once
  // its arguments parse (app/args.h).
  if (!args.empty() && args.front() == "--dry-run") {
    dtlab::app::setDryRun(true);
    args.erase(args.begin());
  }
  if (!args.empty() && args.back() == "--dry-run") {
    dtlab::app::setDryRun(true);
    args.pop_back();
  }
  if (args.empty() || (args.size() == 1 && args[0] == "help") || args[0] == "--help" ||
      args[0] == "-h") {
    std::fputs(fullUsage().c_str(), args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  const bool wantsHelp = std::any_of(
      args.begin(), args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; });
  if (wantsHelp || (command == "help" && !args.empty())) {
    const std::string& topic = command == "help" ? args[0] : command;
    const std::string usage = usageOf(topic);
    if (usage.empty()) {
      std::cerr << "dtlab-cli: unknown command '" << topic << "'\nrun 'dtlab-cli help' for usage\n";
      return 2;
    }
    std::cout << "usage: dtlab-cli\n" << usage;
    return 0;
  }
  try {
    if (command == "train") return train(args);
    if (command == "run") return dtlab::app::runCommand(args);
    if (command == "resume") return dtlab::app::resumeCommand(args);
    if (command == "replay") return dtlab::app::replayCommand(args);
    if (command == "calibrate") return dtlab::app::calibrateCommand(args);
    if (command == "predict") return dtlab::app::predictCommand(args);
    if (command == "bench") return dtlab::app::benchCommand(args);
    if (command == "project") return dtlab::app::projectCommand(args);
    if (command == "export-trace") return dtlab::app::exportTraceCommand(args);
    if (command == "compare") return dtlab::app::compareCommand(args);
    if (command == "report") return dtlab::app::reportCommand(args);
    if (command == "docs") return dtlab::app::docsCommand(args, fullUsage());
    if (command == "version" || command == "--version") {
      if (dtlab::app::dryRun()) throw dtlab::app::DryRunDone{};
      std::cout << "dtlab-cli " << DTLAB_VERSION << "\n";
      for (const std::string& library : dtlab::remote::libraryVersions())
        std::cout << "  " << library << "\n";
      return 0;
    }
    throw UsageError("unknown command '" + command + "'");
  } catch (const dtlab::app::DryRunDone&) {
    std::cout << "dtlab-cli " << commandName(command, args)
              << ": arguments parse (dry run; nothing done)\n";
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "dtlab-cli " << command << ": " << e.what() << "\n"
              << "run 'dtlab-cli help' for usage\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "dtlab-cli " << command << ": " << e.what() << "\n";
    return 1;
  }
}
