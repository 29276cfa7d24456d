// The one runner `dtlab-cli run`, `dtlab-cli resume` and the workbench's Run share
// (remote/coordinator/execution_runner.h): what an execution is, what refuses a resume (the
// same words for every front end), and the loop in which a run that cannot start fails alone.
// A real project file; a coordinator whose node does not answer.
#include <QtTest/QtTest>

#include <QtCore/QTemporaryDir>

#include <nlohmann/json.hpp>

#include <atomic>
#include <string>
#include <vector>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/store/project_store.h"
#include "core/store/store_sink.h"
#include "remote/coordinator/coordinator.h"
#include "remote/coordinator/execution_runner.h"

using namespace dtlab;

namespace {

core::ExperimentSpec twoVariants(int64_t repeats) {
  return core::parseExperimentSpec({{"name", "runner"},
                                    {"repeats", repeats},
                                    {"cluster", {{"local_nodes", 2}}},
                                    {"variants",
                                     {{{"name", "sync"}, {"strategy", "sync_allreduce"}},
                                      {{"name", "async"}, {"strategy", "async_ps"}}}}});
}

std::string refusal(core::ProjectStore& store, int64_t runId) {
  try {
    remote::resumePoint(store, runId);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

class TestExecutionRunner : public QObject {
  Q_OBJECT

 private slots:
  void anExecutionIsEveryVariantRepeatedAndBegunInTheProject() {
    QTemporaryDir dir;
    auto store = core::ProjectStore::create(dir.filePath("p.dtlab").toStdString(), "p");
    const core::ExperimentSpec spec = twoVariants(2);
    const remote::ExecutionPlan plan = remote::planExecution(store.get(), spec);
    QCOMPARE(plan.runs.size(), std::size_t{4});
    QVERIFY(plan.executionId.has_value());
    QVERIFY(store->execution(*plan.executionId).has_value());
    QCOMPARE(remote::runLabel(spec, plan.runs[3]), std::string("async (2/2)"));
    QCOMPARE(remote::runLabel(twoVariants(1), plan.runs[0]), std::string("sync"));
    // Without a project nothing is begun.
    QVERIFY(!remote::planExecution(nullptr, spec).executionId.has_value());
  }

  // Each refusal in the words every front end shows.
  void aResumeIsRefusedWithTheReason() {
    QTemporaryDir dir;
    auto store = core::ProjectStore::create(dir.filePath("p.dtlab").toStdString(), "p");
    const core::ExperimentSpec spec = twoVariants(1);
    const remote::ExecutionPlan plan = remote::planExecution(store.get(), spec);
    core::RunRecording done(*store, plan.runs[0].spec, "sync_allreduce", plan.runs[0].name,
                            core::ExecutionSlot{*plan.executionId, 0});
    core::RunSummary completed;
    completed.status = core::RunStatus::kCompleted;
    done.finish(completed);
    QCOMPARE(refusal(*store, done.runId()), "run " + std::to_string(done.runId()) +
                                                " ('runner/sync') completed: nothing to resume");
    const int64_t noSpec =
        store->beginRun({std::nullopt, "bare", "sync_allreduce", 1, nullptr, std::nullopt, 0});
    QVERIFY2(refusal(*store, noSpec).ends_with("has no stored spec"),
             refusal(*store, noSpec).c_str());
    core::RunRecording stopped(*store, plan.runs[1].spec, "async_ps", plan.runs[1].name,
                               core::ExecutionSlot{*plan.executionId, 0});
    core::RunSummary failed;
    failed.status = core::RunStatus::kFailed;
    stopped.finish(failed);
    QCOMPARE(refusal(*store, stopped.runId()),
             core::whyNoCheckpoint(*store, store->requireRun(stopped.runId())));
    QVERIFY(refusal(*store, 999).find("999") != std::string::npos);
  }

  // A run that cannot start (its node does not answer) fails alone, with why; the observer sees
  // every run start and end in order, and a cancel stops before the next.
  void aRunThatCannotStartFailsAlone() {
    remote::CoordinatorOptions options;
    options.connectTimeout = std::chrono::seconds(1);
    remote::Coordinator coordinator({"127.0.0.1:9"}, options);
    const core::ExperimentSpec spec = twoVariants(1);
    remote::ExecutionPlan plan = remote::planExecution(nullptr, spec);
    struct Seen final : remote::ExecutionObserver {
      std::vector<std::string> events;
      std::atomic<bool>* cancelAfterFirst = nullptr;
      core::MetricSink* runStarting(const core::PlannedRun&, const std::string& label) override {
        events.push_back("start " + label);
        return nullptr;
      }
      void runFinished(const core::PlannedRun&, const std::string& label,
                       const core::RunSummary& s) override {
        events.push_back("end " + label + " " + core::toString(s.status));
        if (cancelAfterFirst != nullptr) cancelAfterFirst->store(true);
      }
    } seen;
    const std::vector<core::RunSummary> summaries =
        remote::runExecution(coordinator, plan, seen, nullptr);
    QCOMPARE(seen.events, (std::vector<std::string>{"start sync", "end sync failed", "start async",
                                                    "end async failed"}));
    QCOMPARE(summaries.size(), std::size_t{2});
    QCOMPARE(summaries[1].name, std::string("async"));
    QCOMPARE(summaries[1].strategy, std::string("async_ps"));
    QVERIFY(!summaries[0].error.empty());

    std::atomic<bool> cancel{false};
    seen.events.clear();
    seen.cancelAfterFirst = &cancel;
    QCOMPARE(remote::runExecution(coordinator, plan, seen, &cancel).size(), std::size_t{1});
  }
};

QTEST_GUILESS_MAIN(TestExecutionRunner)
#include "test_execution_runner.moc"
