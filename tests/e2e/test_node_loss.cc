// on_node_loss through real daemons and dtlab-cli: a parameter-server run whose worker's daemon
// is SIGKILLed mid-run goes on with the other workers and reaches its target ("continue"); a
// lost shard is restored from the server's newest checkpoint (without one the run fails,
// naming it); a synchronous run re-forms its group on the
// surviving nodes from its last checkpoint and reaches its target ("restart"). Each recovery
// is an event and a figure of the summary.
#include <QtCore/QProcess>
#include <QtTest/QtTest>

#include <algorithm>
#include <csignal>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metrics/event_facts.h"
#include "core/store/project_store.h"
#include "tests/e2e/e2e_support.h"
#include "tests/remote/node_process.h"
#include "tests/sanitizers/sanitizers.h"

using namespace dtlab;

namespace {

using e2e::kCli;

// The daemons' emulated speed: slow enough that a run lasts seconds past its first checkpoint,
// a window to lose a node in. A daemon's compute is stretched from its own CPU time, which a
// sanitizer build already multiplies (ASan + UBSan: this file took 650-700 s at 0.01 against
// 63 s in a release build, past ctest's 600 s limit), so its daemons are slowed less, to a
// window about twice the release build's.
#if defined(DTLAB_ASAN) || defined(DTLAB_TSAN)
constexpr const char* kSpeed = "0.05";
#else
constexpr const char* kSpeed = "0.01";
#endif

// A model over the limits of a single message (2.2 M parameters: 18 MB with momentum), run at
// full speed (its compute alone makes a window to lose a node in).
const std::vector<int> kLargeModel = {2048, 1024};
constexpr const char* kLargeSpeed = "1";

// A teacher-network task that the strategies reach 80% on in a few hundred steps.
nlohmann::json specWith(int nodes, const nlohmann::json& variant,
                        const std::vector<int>& hidden = {128}) {
  return {{"name", "loss"},
          {"seed", 7},
          {"dataset",
           {{"kind", "teacher"},
            {"train_size", 8192},
            {"test_size", 1024},
            {"features", 32},
            {"classes", 4}}},
          {"model", {{"hidden", hidden}}},
          {"optimizer", {{"lr", 0.002}}},
          {"training",
           {{"batch_size", 64},
            {"epochs", 0},
            {"max_steps", 4000},
            {"eval_interval", 10},
            {"target_accuracy", 0.8},
            {"checkpoint_every", 10}}},
          {"cluster", {{"local_nodes", nodes}}},
          {"variants", {variant}}};
}

struct Run {
  // dtlab-nodes on free loopback ports at an emulated speed, so that a run lasts long enough
  // to lose a node in the middle of it.
  std::vector<std::unique_ptr<test::NodeProcess>> daemons;
  QTemporaryDir dir;
  QProcess cli;
  QString project;
  QString why;  // why the last wait failed

  // `speed`: the daemons' --speed (a large model is slow enough at full speed).
  bool start(int nodes, const nlohmann::json& spec, const char* speed = kSpeed) {
    QStringList args{"run", dir.filePath("spec.json"), "--project", dir.filePath("p.dtlab")};
    project = dir.filePath("p.dtlab");
    QFile file(dir.filePath("spec.json"));
    if (!file.open(QIODevice::WriteOnly)) return false;
    file.write(QByteArray::fromStdString(spec.dump()));
    file.close();
    for (int i = 0; i < nodes; ++i) {
      daemons.push_back(std::make_unique<test::NodeProcess>(
          QStringList{"--listen", "127.0.0.1:0", "--speed", speed}));
      if (!daemons.back()->ready()) return false;
      args << "--node" << QString::fromStdString(daemons.back()->address());
    }
    cli.start(kCli, args);
    return cli.waitForStarted(10000);
  }
  // The last line of the CLI's JSON output: the summary of the run.
  nlohmann::json finish(QString& err) {
    if (!cli.waitForFinished(120000)) {
      cli.kill();
      cli.waitForFinished();
    }
    err = QString::fromUtf8(cli.readAllStandardError());
    const QString out = QString::fromUtf8(cli.readAllStandardOutput()).trimmed();
    for (const QString& line : out.split('\n'))
      if (line.startsWith("{\"runs\"")) return nlohmann::json::parse(line.toStdString())["runs"][0];
    return nullptr;
  }
  void kill(int node, int signal = SIGKILL) {
    ::kill(static_cast<pid_t>(daemons[node]->process().processId()), signal);
  }
  // Whether the project shows what `seen` looks for within `timeout` (read-only, beside the
  // recording CLI). A CLI that ends first is a failure: `why` says how it ended.
  bool waitForStore(const std::function<bool(core::ProjectStore&, const core::RunRecord&)>& seen,
                    std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      try {
        auto store = core::ProjectStore::open(project.toStdString(), true);
        for (const core::RunRecord& run : store->runs())
          if (seen(*store, run)) return true;
      } catch (const std::exception&) {
      }
      if (cli.waitForFinished(50)) {
        why = "the CLI ended first (exit " + QString::number(cli.exitCode()) +
              "): " + QString::fromUtf8(cli.readAllStandardError()).right(600) + " | " +
              QString::fromUtf8(cli.readAllStandardOutput()).right(900);
        return false;
      }
    }
    why = "not within " + QString::number(timeout.count()) + " ms";
    return false;
  }
  bool waitForEvent(const std::string& kind, std::chrono::milliseconds timeout) {
    return waitForStore(
        [&](core::ProjectStore& store, const core::RunRecord& run) {
          const std::vector<core::RunEvent> events = store.events(run.id);
          return std::any_of(events.begin(), events.end(),
                             [&](const core::RunEvent& e) { return e.kind == kind; });
        },
        timeout);
  }
  bool waitForCheckpoint(std::chrono::milliseconds timeout) {
    return waitForStore(
        [](core::ProjectStore& store, const core::RunRecord& run) {
          return !store.checkpoints(run.id).empty();
        },
        timeout);
  }
};

