// Runs that outlive their coordinator: daemons hold a job on the coordinator's lease (its
// WatchJob streams), so a dtlab-cli that is killed, or stopped as a host that went silent
// would be, leaves no job training on its nodes: each node is free again within 10 s. The run
// it was recording reads as interrupted in its project once the process is gone.
#include <QtTest/QtTest>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "core/spec/experiment_spec.h"
#include "core/store/project_store.h"
#include "remote/cluster/local_cluster.h"
#include "remote/coordinator/coordinator.h"
#include "tests/e2e/e2e_support.h"
#include "tests/support/wait.h"

using namespace dtlab;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// Two nodes of sync_allreduce for as long as nobody stops them.
core::ExperimentSpec endlessSpec() {
  core::ExperimentSpec spec;
  spec.name = "endless";
  spec.dataset.trainSize = 2000;
  spec.dataset.testSize = 200;
  spec.dataset.features = 8;
  spec.model.hidden = {16};
  spec.training.batchSize = 32;
  spec.training.epochs = 0;
  spec.training.maxSteps = 100000000;
  spec.cluster.localNodes = 2;
  return spec;
}

bool nodeBusy(const std::string& address) {
  return remote::queryNode(address, {}, 2000ms).busy;
}

// Waits until `done` holds, up to `limit`; returns how long it took (or nullopt).
std::optional<std::chrono::milliseconds> timeUntil(const std::function<bool()>& done,
                                                   std::chrono::milliseconds limit) {
  const auto start = Clock::now();
  if (!test::waitUntil(done, limit, 100ms)) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

// The wall time of the last point stored in the project (ms after its run started), 0 while
// none is: read as the GUI would read a project another process records.
double lastStoredPointMs(const std::string& path) {
  if (!std::filesystem::exists(path)) return 0.0;
  try {
    auto store = core::ProjectStore::open(path, /*readOnly=*/true);
    double last = 0.0;
    for (const core::RunRecord& r : store->runs())
      for (const core::RunMetric& m : store->runMetrics(r.id)) last = std::max(last, m.lastWallMs);
    return last;
  } catch (const core::StoreError&) {
    return 0.0;  // the recorder is still creating it
  }
}

}  // namespace

class TestOrphans : public QObject {
  Q_OBJECT
 private slots:
  void aCoordinatorGoneFreesItsNodes_data() {
    QTest::addColumn<int>("signal");
    QTest::newRow("killed (SIGKILL)") << SIGKILL;
    QTest::newRow("silent (SIGSTOP: its host or network gone)") << SIGSTOP;
  }
  void aCoordinatorGoneFreesItsNodes() {
    QFETCH(int, signal);
    remote::LocalCluster cluster(e2e::kNode, {{}, {}});
    QTemporaryDir dir;
    QProcess coordinator;
    const QString project = dir.filePath("p.dtlab");
    coordinator.start(e2e::kCli,
                      {"run", e2e::writeSpec(dir, endlessSpec()), "--quiet", "--node",
                       QString::fromStdString(cluster.address(0)), "--node",
                       QString::fromStdString(cluster.address(1)), "--project", project});
    QVERIFY(coordinator.waitForStarted(10000));
    const auto pid = static_cast<pid_t>(coordinator.processId());
    QVERIFY2(timeUntil([&] { return nodeBusy(cluster.address(0)) && nodeBusy(cluster.address(1)); },
                       60s),
             "the run never started on both nodes");
    // Under way: watched, training, and points of it stored (an interrupted run ends at its last
    // point; a node busy generating its data has stored none yet).
    QVERIFY2(timeUntil([&] { return lastStoredPointMs(project.toStdString()) > 0.0; }, 60s),
             "no point of the run was stored in 60 s");
    QVERIFY(nodeBusy(cluster.address(0)) && nodeBusy(cluster.address(1)));

    ::kill(pid, signal);
    const auto freed = timeUntil(
        [&] { return !nodeBusy(cluster.address(0)) && !nodeBusy(cluster.address(1)); }, 30s);
    if (signal == SIGSTOP) ::kill(pid, SIGKILL);
    coordinator.waitForFinished(10000);
    QVERIFY2(freed.has_value(), "the nodes still run the orphaned job after 30 s");
    QVERIFY2(*freed < 10s, qPrintable(QString("freed after %1 ms").arg(freed->count())));

    // The recording process is gone: its run is interrupted, ended at its last point.
    const e2e::Outcome listed = e2e::cli({"project", "list", project, "--json"});
    QCOMPARE(listed.exitCode, 0);
    const auto runs = nlohmann::json::parse(listed.out.toStdString())["runs"];
    QCOMPARE(runs.size(), 1u);
    QCOMPARE(runs[0]["status"], nlohmann::json("interrupted"));
    QVERIFY(runs[0]["ended_ms"].get<int64_t>() > runs[0]["started_ms"].get<int64_t>());
    QVERIFY2(
        runs[0]["error"].get<std::string>().find("pid " + std::to_string(pid)) != std::string::npos,
        runs[0]["error"].dump().c_str());
  }
};

QTEST_GUILESS_MAIN(TestOrphans)
#include "test_orphans.moc"
