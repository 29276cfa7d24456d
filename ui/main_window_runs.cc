// MainWindow's Run menu: which run actions apply to the selection, and starting a run or a
// resume (ui/main_window.h). The rest of the window is in main_window.cc.
#include "core/spec/spec_json.h"
#include "ui/main_window.h"

#include <QtGui/QAction>
#include <QtWidgets/QProgressBar>
#include <QtWidgets/QStackedWidget>
#include <QtWidgets/QStatusBar>
#include <QtWidgets/QTreeView>

#include "core/spec/experiment_spec.h"
#include "ui/controller/experiment_controller.h"
#include "ui/models/explorer_model.h"
#include "ui/pages/experiment_page.h"
#include "ui/pages/topology_page.h"

namespace dtlab::ui {

void MainWindow::updateRunActions() {
  if (runAction_ == nullptr) return;
  QString blocked;
  if (controller_->busy()) {
    blocked = tr("A run is in progress (Run > Cancel Run stops it).");
  } else if (path_.isEmpty()) {
    blocked = tr("Open a project first: runs are recorded in it.");
  }
  experimentPage_->setRunBlocked(blocked);
  QString why = blocked;
  if (why.isEmpty() && pages_->currentWidget() != experimentPage_)
    why = tr("Select an experiment in the explorer, or create one (File > New Experiment).");
  if (why.isEmpty() && !experimentPage_->error().isEmpty())
    why = tr("The experiment is invalid: %1").arg(experimentPage_->error());
  runAction_->setEnabled(why.isEmpty());
  runAction_->setToolTip(why.isEmpty() ? tr("Run every variant of the experiment on its cluster "
                                            "(local or remote), recorded into this project")
                                       : why);
  runAction_->setStatusTip(runAction_->toolTip());
  saveAsAction_->setEnabled(!path_.isEmpty() && !controller_->busy());
  saveAsAction_->setToolTip(path_.isEmpty() ? tr("Open a project first.")
                            : controller_->busy()
                                ? tr("A run is being recorded into the project: save a copy "
                                     "when it has finished.")
                                : tr("Write a copy of the project under a new name and "
                                     "continue in the copy"));
  saveAsAction_->setStatusTip(saveAsAction_->toolTip());
  // A report reads the project as it is; the runs still being recorded show as running.
  exportReportAction_->setEnabled(!path_.isEmpty() && !explorer_->snapshot().runs.empty());
  cancelAction_->setEnabled(controller_->busy());
  cancelAction_->setToolTip(controller_->busy() ? tr("Stop the running experiment")
                                                : tr("No run is in progress."));
  const core::RunRecord* resumable = blocked.isEmpty() ? resumableRun() : nullptr;
  resumeAction_->setEnabled(resumable != nullptr);
  resumeAction_->setToolTip(
      !blocked.isEmpty() ? blocked
      : resumable != nullptr
          ? tr("Continue run %1 from its newest checkpoint, into the same run").arg(resumable->id)
          : tr("Select a failed, cancelled or interrupted run that kept "
               "checkpoints (training.checkpoint_every)."));
  resumeAction_->setStatusTip(resumeAction_->toolTip());
}

const core::RunRecord* MainWindow::resumableRun() const {
  const QModelIndex index = tree_->currentIndex();
  if (!index.isValid() || index.data(ExplorerModel::KindRole).toString() != "run") return nullptr;
  const qint64 id = index.data(ExplorerModel::IdRole).toLongLong();
  for (const core::RunRecord& run : explorer_->snapshot().runs)
    if (run.id == id && !run.spec.is_null() &&
        (run.status == core::RunStatus::kFailed || run.status == core::RunStatus::kCancelled ||
         run.status == core::RunStatus::kInterrupted))
      return &run;
  return nullptr;
}

void MainWindow::runSelectedExperiment() {
  if (pages_->currentWidget() != experimentPage_) return;
  runSpec(QString::fromStdString(experimentPage_->spec().dump()));
}

bool MainWindow::resumeRun(qint64 runId, qint64 step) {
  for (const core::RunRecord& run : explorer_->snapshot().runs)
    if (run.id == runId && !run.spec.is_null())
      return runSpec(QString::fromStdString(run.spec.dump()), runId, step);
  fail(tr("Cannot resume run %1: the project has no such run with a spec").arg(runId));
  return false;
}

bool MainWindow::runSpec(const QString& specJson, qint64 resumeRunId, qint64 resumeStep) {
  RunRequest request;
  request.projectPath = path_;
  request.resumeRunId = resumeRunId;
  request.resumeStep = resumeStep;
  try {
    request.spec = core::parseExperimentSpec(nlohmann::json::parse(specJson.toStdString()));
  } catch (const std::exception& error) {
    fail(tr("Cannot run the experiment: %1").arg(QString::fromUtf8(error.what())));
    return false;
  }
  // A topology of running daemons: their tokens come from this user's settings, never from
  // the spec or the project.
  const bool remoteNodes = request.spec.cluster.remote();
  for (const std::string& address : request.spec.cluster.addresses()) {
    if (!remoteNodes) break;
    request.nodes << QString::fromStdString(address);
    request.tokens << TopologyPage::nodeToken(QString::fromStdString(address));
  }
  // One client identity for the run: the topology page keeps the same set for all its
  // remote nodes; nodes of topologies edited apart may disagree, which is refused.
  for (int i = 0; i < request.nodes.size(); ++i) {
    const TlsPaths tls = TopologyPage::nodeTls(request.nodes[i]);
    if (i == 0) {
      request.tls = tls;
    } else if (!(tls == request.tls)) {
      fail(tr("Cannot run the experiment: nodes %1 and %2 have different TLS settings; set "
              "them once for the topology on its page")
               .arg(request.nodes[0], request.nodes[i]));
      return false;
    }
  }
  if (!controller_->start(request)) return false;
  runningSpec_ = specJson;
  runProgress_->setRange(0, 0);
  runProgress_->show();
  if (resumeRunId > 0)
    statusBar()->showMessage(
        resumeStep > 0 ? tr("Resuming run %1 from the checkpoint of step %2...")
                             .arg(resumeRunId)
                             .arg(resumeStep)
                       : tr("Resuming run %1 from its newest checkpoint...").arg(resumeRunId));
  else
    statusBar()->showMessage((remoteNodes ? tr("Starting %1 on %2 remote nodes...")
                                          : tr("Starting %1 on %2 local nodes..."))
                                 .arg(QString::fromStdString(request.spec.name))
                                 .arg(request.spec.cluster.localNodes));
  updateRunActions();
  return true;
}

}  // namespace dtlab::ui