// Empty when the run recovered once and reached its target, else what it did instead.
// A failure message short enough for QtTest (which cuts long ones): how the run ended and
// its events after the start, without the per-node ones.
std::string outcome(const nlohmann::json& summary) {
  std::string text = "status " + summary.value("status", std::string("?")) + " (" +
                     summary.value("stop_reason", std::string("?")) + "), recoveries " +
                     summary.value("recoveries", nlohmann::json()).dump() + ", steps " +
                     summary.value("steps", nlohmann::json()).dump() + "; error " +
                     summary.value("error", std::string("none")) + "; events:";
  for (const nlohmann::json& e : summary.value("events", nlohmann::json::array())) {
    const std::string kind = e.value("kind", std::string());
    if (kind == "node" || kind == "contention" || kind == "start") continue;
    text += " [" + kind + " @" + e.value("step", nlohmann::json()).dump() + "] " +
            e.value("detail", std::string());
  }
  return text;
}

std::string notRecoveredToTarget(const nlohmann::json& summary) {
  if (!summary.is_object()) return "no summary";
  if (summary["status"] != "completed" || summary["stop_reason"] != "target_accuracy" ||
      summary["recoveries"] != 1)
    return outcome(summary);
  return {};
}

int countEvents(const nlohmann::json& run, const std::string& kind) {
  int n = 0;
  for (const nlohmann::json& e : run["events"]) n += e["kind"] == kind ? 1 : 0;
  return n;
}

std::string eventDetail(const nlohmann::json& run, const std::string& kind) {
  for (const nlohmann::json& e : run["events"])
    if (e["kind"] == kind) return e["detail"].get<std::string>();
  return {};
}

// The facts of the run's first "node_lost" event, read as the codec reads a stored one.
std::optional<dtlab::core::NodeLossFacts> lossFacts(const nlohmann::json& run) {
  for (const nlohmann::json& e : run["events"])
    if (e["kind"] == "node_lost" && e.contains("data"))
      return dtlab::core::nodeLossFactsOf(
          {e["step"].get<int64_t>(), 0.0, "node_lost", "", e["data"].dump()});
  return std::nullopt;
}

}  // namespace

