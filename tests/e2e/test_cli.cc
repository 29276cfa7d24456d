// dtlab-cli as a user meets it: help for every command, flag errors, and summaries that
// survive a variant that cannot start.
#include <QtTest/QtTest>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/backend/backend.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "remote/cluster/local_cluster.h"
#include "tests/e2e/e2e_support.h"

using namespace dtlab;

namespace {

using e2e::cli;
using e2e::kCli;
using e2e::kNode;
using e2e::Outcome;
using e2e::writeSpec;

core::ExperimentSpec smallSpec() {
  core::ExperimentSpec spec;
  spec.seed = 3;
  spec.dataset.trainSize = 2048;
  spec.dataset.testSize = 256;
  spec.dataset.features = 8;
  spec.dataset.classes = 2;
  spec.model.hidden = {16};
  spec.training.batchSize = 32;
  spec.training.epochs = 0;
  spec.training.maxSteps = 20;
  spec.training.evalInterval = 10;
  return spec;
}

}  // namespace

class TestCli : public QObject {
  Q_OBJECT
 private slots:
  // `dtlab-cli --help` lists every command main() dispatches, and each of them (and each
  // benchmark and project action) answers --help with its own part, exit 0.
  void everyCommandAnswersHelp() {
    const Outcome all = cli({"--help"});
    QCOMPARE(all.exitCode, 0);
    const std::set<QString> dispatched = {"train",        "run",     "bench", "project",
                                          "export-trace", "version", "help"};
    for (const QString& command : dispatched)
      QVERIFY2(all.out.contains("\n  " + command), qPrintable(command));
    for (const QStringList& args :
         {QStringList{"train", "--help"}, QStringList{"run", "--help"},
          QStringList{"bench", "core", "--help"}, QStringList{"bench", "train", "-h"},
          QStringList{"bench", "allreduce", "--help"}, QStringList{"bench", "store", "--help"},
          QStringList{"project", "show", "--help"}, QStringList{"export-trace", "--help"},
          QStringList{"help", "project"}}) {
      const Outcome o = cli(args);
      const QString topic = args[0] == "help" ? args[1] : args[0];
      QVERIFY2(o.exitCode == 0, qPrintable(args.join(' ') + ": " + o.err));
      QVERIFY2(o.out.contains("  " + topic + " "), qPrintable(args.join(' ') + ": " + o.out));
      // Only that command's part.
      QVERIFY2(topic == "train" || !o.out.contains("\n  train "), qPrintable(o.out));
    }
    const Outcome unknown = cli({"frobnicate", "--help"});
    QCOMPARE(unknown.exitCode, 2);
    QVERIFY(unknown.err.contains("unknown command 'frobnicate'"));
  }

  // --dry-run (first or last) parses a command's arguments with the command's own flags and
  // stops: nothing is created, the spec is not looked at. What the command would refuse (an
  // unknown flag, a benchmark's misspelt flag, a missing value, a malformed integer) it
  // refuses with the command's own message, exit 2.
  void dryRunParsesAndDoesNothing() {
    QTemporaryDir dir;
    const QString project = dir.filePath("p.dtlab");
    const QString spec = dir.filePath("missing.json");
    for (const QStringList& args : {QStringList{"--dry-run", "run", spec, "--local-nodes", "2",
                                                "--project", project, "--repeats", "3", "--wait=5"},
                                    QStringList{"run", spec, "--project", project, "--dry-run"}}) {
      const Outcome o = cli(args);
      QVERIFY2(o.exitCode == 0, qPrintable(args.join(' ') + ": " + o.err));
      QCOMPARE(o.out, QString("dtlab-cli run: arguments parse (dry run; nothing done)\n"));
      QVERIFY2(!QFileInfo::exists(project), qPrintable(args.join(' ')));
    }
    const Outcome bench = cli({"--dry-run", "bench", "allreduce", "--bytes", "64K,1M"});
    QVERIFY2(bench.exitCode == 0, qPrintable(bench.err));
    QVERIFY2(bench.out.contains("bench allreduce: arguments parse"), qPrintable(bench.out));
    const std::pair<QStringList, QString> refused[] = {
        {{"--dry-run", "run", spec, "--project", project, "--no-such-flag"},
         "dtlab-cli run: unknown option --no-such-flag"},
        {{"--dry-run", "bench", "allreduce", "--local-nodes", "2", "--byts", "64K"},
         "dtlab-cli bench: unknown option --byts"},
        {{"run", spec, "--project", "--dry-run"}, "dtlab-cli run: --project: missing value"},
        {{"run", spec, "--repeats", "3x", "--dry-run"},
         "dtlab-cli run: --repeats: expected an integer, got '3x'"},
        {{"--dry-run", "bench", "allreduce", "--bytes", "64K,1X"},
         "dtlab-cli bench: --bytes: expected an integer (optionally with K, M or G), got '1X'"}};
    for (const auto& [args, message] : refused) {
      const Outcome o = cli(args);
      QVERIFY2(o.exitCode == 2, qPrintable(args.join(' ') + ": " + o.out + o.err));
      QVERIFY2(o.err.startsWith(message + "\n"), qPrintable(args.join(' ') + ": " + o.err));
      QVERIFY(o.out.isEmpty());
      QVERIFY2(!QFileInfo::exists(project), qPrintable(args.join(' ')));
    }
    // The same words as the command itself.
    const Outcome real = cli({"bench", "allreduce", "--bytes", "64K,1X"});
    QCOMPARE(real.exitCode, 2);
    QCOMPARE(cli({"--dry-run", "bench", "allreduce", "--bytes", "64K,1X"}).err, real.err);
  }

