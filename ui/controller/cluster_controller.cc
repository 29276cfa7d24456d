#include "ui/controller/cluster_controller.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>

#include "core/spec/execution_plan.h"
#include "core/store/checkpoint_parts.h"
#include "core/store/project_store.h"
#include "core/store/store_sink.h"
#include "core/train/local_trainer.h"
#include "core/train/strategy_registry.h"
#include "remote/cluster/local_cluster.h"
#include "remote/common/tls.h"
#include "remote/common/versions.h"
#include "remote/coordinator/coordinator.h"
#include "remote/coordinator/execution_runner.h"

namespace dtlab::ui {
namespace {

using Clock = std::chrono::steady_clock;

// Feeds every metric of every worker, node and evaluation to the live charts (one point per
// row of the metric table; NaN, e.g. a regression's accuracy, was not measured) and every
// event of the run, and turns
// rank 0's steps into RunProgress signals at most every 100 ms (the training threads report
// far more often than a status bar can show).
class ProgressSink final : public core::MetricSink {
 public:
  ProgressSink(ExperimentController* owner, LiveFeed* feed, qint64 runId, RunProgress base)
      : owner_(owner), feed_(feed), runId_(runId), base_(base) {}
  void onEval(const core::EvalMetrics& m) override { pushAll(m, -1, -1); }
  void onNode(const core::NodeMetrics& m) override { pushAll(m, -1, m.node); }
  void onEvent(const core::RunEvent& e) override {
    LivePoint p;
    p.runId = runId_;
    p.metric = -1;
    p.step = e.step;
    p.wallMs = e.wallMs;
    p.event = std::make_shared<const core::RunEvent>(e);
    feed_->push(p);
  }
  void onStep(const core::StepMetrics& m) override {
    pushAll(m, m.worker, -1);
    if (m.worker != 0) return;
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    RunProgress p = base_;
    p.step = m.step;
    p.loss = m.loss;
    QMetaObject::invokeMethod(
        owner_, [owner = owner_, p] { emit owner->progress(p); }, Qt::QueuedConnection);
  }

 private:
  template <typename Record>
  void pushAll(const Record& record, int worker, int node) {
    const auto rows = core::metricsOf(core::scopeOf<Record>());
    std::array<LivePoint, core::kMetricTable.size()> points;
    std::size_t n = 0;
    for (const core::MetricInfo* row : rows) {
      const double value = record.*core::fieldOf<Record>(*row);
      if (std::isnan(value)) continue;
      LivePoint& p = points[n++];
      p.runId = runId_;
      p.metric = static_cast<int>(row - core::kMetricTable.data());
      p.worker = worker;
      p.node = node;
      p.step = record.step;
      p.wallMs = record.wallMs;
      p.value = value;
    }
    feed_->push(std::span<const LivePoint>(points.data(), n));
  }