class TestNodeLoss : public QObject {
  Q_OBJECT
 private slots:
  void parameterServerWorkersContinueWithoutALostOne_data() {
    QTest::addColumn<QString>("variant");
    QTest::newRow("async_ps")
        << R"({"strategy": "async_ps", "ps_shards": 1, "on_node_loss": "continue"})";
    QTest::newRow("ssp") << R"({"strategy": "ssp", "staleness": 2, "ps_shards": 2,
                                "on_node_loss": "continue"})";
  }
  void parameterServerWorkersContinueWithoutALostOne() {
    QFETCH(QString, variant);
    Run run;
    QVERIFY(run.start(4, specWith(4, nlohmann::json::parse(variant.toStdString()))));
    QVERIFY(e2e::waitForStepPoint(run.project, std::chrono::seconds(60)));
    run.kill(3);  // a worker's node; shard 0 lives on node0
    QString err;
    const nlohmann::json summary = run.finish(err);
    QVERIFY2(summary.is_object(), qPrintable(err));
    QVERIFY2(notRecoveredToTarget(summary).empty(), notRecoveredToTarget(summary).c_str());
    QCOMPARE(summary["steps_lost"], nlohmann::json(0));
    QCOMPARE(countEvents(summary, "node_lost"), 1);
    const std::string lost = eventDetail(summary, "node_lost");
    QVERIFY2(lost.find(run.daemons[3]->address()) != std::string::npos &&
                 lost.find("the other 3 workers go on") != std::string::npos,
             lost.c_str());
    QVERIFY2(eventDetail(summary, "recovery").find("rank 3") != std::string::npos,
             eventDetail(summary, "recovery").c_str());
    const auto facts = lossFacts(summary);  // the same, as facts
    QVERIFY(facts.has_value());
    QCOMPARE(facts->rank, 3);
    QVERIFY2(facts->node.find(run.daemons[3]->address()) != std::string::npos, facts->node.c_str());
    QCOMPARE(facts->shard, -1);
    QVERIFY(facts->outcome == dtlab::core::NodeLossFacts::Outcome::kOthersGoOn);
    // The project says the same, and the comparison shows the recovery.
    const e2e::Outcome compare = e2e::cli({"compare", run.project, "--format", "json"});
    QCOMPARE(compare.exitCode, 0);
    const auto rows = nlohmann::json::parse(compare.out.toStdString())["rows"];
    QCOMPARE(rows[0]["recoveries"], nlohmann::json(1));
    QVERIFY(rows[0]["recovery_s"].get<double>() > 0.0);
  }

  // A lost shard's blocks come back from the newest checkpoint of the server: the run
  // restarts on the other nodes from it and reaches its target. Shard 0 (with the workers'
  // board and the evaluating rank) or another.
  // The last row's server holds 18 MB (2.2 M parameters with their momentum): its snapshot,
  // checkpoint and restore travel in parts, beyond what one message carries.
  void aLostShardIsRestoredFromTheServersCheckpoint_data() {
    QTest::addColumn<QString>("variant");
    QTest::addColumn<int>("victim");
    QTest::addColumn<std::vector<int>>("hidden");
    QTest::newRow("async_ps, shard 1 of 2")
        << R"({"strategy": "async_ps", "ps_shards": 2, "on_node_loss": "continue"})" << 1
        << std::vector<int>{128};
    QTest::newRow("ssp, shard 0 of 1") << R"({"strategy": "ssp", "staleness": 2, "ps_shards": 1,
                                             "on_node_loss": "continue"})"
                                       << 0 << std::vector<int>{128};
    QTest::newRow("async_ps, shard 1 of 2, 18 MB of state")
        << R"({"strategy": "async_ps", "ps_shards": 2, "on_node_loss": "continue"})" << 1
        << kLargeModel;
  }
  void aLostShardIsRestoredFromTheServersCheckpoint() {
    QFETCH(QString, variant);
    QFETCH(int, victim);
    QFETCH(std::vector<int>, hidden);
    Run run;
    QVERIFY(run.start(3, specWith(3, nlohmann::json::parse(variant.toStdString()), hidden),
                      hidden == kLargeModel ? kLargeSpeed : kSpeed));
    QVERIFY2(run.waitForCheckpoint(std::chrono::seconds(60)), qPrintable(run.why));
    run.kill(victim);
    QString err;
    const nlohmann::json summary = run.finish(err);
    QVERIFY2(summary.is_object(), qPrintable(err));
    QVERIFY2(notRecoveredToTarget(summary).empty(), notRecoveredToTarget(summary).c_str());
    const std::string lost = eventDetail(summary, "node_lost");
    QVERIFY2(lost.find("it served parameter-server shard " + std::to_string(victim) +
                       ": the run restarts on the other nodes") != std::string::npos,
             lost.c_str());
    const auto facts = lossFacts(summary);
    QVERIFY(facts.has_value());
    QCOMPARE(facts->shard, victim);
    QVERIFY(facts->outcome == dtlab::core::NodeLossFacts::Outcome::kRestartsFromCheckpoint);
    const std::string recovery = eventDetail(summary, "recovery");
    QVERIFY2(recovery.find(run.daemons[static_cast<std::size_t>(victim)]->address() +
                           ") (parameter-server shard " + std::to_string(victim) +
                           ") lost; restarted on 2 ranks") != std::string::npos &&
                 recovery.find("from the checkpoint of step ") != std::string::npos,
             recovery.c_str());
    QVERIFY(summary["recovery_s"].get<double>() > 0.0);
  }

  // A worker's node lost first (the run goes on without it), then the shard's: the run
  // restarts from the server's checkpoint on the two nodes left, not on the dead one.
  void aShardLostAfterAWorkerRestartsOnTheNodesLeft() {
    Run run;
    QVERIFY(run.start(
        4,
        specWith(4, {{"strategy", "async_ps"}, {"ps_shards", 1}, {"on_node_loss", "continue"}})));
    QVERIFY2(run.waitForCheckpoint(std::chrono::seconds(60)), qPrintable(run.why));
    run.kill(3);
    QVERIFY2(run.waitForEvent("recovery", std::chrono::seconds(20)), qPrintable(run.why));
    run.kill(0);  // shard 0
    QString err;
    const nlohmann::json summary = run.finish(err);
    QVERIFY2(summary.is_object(), qPrintable(err));
    QVERIFY2(summary["status"] == "completed" && summary["recoveries"] == 2,
             outcome(summary).c_str());
    QCOMPARE(summary["nodes"], nlohmann::json(2));
    std::string restarted;
    for (const nlohmann::json& e : summary["events"])
      if (e["kind"] == "recovery") restarted = e["detail"].get<std::string>();
    QVERIFY2(restarted.find("restarted on 2 ranks") != std::string::npos &&
                 restarted.find(run.daemons[1]->address()) != std::string::npos &&
                 restarted.find(run.daemons[2]->address()) != std::string::npos,
             restarted.c_str());
  }

  void aLostShardWithoutACheckpointFailsTheRunNamingIt() {
    nlohmann::json spec =
        specWith(3, nlohmann::json::parse(
                        R"({"strategy": "async_ps", "ps_shards": 2, "on_node_loss": "continue"})"));
    spec["training"]["checkpoint_every"] = 0;
    Run run;
    QVERIFY(run.start(3, spec));
    QVERIFY(e2e::waitForStepPoint(run.project, std::chrono::seconds(60)));
    run.kill(1);  // serves shard 1
    QString err;
    const nlohmann::json summary = run.finish(err);
    QVERIFY2(summary.is_object(), qPrintable(err));
    QCOMPARE(summary["status"], nlohmann::json("failed"));
    const std::string error = summary["error"].get<std::string>();
    QVERIFY2(error.find(run.daemons[1]->address()) != std::string::npos &&
                 error.find("parameter-server shard 1, whose blocks have no checkpoint yet") !=
                     std::string::npos,
             error.c_str());
    QCOMPARE(summary["recoveries"], nlohmann::json(0));
  }

  // local_sgd re-forms its group from the survivors and goes on from their replicas; losing
  // rank 0 (the evaluating rank, whose node hosted the group's rendezvous) included.
  void localSgdGoesOnWithoutALostNode_data() {
    QTest::addColumn<int>("lost");
    QTest::newRow("rank 0") << 0;
    QTest::newRow("rank 2") << 2;
  }
  void localSgdGoesOnWithoutALostNode() {
    QFETCH(int, lost);
    Run run;
    QVERIFY(run.start(
        4, specWith(4, {{"strategy", "local_sgd"}, {"period", 4}, {"on_node_loss", "continue"}})));
    QVERIFY(e2e::waitForStepPoint(run.project, std::chrono::seconds(60)));
    run.kill(lost);
    QString err;
    const nlohmann::json summary = run.finish(err);
    QVERIFY2(summary.is_object(), qPrintable(err));
    QVERIFY2(notRecoveredToTarget(summary).empty(), notRecoveredToTarget(summary).c_str());
    QCOMPARE(summary["steps_lost"], nlohmann::json(0));
    const std::string recovery = eventDetail(summary, "recovery");
    QVERIFY2(recovery.find(run.daemons[static_cast<std::size_t>(lost)]->address()) !=
                     std::string::npos &&
                 recovery.find("the group went on with 3 workers") != std::string::npos,
             recovery.c_str());
    QVERIFY(summary["recovery_s"].get<double>() > 0.0);
    // The three survivors end with the same averaged model.
    QCOMPARE(summary["param_checksum"].size(), std::size_t{3});
    QCOMPARE(summary["param_checksum"][0], summary["param_checksum"][1]);
    QCOMPARE(summary["param_checksum"][0], summary["param_checksum"][2]);
  }

  // The hybrid leaves a lost worker behind while it trains asynchronously; a lost shard, or a
  // node lost while its group is in use (synchronous), restarts it from its newest checkpoint,
  // and without one fails the run, saying why.
  void theHybridContinuesInPlaceOnlyWhileAsynchronous() {
    const nlohmann::json variant = {{"strategy", "hybrid"},
                                    {"policy", "sync_then_async"},
                                    {"switch_at", 0.02},
                                    {"ps_shards", 1},
                                    {"on_node_loss", "continue"}};
    {
      Run run;
      QVERIFY(run.start(3, specWith(3, variant)));
      QVERIFY2(run.waitForEvent("strategy_switch", std::chrono::seconds(90)), qPrintable(run.why));
      run.kill(2);
      QString err;
      const nlohmann::json summary = run.finish(err);
      QVERIFY2(summary.is_object(), qPrintable(err));
      QVERIFY2(summary["status"] == "completed", outcome(summary).c_str());
      QCOMPARE(summary["recoveries"], nlohmann::json(1));
      QVERIFY2(
          eventDetail(summary, "recovery").find("left the parameter server") != std::string::npos,
          eventDetail(summary, "recovery").c_str());
    }
    {  // Its shard: the run restarts from its newest checkpoint, in that checkpoint's phase.
      Run run;
      QVERIFY(run.start(3, specWith(3, variant)));
      QVERIFY2(run.waitForEvent("strategy_switch", std::chrono::seconds(90)), qPrintable(run.why));
      QVERIFY2(run.waitForCheckpoint(std::chrono::seconds(60)), qPrintable(run.why));
      run.kill(0);
      QString err;
      const nlohmann::json summary = run.finish(err);
      QVERIFY2(summary.is_object(), qPrintable(err));
      QVERIFY2(notRecoveredToTarget(summary).empty(), notRecoveredToTarget(summary).c_str());
      QVERIFY2(eventDetail(summary, "recovery")
                       .find("(parameter-server shard 0) lost; restarted "
                             "on 2 ranks") != std::string::npos,
               eventDetail(summary, "recovery").c_str());
      QCOMPARE(countEvents(summary, "hybrid_phase"), 1);
    }
    nlohmann::json late = variant;
    late["switch_at"] = 0.9;
    {  // While synchronous, with checkpoints: the group re-forms on the others from the newest.
      Run run;
      QVERIFY(run.start(3, specWith(3, late)));
      QVERIFY2(run.waitForCheckpoint(std::chrono::seconds(60)), qPrintable(run.why));
      run.kill(2);
      QString err;
      const nlohmann::json summary = run.finish(err);
      QVERIFY2(summary.is_object(), qPrintable(err));
      QVERIFY2(notRecoveredToTarget(summary).empty(), notRecoveredToTarget(summary).c_str());
      QVERIFY2(
          eventDetail(summary, "node_lost").find("training synchronously") != std::string::npos &&
              eventDetail(summary, "node_lost").find("restarts on the other nodes") !=
                  std::string::npos,
          eventDetail(summary, "node_lost").c_str());
    }
    {  // Without any: the run fails, saying why.
      Run run;
      nlohmann::json spec = specWith(3, late);
      spec["training"]["checkpoint_every"] = 0;
      QVERIFY(run.start(3, spec));
      QVERIFY(e2e::waitForStepPoint(run.project, std::chrono::seconds(60)));
      run.kill(2);
      QString err;
      const nlohmann::json summary = run.finish(err);
      QVERIFY2(summary.is_object(), qPrintable(err));
      QCOMPARE(summary["status"], nlohmann::json("failed"));
      const std::string error = summary["error"].get<std::string>();
      QVERIFY2(error.find(run.daemons[2]->address()) != std::string::npos &&
                   error.find("training synchronously") != std::string::npos,
               error.c_str());
    }
  }

  void aSynchronousGroupRestartsOnTheSurvivorsFromItsCheckpoint_data() {
    QTest::addColumn<std::vector<int>>("hidden");
    QTest::newRow("small") << std::vector<int>{128};
    QTest::newRow("18 MB of state") << kLargeModel;
  }
  void aSynchronousGroupRestartsOnTheSurvivorsFromItsCheckpoint() {
    QFETCH(std::vector<int>, hidden);
    Run run;
    QVERIFY(run.start(
        3, specWith(3, {{"strategy", "sync_allreduce"}, {"on_node_loss", "restart"}}, hidden),
        hidden == kLargeModel ? kLargeSpeed : kSpeed));
    QVERIFY2(run.waitForCheckpoint(std::chrono::seconds(60)), qPrintable(run.why));
    run.kill(2);
    QString err;
    const nlohmann::json summary = run.finish(err);
    QVERIFY2(summary.is_object(), qPrintable(err));
    QVERIFY2(notRecoveredToTarget(summary).empty(), notRecoveredToTarget(summary).c_str());
    QCOMPARE(summary["nodes"], nlohmann::json(2));  // the re-formed group
    const std::string recovery = eventDetail(summary, "recovery");
    QVERIFY2(recovery.find(run.daemons[2]->address() + ") lost; restarted on 2 ranks") !=
                     std::string::npos &&
                 recovery.find("from the checkpoint of step ") != std::string::npos,
             recovery.c_str());
    // The figure is the event's: "..., N steps lost; recovered in ...".
    const int64_t stepsLost = summary["steps_lost"].get<int64_t>();
    QVERIFY2(recovery.find(", " + std::to_string(stepsLost) +
                           (stepsLost == 1 ? " step lost" : " steps lost")) != std::string::npos,
             recovery.c_str());
    QVERIFY(summary["recovery_s"].get<double>() > 0.0);
    // The two replicas of the re-formed group agree.
    QCOMPARE(summary["param_checksum"].size(), std::size_t{2});
    QCOMPARE(summary["param_checksum"][0], summary["param_checksum"][1]);
  }

  // A run that fails while its nodes go on training (the coordinator lost sight of both: their
  // daemons stopped, then woke after the run was given up) does not fail the runs after it:
  // the next one aborts the jobs left behind, waits for them to end, says so, and completes.
  void aFailedRunLeavesItsNodesFreeForTheNext() {
    nlohmann::json spec = specWith(2, nullptr);
    spec["training"].erase("target_accuracy");
    spec["training"].erase("checkpoint_every");
    spec["training"]["max_steps"] = 1000;  // several seconds a run, a window to stop it in
    spec["variants"] = {{{"name", "first"}, {"strategy", "sync_allreduce"}},
                        {{"name", "second"}, {"strategy", "sync_allreduce"}},
                        {{"name", "third"}, {"strategy", "sync_allreduce"}}};
    Run run;
    QVERIFY(run.start(2, spec));
    // The runs of a fresh project are 1, 2 and 3 in the order of the variants.
    auto runNamed = [](core::ProjectStore& store,
                       const std::string& name) -> std::optional<core::RunRecord> {
      const int64_t id = name == "first" ? 1 : name == "second" ? 2 : 3;
      for (const core::RunRecord& r : store.runs())
        if (r.id == id) return r;
      return std::nullopt;
    };
    QVERIFY2(run.waitForStore(
                 [&](core::ProjectStore& store, const core::RunRecord& r) {
                   if (r.id != 2) return false;
                   for (const core::SeriesInfo& series : store.series(r.id))
                     if (series.worker != core::kNoWorker && series.count > 0) return true;
                   return false;
                 },
                 std::chrono::seconds(60)),
             qPrintable(run.why));
    run.kill(0, SIGSTOP);
    run.kill(1, SIGSTOP);
    const bool givenUp = run.waitForStore(
        [&](core::ProjectStore& store, const core::RunRecord&) {
          const auto second = runNamed(store, "second");
          return second && second->status == core::RunStatus::kFailed;
        },
        std::chrono::seconds(60));
    run.kill(0, SIGCONT);
    run.kill(1, SIGCONT);
    QVERIFY2(givenUp, qPrintable(run.why));
    QString err;
    static_cast<void>(run.finish(err));
    auto store = core::ProjectStore::open(run.project.toStdString(), true);
    const auto third = runNamed(*store, "third");
    QVERIFY(third);
    QVERIFY2(third->status == core::RunStatus::kCompleted, qPrintable(err.right(1500)));
    QCOMPARE(runNamed(*store, "first")->status, core::RunStatus::kCompleted);
    int settled = 0;
    for (const core::RunEvent& e : store->events(third->id))
      settled += e.detail.find("was still running job") != std::string::npos &&
                 e.detail.find("it was aborted and had ended") != std::string::npos;
    QCOMPARE(settled, 2);  // both nodes, each named
  }
};

QTEST_GUILESS_MAIN(TestNodeLoss)
#include "test_node_loss.moc"