  // `bench data` times every kind (or those --kind names) on the host and says what is wrong
  // with a kind it does not know; --device needs a GPU, and names why there is none.
  void benchDataTimesEveryKind() {
    const Outcome all = cli({"bench", "data", "--samples", "500", "--reps", "1", "--json"});
    QVERIFY2(all.exitCode == 0, qPrintable(all.err));
    const auto out = nlohmann::json::parse(all.out.trimmed().split('\n').last().toStdString());
    QCOMPARE(out["kinds"].size(), std::size_t{8});
    for (const nlohmann::json& row : out["kinds"]) {
      QVERIFY2(row["host_samples_per_s"].get<double>() > 0.0, row.dump().c_str());
      QVERIFY2(!row.contains("device_samples_per_s"), row.dump().c_str());
      QVERIFY2(all.out.contains(QString::fromStdString(row["kind"].get<std::string>())),
               qPrintable(all.out));
    }
    QCOMPARE(out["kinds"][5]["features"], nlohmann::json(784));  // shapes
    const Outcome two = cli(
        {"bench", "data", "--kind", "shapes,teacher", "--samples", "200", "--reps", "1", "--json"});
    QVERIFY2(two.exitCode == 0, qPrintable(two.err));
    const auto chosen = nlohmann::json::parse(two.out.trimmed().split('\n').last().toStdString());
    QCOMPARE(chosen["kinds"].size(), std::size_t{2});
    QCOMPARE(chosen["kinds"][0]["kind"], nlohmann::json("shapes"));
    const Outcome unknown = cli({"bench", "data", "--kind", "blobs"});
    QCOMPARE(unknown.exitCode, 2);
    QVERIFY2(unknown.err.contains("unknown dataset kind 'blobs'") &&
                 unknown.err.contains("gaussian_blobs"),
             qPrintable(unknown.err));
    const Outcome gpu =
        cli({"bench", "data", "--device", "cuda:0", "--samples", "500", "--reps", "1", "--json"});
    if (core::cudaDeviceCount() == 0) {
      QCOMPARE(gpu.exitCode, 1);
      QVERIFY2(gpu.err.contains("cuda:0"), qPrintable(gpu.err));
    } else {
      QVERIFY2(gpu.exitCode == 0, qPrintable(gpu.err));
      const auto rows = nlohmann::json::parse(gpu.out.trimmed().split('\n').last().toStdString());
      for (const nlohmann::json& row : rows["kinds"])
        QVERIFY2(row["device_samples_per_s"].get<double>() > 0.0, row.dump().c_str());
    }
  }