  ExperimentController* owner_;
  LiveFeed* feed_;
  qint64 runId_;
  RunProgress base_;
  std::mutex mutex_;
  Clock::time_point last_{};
};

}  // namespace

ClusterController::ClusterController(QObject* parent) : ExperimentController(parent) {
  qRegisterMetaType<RunProgress>();
  qRegisterMetaType<core::RunStatus>();
}

namespace {

NodeInfo nodeInfoOf(const remote::NodeSummary& n) {
  NodeInfo info;
  info.address = n.address;
  info.programVersion = n.programVersion;
  info.hostname = n.hostname;
  info.devices = n.devices;
  info.workerThreads = n.workerThreads;
  info.cores = n.cores;
  info.busy = n.busy;
  info.jobOwner = n.jobOwner;
  info.jobRun = n.jobRun;
  info.waitingRuns = static_cast<int>(
      std::count_if(n.reservations.begin(), n.reservations.end(),
                    [](const remote::NodeSummary::QueuedRun& r) { return !r.holds; }));
  info.speed = n.speed;
  info.bandwidthMbps = n.bandwidthMbps;
  info.latencyMs = n.latencyMs;
  return info;
}

remote::TlsFiles tlsFiles(const TlsPaths& paths) {
  return {paths.cert.toStdString(), paths.key.toStdString(), paths.ca.toStdString()};
}

}  // namespace

NodeInfo ClusterController::queryNode(const std::string& address, const std::string& token,
                                      const TlsPaths& tls) const {
  const remote::TlsFiles files = tlsFiles(tls);
  remote::checkTlsFiles(files);
  return nodeInfoOf(remote::queryNode(address, token, std::chrono::milliseconds(5000), files));
}

std::vector<NodeInfo> ClusterController::queryLocalNodes(const core::ClusterConfig& cluster) const {
  remote::LocalCluster local(remote::defaultNodeBinary(),
                             remote::localNodeOptions(cluster, cluster.localNodes));
  remote::Coordinator coordinator(local.addresses(), {});
  std::vector<NodeInfo> out;
  for (const remote::NodeSummary& n : coordinator.connect()) out.push_back(nodeInfoOf(n));
  return out;
}

std::vector<std::string> clusterLibraryVersions() {
  return remote::libraryVersions();
}

ClusterController::~ClusterController() {
  cancel_.store(true);
  if (worker_.joinable()) worker_.join();
}

bool ClusterController::start(const RunRequest& request) {
  if (busy_.exchange(true)) return false;
  if (worker_.joinable()) worker_.join();  // the previous request's thread has ended
  cancel_.store(false);
  worker_ = std::thread([this, request] { work(request); });
  return true;
}

void ClusterController::cancel() {
  cancel_.store(true);
}

void ClusterController::work(RunRequest request) {
  // Signals are emitted from this thread; Qt queues them to the receivers' (GUI) thread.
  try {
    const core::ExperimentSpec& spec = request.spec;
    std::unique_ptr<remote::LocalCluster> cluster;
    std::vector<std::string> nodes;
    for (const QString& n : request.nodes) nodes.push_back(n.toStdString());
    remote::CoordinatorOptions options;
    options.token = request.token.toStdString();
    for (int i = 0; i < request.tokens.size() && i < request.nodes.size(); ++i)
      if (!request.tokens[i].isEmpty())
        options.nodeTokens[request.nodes[i].toStdString()] = request.tokens[i].toStdString();
    options.tls = tlsFiles(request.tls);
    remote::checkTlsFiles(options.tls);
    options.onWaiting = [this](const std::string& what) {
      emit waiting(QString::fromStdString(what));
    };
    if (nodes.empty() && spec.cluster.remote()) nodes = spec.cluster.addresses();
    // The spec's own daemons run with its emulation: the topology describes them completely.
    if (spec.cluster.remote() && nodes == spec.cluster.addresses())
      options.emulation = spec.cluster.nodes;
    if (nodes.empty()) {
      cluster = std::make_unique<remote::LocalCluster>(
          remote::defaultNodeBinary(),
          remote::localNodeOptions(spec.cluster, spec.cluster.localNodes),
          request.token.toStdString());
      nodes = cluster->addresses();
    }
    remote::Coordinator coordinator(nodes, options);
    coordinator.connect();

    auto store = core::ProjectStore::open(request.projectPath.toStdString());
    const int64_t stepsPerEpoch = spec.dataset.trainSize / spec.training.batchSize;
    // A resume: that run's variant alone, from its checkpoint (the newest, or resumeStep's),
    // into the same run; otherwise one execution: every variant, repeated.
    std::vector<unsigned char> resume;
    remote::ExecutionPlan plan;
    if (request.resumeRunId > 0) {
      const remote::ResumePoint point =
          remote::resumePoint(*store, request.resumeRunId, request.resumeStep);
      resume = store->prepareResume(point.run.id, point.step);  // refuses a damaged one (below)
      plan = remote::planResume(point);
    } else {
      plan = remote::planExecution(store.get(), spec);
      emit executionStarted(*plan.executionId);
    }

    // Each run recorded into the project, its progress fed to the window.
    struct Observer final : remote::ExecutionObserver {
      ClusterController& owner;
      core::ProjectStore& store;
      const remote::ExecutionPlan& plan;
      const RunRequest& request;
      int64_t stepsPerEpoch;
      int index = 0;
      std::unique_ptr<core::RunRecording> recording;
      std::unique_ptr<ProgressSink> progress;
      std::unique_ptr<core::FanOutSink> sink;

      Observer(ClusterController& o, core::ProjectStore& s, const remote::ExecutionPlan& p,
               const RunRequest& r, int64_t steps)
          : owner(o), store(s), plan(p), request(r), stepsPerEpoch(steps) {}
      core::MetricSink* runStarting(const core::PlannedRun& run,
                                    const std::string& label) override {
        const core::VariantConfig& variant =
            run.spec.variants[static_cast<std::size_t>(run.variant)];
        recording = plan.resume ? std::make_unique<core::RunRecording>(
                                      store, request.resumeRunId, run.spec.training.checkpointsKept)
                                : std::make_unique<core::RunRecording>(
                                      store, run.spec, core::strategyOf(variant).name, run.name,
                                      core::ExecutionSlot{*plan.executionId, run.repetition});
        const qint64 runId = recording->runId();
        emit owner.runStarted(runId, QString::fromStdString(label));
        RunProgress base;
        base.variant = QString::fromStdString(label);
        base.variantIndex = plan.resume ? run.variant : index;
        base.variantCount = plan.resume ? static_cast<int>(run.spec.variants.size())
                                        : static_cast<int>(plan.runs.size());
        base.plannedSteps = core::plannedSteps(run.spec, stepsPerEpoch);
        progress = std::make_unique<ProgressSink>(&owner, &owner.feed_, runId, base);
        sink = std::make_unique<core::FanOutSink>(
            std::vector<core::MetricSink*>{&recording->sink(), progress.get()});
        return sink.get();
      }
      void runFinished(const core::PlannedRun&, const std::string& label,
                       const core::RunSummary& summary) override {
        recording->finish(summary);
        emit owner.runFinished(recording->runId(), summary.status,
                               QString::fromStdString(summary.error));
        if (summary.status == core::RunStatus::kFailed)
          emit owner.problem(
              QString("%1 failed: %2")
                  .arg(QString::fromStdString(label), QString::fromStdString(summary.error)));
        sink.reset();
        progress.reset();
        recording.reset();
        ++index;
      }
    } observer(*this, *store, plan, request, stepsPerEpoch);
    remote::runExecution(coordinator, plan, observer, &cancel_, resume);
  } catch (const core::CheckpointDamaged& e) {
    // The window offers the older checkpoint that verifies, where there is one.
    if (e.previousWhole())
      emit damagedCheckpoint(request.resumeRunId, *e.previousWhole(), QString::fromUtf8(e.what()));
    else
      emit problem(QString::fromUtf8(e.what()));
  } catch (const std::exception& e) {
    emit problem(QString::fromUtf8(e.what()));
  }
  busy_.store(false);
  emit finished();
}

}  // namespace dtlab::ui