  // `bench allreduce` sweeps rank counts and sizes in one command: a row each, DTLab's side
  // running what its tuning pass chose, every element checked; bad lists are usage errors.
  void benchAllReduceSweepsRanksAndSizes() {
    const Outcome o = cli({"bench", "allreduce", "--local-nodes", "2,3", "--bytes", "64K,256K",
                           "--reps", "2", "--warmup", "1", "--json"});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    const auto json = nlohmann::json::parse(o.out.trimmed().split('\n').last().toStdString());
    QCOMPARE(json["rows"].size(), std::size_t{4});
    std::set<std::pair<int, int64_t>> seen;
    for (const nlohmann::json& row : json["rows"]) {
      seen.insert({row["nodes"].get<int>(), row["bytes"].get<int64_t>()});
      QCOMPARE(row["wrong"].get<int64_t>(), int64_t{0});
      // One of the tuning pass's candidates: these processes share a host, so shared memory
      // is one of them.
      const std::string algorithm = row["algorithm"].get<std::string>();
      QVERIFY2(algorithm == "own" || algorithm == "gloo_allreduce" ||
                   algorithm == "halving_doubling" || algorithm == "shm",
               algorithm.c_str());
      QCOMPARE(row["sides"].size(), std::size_t{5});
      QVERIFY(row["tcp_stream_gbps"].get<double>() > 0.0);
      QVERIFY(row["busbw_gbps"].get<double>() > 0.0);
    }
    QCOMPARE(seen,
             (std::set<std::pair<int, int64_t>>{{2, 65536}, {3, 65536}, {2, 262144}, {3, 262144}}));
    QVERIFY2(o.out.contains("| 3 | 256 KiB |"), qPrintable(o.out));
    QCOMPARE(json["transport"], "auto");
    // On TCP only, as ranks on separate hosts: shared memory is not among the choices.
    const Outcome tcp = cli({"bench", "allreduce", "--local-nodes", "2", "--bytes", "64K", "--reps",
                             "1", "--warmup", "1", "--transport", "tcp", "--json"});
    QVERIFY2(tcp.exitCode == 0, qPrintable(tcp.err));
    const auto tcpJson = nlohmann::json::parse(tcp.out.trimmed().split('\n').last().toStdString());
    QCOMPARE(tcpJson["transport"], "tcp");
    QVERIFY2(tcpJson["rows"][0]["algorithm"] != "shm", tcpJson.dump().c_str());
    QCOMPARE(tcpJson["rows"][0]["wrong"].get<int64_t>(), int64_t{0});
    for (const QStringList& bad :
         {QStringList{"--bytes", "1X"}, QStringList{"--bytes", "64K,,1M"},
          QStringList{"--local-nodes", "1"}, QStringList{"--algorithm", "rign"},
          QStringList{"--transport", "udp"}}) {
      const Outcome refused = cli(QStringList{"bench", "allreduce"} + bad);
      QCOMPARE(refused.exitCode, 2);
      QVERIFY2(refused.err.contains(bad[0]), qPrintable(refused.err));
    }
  }

  // `bench ps`: both sides measured, every value received checked; bad flags are usage errors.
  void benchPsMeasuresBothSidesAndChecksEveryValue() {
    const Outcome o =
        cli({"bench", "ps", "--params", "70000", "--steps", "2", "--reps", "1", "--json"});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    const auto json = nlohmann::json::parse(o.out.trimmed().split('\n').last().toStdString());
    QCOMPARE(json["wrong"].get<int64_t>(), int64_t{0});
    QCOMPARE(json["bytes_each_way"].get<int64_t>(), int64_t{280000});
    QVERIFY(json["dtlab_ms"].get<double>() > 0.0 && json["gloo_ms"].get<double>() > 0.0);
    QCOMPARE(json["per_worker"].size(), std::size_t{2});
    QVERIFY2(o.out.contains("| 70000 | 2 |"), qPrintable(o.out));
    for (const QStringList& bad : {QStringList{"--workers", "0"}, QStringList{"--params", "x"}}) {
      const Outcome refused = cli(QStringList{"bench", "ps"} + bad);
      QCOMPARE(refused.exitCode, 2);
      QVERIFY2(refused.err.contains(bad[0]), qPrintable(refused.err));
    }
  }

  // `--version` names the libraries in use as well as DTLab's own version.
  void versionListsTheLibraries() {
    const Outcome o = cli({"--version"});
    QCOMPARE(o.exitCode, 0);
    for (const char* library : {"dtlab-cli ", "SQLite 3.", "oneDNN ", "Gloo ", "gRPC 1."})
      QVERIFY2(o.out.contains(library), qPrintable(o.out));
  }

  // `project add`: the spec's dataset, cluster and experiment become entities the window's
  // editors open, nothing runs; a second add of the same name replaces them; --name names them;
  // a broken spec is refused naming what is wrong, and the project keeps what it had.
  void projectAddPutsTheSpecsEntitiesWithoutRunning() {
    QTemporaryDir dir;
    core::ExperimentSpec spec = smallSpec();
    spec.name = "lab";
    spec.cluster.localNodes = 3;
    const QString specPath = writeSpec(dir, spec);
    const QString project = dir.filePath("p.dtlab");
    for (int i = 0; i < 2; ++i) {
      const Outcome o = cli({"project", "add", project, specPath});
      QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    }
    QCOMPARE(cli({"project", "add", project, specPath, "--name", "copy"}).exitCode, 0);
    QFile broken(dir.filePath("broken.json"));
    QVERIFY(broken.open(QIODevice::WriteOnly));
    broken.write(R"({"name": "x", "training": {"batch_size": 0}})");
    broken.close();
    const Outcome refused = cli({"project", "add", project, broken.fileName()});
    QCOMPARE(refused.exitCode, 1);
    QVERIFY2(refused.err.contains("training.batch_size"), qPrintable(refused.err));

    auto store = core::ProjectStore::open(project.toStdString(), true);
    QCOMPARE(store->runs().size(), std::size_t{0});
    for (const core::EntityKind kind :
         {core::EntityKind::kDataset, core::EntityKind::kTopology, core::EntityKind::kExperiment}) {
      std::vector<std::string> names;
      for (const core::Entity& e : store->entities(kind)) names.push_back(e.name);
      std::sort(names.begin(), names.end());
      QCOMPARE(names, (std::vector<std::string>{"copy", "lab"}));
    }
    const auto topology = store->entityByName(core::EntityKind::kTopology, "lab");
    QVERIFY(topology);
    QCOMPARE(topology->config.at("local_nodes").get<int>(), 3);
    const auto dataset = store->entityByName(core::EntityKind::kDataset, "lab");
    QVERIFY(dataset);
    QCOMPARE(dataset->config.at("train_size").get<int>(), 2048);
    const auto experiment = store->entityByName(core::EntityKind::kExperiment, "lab");
    QVERIFY(experiment);
    QVERIFY(core::sameExperiment(core::parseExperimentSpec(experiment->config), spec));
  }

  // With --project, the experiment is stored once, as the spec with all its variants, and each
  // variant's run belongs to it as EXPERIMENT/VARIANT (not an experiment of its own).
  void projectHoldsTheExperimentOnceAndARunPerVariant() {
    QTemporaryDir dir;
    core::ExperimentSpec spec = smallSpec();
    spec.name = "pair";
    spec.training.maxSteps = 6;
    spec.cluster.localNodes = 2;
    core::VariantConfig hetero;
    hetero.name = "hetero";
    hetero.settings.set("partition", std::string("speed_proportional"));
    hetero.settings.set("rebalance_every", int64_t{2});
    core::VariantConfig alone;
    alone.name = "alone";
    alone.nodes = 1;  // the baseline: the first node only
    spec.variants = {core::VariantConfig{"equal"}, hetero, alone};
    const QString project = dir.filePath("p.dtlab");
    const Outcome o = cli({"run", writeSpec(dir, spec), "--quiet", "--project", project});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    auto store = core::ProjectStore::open(project.toStdString(), true);
    const std::vector<core::Entity> experiments = store->entities(core::EntityKind::kExperiment);
    QCOMPARE(experiments.size(), std::size_t{1});
    QCOMPARE(experiments[0].name, std::string("pair"));
    QCOMPARE(core::parseExperimentSpec(experiments[0].config).variants.size(), std::size_t{3});
    const std::vector<core::RunRecord> runs = store->runs();
    QCOMPARE(runs.size(), std::size_t{3});
    std::set<std::string> names;
    for (const core::RunRecord& r : runs) {
      names.insert(r.name);
      QCOMPARE(r.experimentId, std::optional<int64_t>(experiments[0].id));
      QCOMPARE(r.status, core::RunStatus::kCompleted);
    }
    QCOMPARE(names, (std::set<std::string>{"pair/equal", "pair/hetero", "pair/alone"}));

    // The summaries echo the partition and the workers, with each worker's utilisation and
    // how often the shares moved (events of kind "rebalance").
    const auto out = nlohmann::json::parse(o.out.trimmed().split('\n').last().toStdString());
    QCOMPARE(out["runs"][0]["partition"], nlohmann::json("equal"));
    QCOMPARE(out["runs"][1]["partition"], nlohmann::json("speed_proportional"));
    for (const nlohmann::json& run : out["runs"]) {
      const std::size_t nodes = run["name"] == "alone" ? 1 : 2;
      QCOMPARE(run["nodes"], nlohmann::json(nodes));
      QCOMPARE(run["param_checksum"].size(), nodes);  // one replica a worker
      QCOMPARE(run["utilization"].size(), nodes);
      for (const nlohmann::json& u : run["utilization"])
        QVERIFY2(u.get<double>() > 0.0 && u.get<double>() <= 1.0, run.dump().c_str());
      int64_t moves = 0;
      for (const nlohmann::json& e : run["events"]) moves += e["kind"] == "rebalance";
      QCOMPARE(run["rebalances"], nlohmann::json(moves));
    }
    QCOMPARE(out["runs"][0]["rebalances"], nlohmann::json(0));
  }

  // Two local nodes with as many worker threads as this machine has cores: more busy threads
  // than cores, which the run says in an event and in its summary. One node of one thread does
  // not contend.
  void oversubscribedHostIsSaid() {
    QTemporaryDir dir;
    core::ExperimentSpec spec = smallSpec();
    spec.training.maxSteps = 4;
    spec.cluster.localNodes = 2;
    spec.cluster.threadsPerNode =
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const Outcome busy = cli({"run", writeSpec(dir, spec), "--quiet"});
    QVERIFY2(busy.exitCode == 0, qPrintable(busy.err));
    const auto out = nlohmann::json::parse(busy.out.trimmed().split('\n').last().toStdString());
    const nlohmann::json& run = out["runs"][0];
    QCOMPARE(run["contended"], nlohmann::json(true));
    bool said = false;
    for (const nlohmann::json& e : run["events"])
      if (e["kind"] == "contention") {
        said = true;
        const std::string detail = e["detail"].get<std::string>();
        QVERIFY2(detail.find(std::to_string(2 * spec.cluster.threadsPerNode) +
                             " busy worker threads on ") != std::string::npos,
                 detail.c_str());
        QVERIFY2(detail.find("timings include the contention") != std::string::npos,
                 detail.c_str());
      }
    QVERIFY(said);

    spec.cluster.localNodes = 1;
    spec.cluster.threadsPerNode = 1;
    const Outcome alone = cli({"run", writeSpec(dir, spec), "--quiet"});
    QVERIFY2(alone.exitCode == 0, qPrintable(alone.err));
    const auto quiet = nlohmann::json::parse(alone.out.trimmed().split('\n').last().toStdString());
    QCOMPARE(quiet["runs"][0]["contended"], nlohmann::json(false));
  }

  // A spec's straggler reaches the daemon that is that node: every one of its steps pauses
  // (probability 1), so its peer waits, and the run takes at least the pauses.
  void stragglerInTheSpecReachesItsDaemon() {
    QTemporaryDir dir;
    core::ExperimentSpec spec = smallSpec();
    spec.training.maxSteps = 6;
    spec.cluster.localNodes = 2;
    spec.cluster.nodes = {core::NodeConfig{}, core::NodeConfig{}};
    spec.cluster.nodes[1].straggler = {1.0, 60.0};
    spec.cluster.nodes[1].speedSchedule = {{3, 0.5}};
    const Outcome o = cli({"run", writeSpec(dir, spec), "--quiet"});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    const auto out = nlohmann::json::parse(o.out.trimmed().split('\n').last().toStdString());
    const nlohmann::json& run = out["runs"][0];
    QCOMPARE(run["status"], nlohmann::json("completed"));
    QVERIFY2(run["wall_s"].get<double>() > 6 * 0.060, run.dump().c_str());
    // Node 0 spent its steps waiting for node 1.
    QVERIFY2(run["utilization"][0].get<double>() < 0.5, run.dump().c_str());
  }

  // A daemon started with --straggler stalls every step (probability 1) of a job whose spec
  // says nothing of stragglers; its peer waits for it.
  void daemonStragglerFlagStallsItsSteps() {
    std::vector<std::unique_ptr<QProcess>> daemons;
    QStringList nodes;
    for (const QStringList& extra : {QStringList{}, QStringList{"--straggler", "1:60"}}) {
      auto daemon = std::make_unique<QProcess>();
      daemon->start(QString::fromStdString(kNode), QStringList{"--listen", "127.0.0.1:0"} + extra);
      QVERIFY(daemon->waitForStarted(10000));
      QByteArray out;
      while (!out.contains('\n') && daemon->waitForReadyRead(10000))
        out += daemon->readAllStandardOutput();
      const int at = out.indexOf("listening on ");
      QVERIFY2(at >= 0, out.constData());
      const int end = out.indexOf('\n', at);
      nodes << "--node" << QString::fromUtf8(out.mid(at + 13, end - at - 13)).trimmed();
      daemons.push_back(std::move(daemon));
    }
    QTemporaryDir dir;
    core::ExperimentSpec spec = smallSpec();
    spec.training.maxSteps = 6;
    const Outcome o = cli(QStringList{"run", writeSpec(dir, spec), "--quiet"} + nodes);
    for (auto& d : daemons) {
      d->terminate();
      d->waitForFinished(10000);
    }
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    const auto out = nlohmann::json::parse(o.out.trimmed().split('\n').last().toStdString());
    const nlohmann::json& run = out["runs"][0];
    QVERIFY2(run["wall_s"].get<double>() > 6 * 0.060, run.dump().c_str());
    QVERIFY2(run["utilization"][0].get<double>() < 0.5, run.dump().c_str());
  }

  void localNodesContradictingThePerNodeListIsAnError() {
    QTemporaryDir dir;
    core::ExperimentSpec spec = smallSpec();
    spec.cluster.localNodes = 2;
    spec.cluster.nodes = {core::NodeConfig{}, core::NodeConfig{}};
    spec.cluster.nodes[1].speed = 0.5;
    const QString path = writeSpec(dir, spec);
    const Outcome o = cli({"run", path, "--local-nodes", "3", "--quiet"});
    QCOMPARE(o.exitCode, 2);
    QVERIFY2(o.err.contains("--local-nodes 3 contradicts the spec's 2 per-node entries"),
             qPrintable(o.err));
  }

  // One daemon named twice is refused before anything starts, saying what to do instead.
  void aNodeListedTwiceIsAnError() {
    QTemporaryDir dir;
    const QString path = writeSpec(dir, smallSpec());
    const Outcome o =
        cli({"run", path, "--node", "127.0.0.1:7411", "--node", "127.0.0.1:7411", "--quiet"});
    QVERIFY(o.exitCode != 0);
    QVERIFY2(o.err.contains("node 127.0.0.1:7411 is listed twice (as node0 and node1)") &&
                 o.err.contains("--devices cpu:N"),
             qPrintable(o.err));
  }

  // A spec whose cluster names running daemons by address trains on them, each daemon with
  // the spec's emulation for it (the daemons were started without any), with the token.
  void runUsesTheDaemonsTheSpecNames() {
    remote::LocalCluster cluster(kNode, std::vector<remote::LocalNodeOptions>(2), "s3cret");
    QTemporaryDir dir;
    core::ExperimentSpec spec = smallSpec();
    spec.cluster.nodes = {core::NodeConfig{}, core::NodeConfig{}};
    for (int i = 0; i < 2; ++i) {
      spec.cluster.nodes[static_cast<std::size_t>(i)].address = cluster.address(i);
      // Every step's all-reduce waits this long: 20 steps take over a second only if the
      // nodes apply it.
      spec.cluster.nodes[static_cast<std::size_t>(i)].latencyMs = 60.0;
    }
    spec.cluster.localNodes = 2;
    const QString path = writeSpec(dir, spec);
    const QString project = dir.filePath("p.dtlab");
    const Outcome o = cli({"run", path, "--quiet", "--token", "s3cret", "--project", project});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    const auto out = nlohmann::json::parse(o.out.trimmed().split('\n').last().toStdString());
    const nlohmann::json& run = out["runs"][0];
    QCOMPARE(run["status"], nlohmann::json("completed"));
    QCOMPARE(run["steps"], nlohmann::json(20));
    QCOMPARE(run["param_checksum"].size(), 2u);  // two replicas: both daemons trained
    QVERIFY2(run["wall_s"].get<double>() > 20 * 0.060, run.dump().c_str());

    // Without the token the daemons refuse, and the message says which one and why.
    const Outcome refused = cli({"run", path, "--quiet"});
    QCOMPARE(refused.exitCode, 1);
    QVERIFY2(refused.err.contains(QString::fromStdString(cluster.address(0))) &&
                 refused.err.contains("UNAUTHENTICATED"),
             qPrintable(refused.err));

    // --local-nodes still overrides: the same topology tried on this machine.
    const Outcome local = cli({"run", path, "--quiet", "--local-nodes", "2"});
    QVERIFY2(local.exitCode == 0, qPrintable(local.err));
    const Outcome contradiction = cli({"run", path, "--quiet", "--local-nodes", "3"});
    QCOMPARE(contradiction.exitCode, 2);
  }

  // A hostfile names running daemons (ranks in line order) and each line's emulation: here
  // rank 1 at a quarter of rank 0's speed, which the scheduler's probe measures before the
  // first step. A bad line is refused naming the file and the line.
  void aHostfileNamesTheNodesAndTheirEmulation() {
    remote::LocalCluster cluster(kNode, std::vector<remote::LocalNodeOptions>(2));
    QTemporaryDir dir;
    core::ExperimentSpec spec = smallSpec();
    spec.dataset.features = 256;  // a probe of 64 rows long enough to time: about 0.1 ms
    spec.model.hidden = {512};
    spec.training.batchSize = 256;
    core::VariantConfig v;
    v.name = "scheduled";
    v.settings.set("partition", std::string("speed_proportional"));
    spec.variants = {v};
    const QString path = writeSpec(dir, spec);
    const QString hosts = dir.filePath("hosts");
    {
      std::ofstream out(hosts.toStdString());
      out << "# two daemons on loopback\n"
          << cluster.address(0) << " slots=1\n"
          << cluster.address(1) << " slots=1 speed=0.25  # the slow one\n";
    }
    const Outcome o = cli({"run", path, "--quiet", "--hostfile", hosts});
    QVERIFY2(o.exitCode == 0, qPrintable(o.err));
    const auto run =
        nlohmann::json::parse(o.out.trimmed().split('\n').last().toStdString())["runs"][0];
    QCOMPARE(run["nodes"], nlohmann::json(2));
    std::string start;
    for (const nlohmann::json& e : run["events"])
      if (e["kind"] == "start") start = e["detail"].get<std::string>();
    // "first shares 0.8xx,0.1xx by a probe before the first step": rank 1 is the slow one.
    const auto at = start.find("first shares ");
    QVERIFY2(at != std::string::npos, start.c_str());
    const double slow = std::stod(start.substr(start.find(',', at) + 1));
    QVERIFY2(slow < 0.35, start.c_str());

    {
      std::ofstream out(hosts.toStdString());
      out << cluster.address(0) << "\n" << cluster.address(1) << " speed=slow\n";
    }
    const Outcome bad = cli({"run", path, "--quiet", "--hostfile", hosts});
    QVERIFY(bad.exitCode != 0);
    QVERIFY2(bad.err.contains(hosts + ":2: speed must be a number, got 'slow'"),
             qPrintable(bad.err));
    // slots=N is checked against the daemon (these run one worker each).
    {
      std::ofstream out(hosts.toStdString());
      out << cluster.address(0) << " slots=1\n" << cluster.address(1) << " slots=2\n";
    }
    const Outcome mismatch = cli({"run", path, "--quiet", "--hostfile", hosts});
    QVERIFY(mismatch.exitCode != 0);
    QVERIFY2(mismatch.err.contains(hosts + ":2: slots=2, but " +
                                   QString::fromStdString(cluster.address(1)) + " runs 1 worker"),
             qPrintable(mismatch.err));
    const Outcome both = cli({"run", path, "--quiet", "--hostfile", hosts, "--local-nodes", "2"});
    QCOMPARE(both.exitCode, 2);
    QVERIFY2(both.err.contains("--hostfile names the cluster"), qPrintable(both.err));
  }

  // The second variant cannot start (its node stopped answering during the first, which
  // failed naming it): both summaries are printed, the first one's too.
  void summariesSurviveAVariantThatCannotStart() {
    remote::LocalCluster cluster(kNode, std::vector<remote::LocalNodeOptions>(2));
    QTemporaryDir dir;
    core::ExperimentSpec spec = smallSpec();
    spec.training.maxSteps = 100000000;
    spec.variants = {core::VariantConfig{"first"}, core::VariantConfig{"second"}};
    const QString path = writeSpec(dir, spec);
    const QString project = dir.filePath("p.dtlab");
    // The node stops once the first variant is under way (a step point recorded); if none
    // comes, it stops anyway so that the run ends, and the test fails saying so.
    bool underWay = false;
    std::thread stopper([&] {
      underWay = e2e::waitForStepPoint(project, std::chrono::seconds(60));
      cluster.signal(1, SIGSTOP);
    });
    const Outcome o = cli({"run", path, "--quiet", "--project", project, "--node",
                           QString::fromStdString(cluster.address(0)), "--node",
                           QString::fromStdString(cluster.address(1))},
                          120000);
    stopper.join();
    cluster.signal(1, SIGCONT);
    QVERIFY2(underWay, "no step point of the first variant recorded within 60 s");
    QCOMPARE(o.exitCode, 1);
    const QStringList lines = o.out.trimmed().split('\n');
    const auto out = nlohmann::json::parse(lines.last().toStdString());
    QCOMPARE(out["runs"].size(), 2u);
    QCOMPARE(out["runs"][0]["name"], nlohmann::json("first"));
    QCOMPARE(out["runs"][0]["status"], nlohmann::json("failed"));
    QVERIFY(out["runs"][0]["error"].get<std::string>().find("node1") != std::string::npos);
    QCOMPARE(out["runs"][1]["name"], nlohmann::json("second"));
    QCOMPARE(out["runs"][1]["status"], nlohmann::json("failed"));
    // It fails before any job: reserving its nodes, the stopped one does not answer.
    QVERIFY2(
        out["runs"][1]["error"].get<std::string>().find(
            "reserving node1 (" + cluster.address(1) + "): DEADLINE_EXCEEDED") != std::string::npos,
        out["runs"][1]["error"].get<std::string>().c_str());
  }

  // A spec for the GPU trains on one: where there is none, train fails saying why rather than
  // train on the CPU without a word. --device cpu asks for the CPU.
  void trainOfACudaSpecUsesTheGpuOrSaysWhyNot() {
    QTemporaryDir dir;
    core::ExperimentSpec spec;
    spec.dataset.trainSize = 512;
    spec.dataset.testSize = 64;
    spec.dataset.features = 8;
    spec.dataset.classes = 2;
    spec.model.hidden = {8};
    spec.training.batchSize = 32;
    spec.training.maxSteps = 3;
    spec.cluster.device = "cuda";
    const QString path = writeSpec(dir, spec);
    std::string noGpu = "no cuda backend";
    for (const core::BackendInfo& info : core::availableBackends())
      if (info.name == "cuda") noGpu = info.enabled ? "" : info.why;
    const Outcome gpu = cli({"train", path, "--quiet"});
    if (noGpu.empty()) {
      QCOMPARE(gpu.exitCode, 0);
      QVERIFY2(gpu.out.contains("rank 0/1 on cuda:0"), qPrintable(gpu.out));
    } else {
      QCOMPARE(gpu.exitCode, 1);
      QVERIFY2(gpu.err.contains("run failed") && gpu.err.contains("cuda"), qPrintable(gpu.err));
      QVERIFY2(!gpu.out.contains("rank 0/1 on cpu"), qPrintable(gpu.out));
    }
    const Outcome cpu = cli({"train", path, "--quiet", "--device", "cpu"});
    QCOMPARE(cpu.exitCode, 0);
    QVERIFY2(cpu.out.contains("rank 0/1 on cpu"), qPrintable(cpu.out));
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
