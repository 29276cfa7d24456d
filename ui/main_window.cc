#include "ui/main_window.h"

#include <qcustomplot.h>

#include <algorithm>
#include <map>
#include <utility>

#include <QtConcurrent/QtConcurrentRun>
#include <QtCore/QFileInfo>
#include <QtCore/QFutureWatcher>
#include <QtCore/QScopedValueRollback>
#include <QtCore/QSettings>
#include <QtCore/QTimer>
#include <QtGui/QAction>
#include <QtGui/QCloseEvent>
#include <QtGui/QKeySequence>
#include <QtWidgets/QApplication>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QMenuBar>
#include <QtWidgets/QMessageBox>
#include <QtWidgets/QProgressBar>
#include <QtWidgets/QSplitter>
#include <QtWidgets/QStackedWidget>
#include <QtWidgets/QStatusBar>
#include <QtWidgets/QToolBar>
#include <QtWidgets/QTreeView>

#include "core/common/config.h"
#include "core/data/dataset_kinds.h"
#include "core/spec/experiment_spec.h"
#include "core/train/strategy_registry.h"
#include "ui/background.h"
#include "ui/controller/cluster_controller.h"
#include "ui/help/user_guide.h"
#include "ui/models/explorer_model.h"
#include "ui/models/project_access.h"
#include "ui/pages/compare_page.h"
#include "ui/pages/dataset_page.h"
#include "ui/pages/experiment_page.h"
#include "ui/pages/predict_page.h"
#include "ui/pages/run_page.h"
#include "ui/pages/start_page.h"
#include "ui/pages/topology_page.h"

namespace dtlab::ui {
namespace {

constexpr int kMaxRecent = 8;
constexpr int kPollMs = 1000;
const char* kFileFilter = "DTLab projects (*.dtlab);;All files (*)";

// "SQLite 3.40.1, oneDNN 2.7.3, ..." for the About box.
std::string aboutLibraries() {
  std::string text;
  for (const std::string& library : clusterLibraryVersions())
    text += (text.empty() ? "" : ", ") + library;
  return text;
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      explorer_(new ExplorerModel(this)),
      tree_(new QTreeView(this)),
      pages_(new QStackedWidget(this)),
      welcome_(new QLabel(this)),
      experimentPage_(new ExperimentPage(this)),
      datasetPage_(new DatasetPage(this)),
      topologyPage_(new TopologyPage(this)),
      runPage_(new RunPage(this)),
      comparePage_(new ComparePage(this)),
      predictPage_(new PredictPage(this)),
      poll_(new QTimer(this)),
      statusProject_(new QLabel(this)),
      controller_(new ClusterController(this)),
      runProgress_(new QProgressBar(this)),
      liveTimer_(new QTimer(this)) {
  setWindowTitle("DTLab");
  tree_->setModel(explorer_);
  tree_->setUniformRowHeights(true);
  tree_->setAlternatingRowColors(true);
  tree_->header()->setStretchLastSection(false);
  tree_->header()->setSectionResizeMode(ExplorerModel::kNameColumn, QHeaderView::ResizeToContents);
  tree_->header()->setSectionResizeMode(ExplorerModel::kDetailColumn, QHeaderView::Stretch);
  tree_->header()->setSectionResizeMode(ExplorerModel::kWhenColumn, QHeaderView::ResizeToContents);
  tree_->header()->setMinimumSectionSize(60);
  tree_->setColumnHidden(ExplorerModel::kWhenColumn, true);  // in the tooltip instead
  connect(tree_->selectionModel(), &QItemSelectionModel::currentChanged, this,
          [this] { showSelection(); });

  welcome_->setAlignment(Qt::AlignCenter);
  welcome_->setWordWrap(true);
  welcome_->setText(
      tr("<h2>DTLab</h2><p>Open a project (<b>File &rarr; Open</b>, Ctrl+O) or create one "
         "(<b>File &rarr; New</b>, Ctrl+N).</p><p>Runs recorded with <tt>dtlab-cli run SPEC.json "
         "--project P.dtlab</tt> appear here while they happen.</p>"));
  pages_->addWidget(welcome_);
  startPage_ = new StartPage(this);
  pages_->addWidget(startPage_);
  pages_->setCurrentWidget(startPage_);  // until a project is open
  connect(startPage_, &StartPage::exampleChosen, this, [this](const QString& spec) {
    if (maySwitchAway()) openExample(spec);
  });
  connect(startPage_, &StartPage::tourChosen, this,
          [this](const QString& spec, const QString& title) {
            if (maySwitchAway()) startTour(spec, title);
          });
  connect(startPage_, &StartPage::recentChosen, this, [this](const QString& path) {
    if (maySwitchAway()) openProject(path);
  });
  pages_->addWidget(experimentPage_);
  connect(experimentPage_, &ExperimentPage::saveRequested, this,
          [this](qint64 id, const QString& name, const QString& json) {
            saveEntity("experiment", id, name, json);
          });
  connect(experimentPage_, &ExperimentPage::runRequested, this,
          [this](const QString& json) { runSpec(json); });
  connect(experimentPage_, &ExperimentPage::validated, this, [this] { updateRunActions(); });
  pages_->addWidget(datasetPage_);
  pages_->addWidget(topologyPage_);
  connect(datasetPage_, &DatasetPage::saveRequested, this,
          [this](qint64 id, const QString& name, const QString& json) {
            saveEntity("dataset", id, name, json);
          });
  connect(topologyPage_, &TopologyPage::saveRequested, this,
          [this](qint64 id, const QString& name, const QString& json) {
            saveEntity("topology", id, name, json);
          });
  pages_->addWidget(runPage_);
  pages_->addWidget(comparePage_);
  pages_->addWidget(predictPage_);
  connect(predictPage_, &PredictPage::failed, this, [this](const QString& m) { fail(m); });
  // Another page shown: a run's page still being read must not take the window back when its
  // read ends (a tour landing on the comparison while the run it followed is read, a click on
  // Compare meanwhile); selecting the run again reads it anew.
  connect(pages_, &QStackedWidget::currentChanged, this, [this] {
    if (pages_->currentWidget() == runPage_) return;
    ++runRequest_;
    shownRun_ = -1;
  });
  connect(datasetPage_, &DatasetPage::modifiedChanged, this, [this] { updateModifiedMark(); });
  connect(topologyPage_, &TopologyPage::modifiedChanged, this, [this] { updateModifiedMark(); });
  connect(experimentPage_, &ExperimentPage::modifiedChanged, this,
          [this] { updateModifiedMark(); });
  connect(pages_, &QStackedWidget::currentChanged, this, [this] { updateModifiedMark(); });
  connect(comparePage_, &ComparePage::failed, this, [this](const QString& m) { fail(m); });
  // A saved chart layout the page could not use in full: said, not asked about.
  connect(comparePage_, &ComparePage::notice, this,
          [this](const QString& m) { statusBar()->showMessage(m, 10000); });

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->setObjectName("mainSplitter");
  split->addWidget(tree_);
  split->addWidget(pages_);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 5);
  setCentralWidget(split);
  statusBar()->addPermanentWidget(runProgress_);
  statusBar()->addPermanentWidget(statusProject_);
  runProgress_->setMaximumWidth(220);
  runProgress_->setTextVisible(true);
  runProgress_->hide();

  buildMenus();
  connectController();
  updateRunActions();
  poll_->setInterval(kPollMs);
  connect(poll_, &QTimer::timeout, this, [this] { pollFile(); });

  QSettings settings;
  if (!restoreGeometry(settings.value("window/geometry").toByteArray())) resize(1280, 800);
  if (!split->restoreState(settings.value("window/splitter").toByteArray()))
    split->setSizes({width() * 2 / 7, width() * 5 / 7});
}

// The controller's reports: live points (coalesced into one replot every 40 ms), a run's
// start and end, progress, problems; the topology page asks nodes through it too.
void MainWindow::connectController() {
  liveTimer_->setSingleShot(true);
  liveTimer_->setInterval(40);
  topologyPage_->setController(controller_);
  connect(controller_->liveFeed(), &LiveFeed::available, this, [this] {
    if (!liveTimer_->isActive()) liveTimer_->start();
  });
  connect(liveTimer_, &QTimer::timeout, this, [this] {
    const std::vector<LivePoint> points = controller_->liveFeed()->take();
    if (shownRun_ >= 0 && shownRun_ == runPage_->runId()) runPage_->appendLive(points);
  });
  connect(controller_, &ExperimentController::runStarted, this,
          [this](qint64 runId, const QString& variant) {
            // The run page's "Follow the running run" off: a run on screen stays there (the
            // new one is listed in the explorer); from any other page the run is shown.
            if (runPage_->followsRunningRun() || pages_->currentWidget() != runPage_)
              followRun_ = runId;
            liveRun_ = runId;
            // The run stored the experiment as it ran: the editor showing it has nothing to save.
            if (experimentPage_->isModified() &&
                QString::fromStdString(experimentPage_->spec().dump()) == runningSpec_)
              experimentPage_->markUnmodified();
            statusBar()->showMessage(tr("Running %1 (run #%2)...").arg(variant).arg(runId));
            reload();
          });
  connect(controller_, &ExperimentController::progress, this,
          [this](const RunProgress& p) { onProgress(p); });
  connect(controller_, &ExperimentController::waiting, this, [this](const QString& what) {
    // Until the nodes are free; the progress bar turns busy meanwhile.
    if (what.isEmpty()) {
      statusBar()->showMessage(tr("Run #%1: the nodes are free, starting").arg(liveRun_), 8000);
      return;
    }
    runProgress_->setRange(0, 0);
    runProgress_->setToolTip(tr("Waiting for the nodes; Cancel Run leaves their queues"));
    runProgress_->show();
    statusBar()->showMessage(tr("Run #%1 is %2").arg(liveRun_).arg(what));
  });
  connect(controller_, &ExperimentController::runFinished, this,
          [this](qint64 runId, core::RunStatus status, const QString&) {
            statusBar()->showMessage(
                tr("Run #%1 %2").arg(runId).arg(QString::fromUtf8(core::toString(status))), 8000);
            liveRun_ = -1;  // the next reload draws it from the store, complete
            reload();
          });
  connect(controller_, &ExperimentController::problem, this,
          [this](const QString& message) { fail(message); });
  connect(controller_, &ExperimentController::damagedCheckpoint, this,
          [this](qint64 runId, qint64 step, const QString& message) {
            offeredResume_ = OfferedResume{runId, step, message};
          });
  connect(controller_, &ExperimentController::finished, this, [this] {
    runProgress_->hide();
    updateRunActions();
    if (tourRunning_) landTour();
    if (!offeredResume_) return;
    const OfferedResume offer = *std::exchange(offeredResume_, std::nullopt);
    statusBar()->showMessage(offer.message);
    emit resumeOffered(offer.runId, offer.step, offer.message);
    if (quietErrors_) return;
    QString said = offer.message;  // a sentence of its own in the dialog
    if (!said.isEmpty()) said[0] = said[0].toUpper();
    if (QMessageBox::question(this, tr("Damaged checkpoint"),
                              tr("%1.\n\nResume run %2 from the checkpoint of step %3 instead?")
                                  .arg(said)
                                  .arg(offer.runId)
                                  .arg(offer.step)) == QMessageBox::Yes)
      resumeRun(offer.runId, offer.step);
  });
}

MainWindow::~MainWindow() = default;

QWidget* MainWindow::currentPage() const {
  return pages_->currentWidget();
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* newAction = file->addAction(tr("&New Project..."), this, [this] {
    if (!maySwitchAway()) return;
    const QString path = QFileDialog::getSaveFileName(this, tr("New project"), {}, kFileFilter);
    if (!path.isEmpty()) newProject(path.endsWith(".dtlab") ? path : path + ".dtlab");
  });
  newAction->setShortcut(QKeySequence::New);
  QAction* open = file->addAction(tr("&Open..."), this, [this] {
    if (!maySwitchAway()) return;
    const QString path = QFileDialog::getOpenFileName(this, tr("Open project"), {}, kFileFilter);
    if (!path.isEmpty()) openProject(path);
  });
  open->setShortcut(QKeySequence::Open);
  connect(startPage_, &StartPage::newRequested, newAction, &QAction::trigger);
  connect(startPage_, &StartPage::openRequested, open, &QAction::trigger);
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  QAction* save = file->addAction(tr("&Save"), this, [this] { saveCurrent(); });
  save->setShortcut(QKeySequence::Save);
  save->setStatusTip(
      tr("Save the dataset, topology or experiment being edited (runs are "
         "recorded as they happen)"));
  saveAsAction_ = file->addAction(tr("Save Project &As..."), this, [this] {
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Save a copy of the project as"), {}, kFileFilter);
    if (path.isEmpty()) return;
    const QString target = path.endsWith(".dtlab") ? path : path + ".dtlab";
    // The dialog asked before choosing an existing file (when it was named with .dtlab).
    saveProjectAs(target, /*replace=*/target == path && QFileInfo::exists(target));
  });
  saveAsAction_->setShortcut(QKeySequence::SaveAs);
  file->addSeparator();
  QAction* newData = file->addAction(tr("New &Dataset..."), this, [this] { newDataset(); });
  newData->setShortcut(Qt::CTRL | Qt::SHIFT | Qt::Key_D);
  QAction* newTopo = file->addAction(tr("New &Topology..."), this, [this] { newTopology(); });
  newTopo->setShortcut(Qt::CTRL | Qt::SHIFT | Qt::Key_T);
  QAction* newExp = file->addAction(tr("New &Experiment..."), this, [this] { newExperiment(); });
  newExp->setShortcut(Qt::CTRL | Qt::SHIFT | Qt::Key_E);
  file->addSeparator();
  exportReportAction_ =
      file->addAction(tr("Export &Report..."), this, [this] { chooseReportFile(); });
  exportReportAction_->setStatusTip(
      tr("The execution in view (or the selected experiment's latest) as one HTML or PDF file: "
         "the experiment in words, the comparison with intervals, the seed table, the charts, "
         "the events and the machines"));
  refreshRecentMenu();
  QAction* reloadAction = file->addAction(tr("&Reload"), this, [this] { reload(); });
  reloadAction->setShortcut(QKeySequence::Refresh);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, [this] { close(); });
  quit->setShortcut(QKeySequence::Quit);

  QMenu* runMenu = menuBar()->addMenu(tr("&Run"));
  runAction_ = runMenu->addAction(tr("&Run Experiment"), this, [this] { runSelectedExperiment(); });
  runAction_->setShortcut(Qt::CTRL | Qt::Key_R);
  cancelAction_ = runMenu->addAction(tr("&Cancel Run"), this, [this] {
    controller_->cancel();
    statusBar()->showMessage(tr("Cancelling: the nodes stop together at the next step..."));
    cancelAction_->setEnabled(false);
  });
  cancelAction_->setShortcut(Qt::CTRL | Qt::Key_Period);
  resumeAction_ = runMenu->addAction(tr("Res&ume Run"), this, [this] {
    if (const core::RunRecord* run = resumableRun()) resumeRun(run->id);
  });
  QToolBar* tools = addToolBar(tr("Run"));
  tools->setObjectName("runToolBar");
  tools->addAction(runAction_);
  tools->addAction(cancelAction_);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  QAction* compare = view->addAction(tr("&Compare runs"), this, [this] { showCompare(); });
  compare->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_K));
  QAction* predict = view->addAction(tr("&Predict at Scale"), this, [this] { showPredict(); });
  predict->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_K));
  predict->setToolTip(
      tr("The selected experiment's variants at node counts beyond the cluster, "
         "simulated from its calibrated runs"));

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* guide = help->addAction(tr("&User Guide"), this, [this] { showUserGuide(); });
  guide->setShortcut(QKeySequence::HelpContents);
  help->addAction(tr("&About DTLab"), this, [this] { showAbout(); });
}

UserGuide* MainWindow::showUserGuide(const QString& page) {
  if (userGuide_ == nullptr) userGuide_ = new UserGuide(this);
  userGuide_->showPage(page);
  userGuide_->show();
  userGuide_->raise();
  return userGuide_;
}

void MainWindow::showAbout() {
  QMessageBox::about(
      this, tr("About DTLab"),
      tr("<h3>DTLab %1</h3><p>A workbench for distributed training experiments on synthetic "
         "data.</p><p>Qt %2 (built with %3), QCustomPlot %4<br>%5</p>")
          .arg(DTLAB_VERSION, qVersion(), QT_VERSION_STR, QCUSTOMPLOT_VERSION_STR,
               QString::fromStdString(aboutLibraries())));
}

bool MainWindow::newProject(const QString& path) {
  try {
    core::ProjectStore::create(path.toStdString(),
                               QFileInfo(path).completeBaseName().toStdString());
  } catch (const std::exception& e) {
    fail(tr("Cannot create %1: %2").arg(path, QString::fromUtf8(e.what())));
    return false;
  }
  openProject(path);
  return true;
}

void MainWindow::openProject(const QString& path) {
  path_ = QFileInfo(path).absoluteFilePath();
  shownRun_ = -1;
  pendingKind_.clear();
  pendingId_ = -1;
  explorer_->setSnapshot({});
  pages_->setCurrentWidget(welcome_);
  setWindowTitle(QString("%1[*] - DTLab").arg(QFileInfo(path_).fileName()));
  statusProject_->setText(path_);
  statusBar()->showMessage(tr("Opening %1...").arg(path_));
  reload();
}

void MainWindow::reload() {
  if (path_.isEmpty()) return;
  const quint64 generation = ++generation_;
  const std::string path = path_.toStdString();
  // What the file looked like before this read: a later change triggers another.
  const QFileInfo file(path_), wal(path_ + "-wal");
  seenModified_ = std::max(file.lastModified(), wal.exists() ? wal.lastModified() : QDateTime());
  seenWalSize_ = wal.exists() ? wal.size() : -1;
  readProject<ProjectSnapshot>(
      this, path, [](core::ProjectStore& store) { return readProjectSnapshot(store); },
      [this, generation](const std::optional<ProjectSnapshot>& snapshot, const QString& error) {
        if (generation != generation_) return;  // another project was opened meanwhile
        if (!snapshot) {
          poll_->stop();
          fail(tr("Cannot open %1: %2").arg(path_, error));
          return;
        }
        applySnapshot(*snapshot);
      });
}

void MainWindow::applySnapshot(const ProjectSnapshot& snapshot) {
  // Keep what is selected (by kind and id) across the reset.
  const QModelIndex current = tree_->currentIndex();
  if (current.isValid() && current.data(ExplorerModel::KindRole).toString() != "group") {
    pendingKind_ = current.data(ExplorerModel::KindRole).toString();
    pendingId_ = current.data(ExplorerModel::IdRole).toLongLong();
  }
  const bool first = explorer_->snapshot().path != snapshot.path;
  explorer_->setSnapshot(snapshot);
  tree_->expandAll();
  if (followRun_ >= 0 && explorer_->find("run", followRun_).isValid()) {
    // A run started from here: show it as soon as it is listed.
    pendingKind_ = "run";
    pendingId_ = followRun_;
    followRun_ = -1;
  }
  if (!pendingKind_.isEmpty()) {
    const QModelIndex again = explorer_->find(pendingKind_, pendingId_);
    if (again.isValid()) tree_->setCurrentIndex(again);
  }
  updateRunActions();
  showOverview(snapshot);
  if (first) {
    statusBar()->clearMessage();  // "Opening ..." is done
    rememberRecent(path_);
    poll_->start();
    emit projectLoaded(path_);
  }
  // A run on screen that is still being recorded is redrawn with the new points, once more
  // when it has ended, and not again: a finished run stays as it is while another records.
  // (A run executed from here grows live instead: no need to re-read it.)
  if (shownRun_ >= 0 && shownRun_ != liveRun_ && pages_->currentWidget() == runPage_) {
    const auto shown = std::find_if(snapshot.runs.begin(), snapshot.runs.end(),
                                    [this](const core::RunRecord& r) { return r.id == shownRun_; });
    if (shown == snapshot.runs.end() || shown->status == core::RunStatus::kRunning ||
        runPage_->runId() != shownRun_ || shown->status != runPage_->runStatus())
      loadRun(shownRun_);
  }
  if (pages_->currentWidget() == comparePage_) comparePage_->setSnapshot(snapshot);
  emit projectRead(path_);
}

void MainWindow::showCompare() {
  if (!maySwitchAway()) return;
  const QScopedValueRollback agreed(switching_, true);
  // The page is not an explorer item: nothing stays selected there to be re-shown on reload.
  pendingKind_.clear();
  pendingId_ = -1;
  tree_->setCurrentIndex({});
  tree_->clearSelection();
  comparePage_->setSnapshot(explorer_->snapshot());
  pages_->setCurrentWidget(comparePage_);
  updateRunActions();
}

void MainWindow::showPredict(const std::string& experiment, bool calibrate) {
  if (path_.isEmpty() || !maySwitchAway()) return;
  // The experiment of what is selected: itself, or that of a run or an execution.
  const QModelIndex index = tree_->currentIndex();
  const QString kind = index.data(ExplorerModel::KindRole).toString();
  const qint64 id = index.data(ExplorerModel::IdRole).toLongLong();
  const ProjectSnapshot& s = explorer_->snapshot();
  std::optional<int64_t> experimentId;
  if (kind == "experiment") experimentId = id;
  for (const core::RunRecord& r : s.runs)
    if (kind == "run" && r.id == id) experimentId = r.experimentId;
  for (const core::ExecutionRecord& e : s.executions)
    if (kind == "execution" && e.id == id) experimentId = e.experimentId;
  std::string name = experiment;
  for (const core::Entity& e : s.experiments)
    if (name.empty() && experimentId && e.id == *experimentId) name = e.name;
  const QScopedValueRollback agreed(switching_, true);
  pendingKind_.clear();
  pendingId_ = -1;
  pages_->setCurrentWidget(predictPage_);
  predictPage_->showExperiment(path_.toStdString(), name, calibrate);
  updateRunActions();
}

// What the right side says while nothing is selected: the project at a glance.
void MainWindow::showOverview(const ProjectSnapshot& s) {
  // Runs by status, in the order the statuses are listed; a status no run has is left out,
  // except the three every project is read by.
  std::map<core::RunStatus, int> byStatus = {{core::RunStatus::kCompleted, 0},
                                             {core::RunStatus::kRunning, 0},
                                             {core::RunStatus::kFailed, 0}};
  for (const core::RunRecord& r : s.runs) ++byStatus[r.status];
  QStringList statuses;
  for (const auto& [status, n] : byStatus)
    statuses << QString("%1 %2").arg(n).arg(QString::fromUtf8(core::toString(status)));
  const QString name =
      s.name.empty() ? QFileInfo(path_).completeBaseName() : QString::fromStdString(s.name);
  const auto count = [](std::size_t n, const char* one, const char* many) {
    return QString("%1 %2").arg(n).arg(n == 1 ? one : many);
  };
  welcome_->setText(
      tr("<h2>%1</h2><p><tt>%2</tt></p><p>%3, %4, %5<br>%6: %7</p><p>Select a run in the "
         "explorer for its curves and metrics, or an entry for its configuration.</p>")
          .arg(name.toHtmlEscaped(), path_.toHtmlEscaped(),
               count(s.datasets.size(), "dataset", "datasets"),
               count(s.topologies.size(), "topology", "topologies"),
               count(s.experiments.size(), "experiment", "experiments"),
               count(s.runs.size(), "run", "runs"), statuses.join(", ")));
}

void MainWindow::pollFile() {
  if (path_.isEmpty()) return;
  const QFileInfo file(path_), wal(path_ + "-wal");
  const QDateTime modified =
      std::max(file.lastModified(), wal.exists() ? wal.lastModified() : QDateTime());
  const qint64 walSize = wal.exists() ? wal.size() : -1;
  if (modified != seenModified_ || walSize != seenWalSize_) reload();
}

void MainWindow::newExperiment() {
  if (!maySwitchAway()) return;
  const QScopedValueRollback agreed(switching_, true);
  if (path_.isEmpty()) {
    fail(tr("Open or create a project first: experiments are stored in it."));
    return;
  }
  tree_->setCurrentIndex({});
  const ProjectSnapshot& s = explorer_->snapshot();
  const std::string strategy = core::strategyNames().front();  // the default strategy
  const std::string kind = core::datasetKindNames().front();   // the default dataset kind
  nlohmann::json spec = {
      {"name", "experiment " + std::to_string(s.experiments.size() + 1)},
      {"dataset", s.datasets.empty() ? nlohmann::json{{"kind", kind}} : s.datasets.front().config},
      {"cluster",
       s.topologies.empty() ? nlohmann::json{{"local_nodes", 2}} : s.topologies.front().config},
      {"training", {{"batch_size", 128}, {"epochs", 2}, {"eval_interval", 50}}},
      {"variants", {{{"name", strategy}, {"strategy", strategy}}}}};
  experimentPage_->edit(-1, spec, s.datasets, s.topologies);
  pages_->setCurrentWidget(experimentPage_);
  updateRunActions();
}

void MainWindow::newDataset() {
  if (!maySwitchAway()) return;
  const QScopedValueRollback agreed(switching_, true);
  if (path_.isEmpty()) {
    fail(tr("Open or create a project first: datasets are stored in it."));
    return;
  }
  tree_->setCurrentIndex({});
  datasetPage_->edit(
      -1, tr("dataset %1").arg(explorer_->snapshot().datasets.size() + 1),
      {{"kind", core::datasetKindNames().front()}, {"train_size", 20000}, {"test_size", 2000}});
  pages_->setCurrentWidget(datasetPage_);
}

void MainWindow::newTopology() {
  if (!maySwitchAway()) return;
  const QScopedValueRollback agreed(switching_, true);
  if (path_.isEmpty()) {
    fail(tr("Open or create a project first: topologies are stored in it."));
    return;
  }
  tree_->setCurrentIndex({});
  topologyPage_->edit(-1, tr("topology %1").arg(explorer_->snapshot().topologies.size() + 1),
                      {{"local_nodes", 2}});
  pages_->setCurrentWidget(topologyPage_);
}

void MainWindow::showFirst(const QString& kind) {
  const ProjectSnapshot& s = explorer_->snapshot();
  const std::vector<core::Entity>& list = kind == "dataset"    ? s.datasets
                                          : kind == "topology" ? s.topologies
                                                               : s.experiments;
  const QModelIndex first = list.empty() ? QModelIndex() : explorer_->find(kind, list.front().id);
  if (first.isValid()) {
    tree_->setCurrentIndex(first);
  } else if (kind == "dataset") {
    newDataset();
  } else if (kind == "topology") {
    newTopology();
  } else {
    newExperiment();
  }
}

void MainWindow::onProgress(const RunProgress& p) {
  if (p.plannedSteps > 0) {
    runProgress_->setRange(0, static_cast<int>(p.plannedSteps));
    runProgress_->setValue(static_cast<int>(p.step));
  } else {
    runProgress_->setRange(0, 0);
  }
  runProgress_->setFormat(
      QString("%1 (%2/%3): %v").arg(p.variant).arg(p.variantIndex + 1).arg(p.variantCount));
  runProgress_->setToolTip({});
  runProgress_->show();
}

void MainWindow::showSelection() {
  if (reverting_ || asking_) return;
  const QModelIndex index = tree_->currentIndex();
  const QString kind = index.data(ExplorerModel::KindRole).toString();
  const qint64 id = index.data(ExplorerModel::IdRole).toLongLong();
  // Leaving an editor with unsaved changes asks first; staying puts the explorer back.
  const EditorContent shown = editorContent();
  const bool sameEntity = index.isValid() && kind == shown.kind && id == shown.id;
  if (!sameEntity && !maySwitchAway()) {
    const QScopedValueRollback guard(reverting_, true);
    tree_->setCurrentIndex(shown.id >= 0 ? explorer_->find(shown.kind, shown.id) : QModelIndex());
    return;
  }
  updateRunActions();
  if (!index.isValid() || kind == "group") {
    pages_->setCurrentWidget(path_.isEmpty() ? static_cast<QWidget*>(startPage_) : welcome_);
    shownRun_ = -1;
    pendingKind_.clear();  // nothing to re-select after a reload
    pendingId_ = -1;
    return;
  }
  pendingKind_ = kind;
  pendingId_ = id;
  if (kind == "run") {
    if (id != shownRun_) loadRun(id);
    return;
  }
  shownRun_ = -1;
  if (kind == "execution") {
    // An execution is compared as a whole: its variants' medians, bands and statistics.
    comparePage_->setSnapshot(explorer_->snapshot());
    comparePage_->showExecution(id);
    pages_->setCurrentWidget(comparePage_);
    updateRunActions();
    return;
  }
  const ProjectSnapshot& s = explorer_->snapshot();
  if (kind == "dataset") {
    for (const core::Entity& e : s.datasets) {
      if (e.id != id) continue;
      // A reload of the same dataset keeps what the user is typing.
      if (datasetPage_->id() != id || pages_->currentWidget() != datasetPage_)
        datasetPage_->edit(id, QString::fromStdString(e.name), e.config);
      pages_->setCurrentWidget(datasetPage_);
    }
    return;
  }
  if (kind == "topology") {
    for (const core::Entity& e : s.topologies) {
      if (e.id != id) continue;
      if (topologyPage_->id() != id || pages_->currentWidget() != topologyPage_)
        topologyPage_->edit(id, QString::fromStdString(e.name), e.config);
      pages_->setCurrentWidget(topologyPage_);
    }
    return;
  }
  for (const core::Entity& e : s.experiments) {
    if (e.id != id) continue;
    if (experimentPage_->id() != id || pages_->currentWidget() != experimentPage_)
      experimentPage_->edit(id, e.config, s.datasets, s.topologies);
    pages_->setCurrentWidget(experimentPage_);
  }
  updateRunActions();
}

void MainWindow::selectRun(qint64 runId) {
  const QModelIndex index = explorer_->find("run", runId);
  if (!index.isValid()) {
    fail(tr("No run %1 in %2").arg(runId).arg(path_));
    return;
  }
  tree_->setCurrentIndex(index);
}

void MainWindow::loadRun(qint64 runId) {
  const quint64 request = ++runRequest_;
  const std::string path = path_.toStdString();
  shownRun_ = runId;
  readProject<RunDetail>(
      this, path, [runId](core::ProjectStore& store) { return readRunDetail(store, runId); },
      [this, request, runId](const std::optional<RunDetail>& detail, const QString& error) {
        if (request != runRequest_) return;  // another run was chosen meanwhile
        if (!detail) {
          fail(tr("Cannot read run %1: %2").arg(runId).arg(error));
          return;
        }
        runPage_->showRun(*detail);
        pages_->setCurrentWidget(runPage_);
        emit runShown(runId);
      });
}

void MainWindow::fail(const QString& message) {
  statusBar()->showMessage(message);
  emit loadFailed(message);
  if (!quietErrors_) QMessageBox::warning(this, tr("DTLab"), message);
}

void MainWindow::rememberRecent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value("recentProjects").toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue("recentProjects", recent);
  refreshRecentMenu();
}

void MainWindow::refreshRecentMenu() {
  if (recentMenu_ == nullptr) return;
  recentMenu_->clear();
  const QStringList recent = QSettings().value("recentProjects").toStringList();
  for (const QString& path : recent)
    recentMenu_->addAction(path, this, [this, path] {
      if (maySwitchAway()) openProject(path);
    });
  recentMenu_->setEnabled(!recent.isEmpty());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!maySwitchAway(/*saveNow=*/true)) {
    event->ignore();
    return;
  }
  if (controller_->busy()) {
    const auto answer = QMessageBox::question(
        this, tr("DTLab"),
        tr("A run is in progress. Quitting cancels it (the nodes stop together and the run is "
           "recorded as cancelled)."),
        QMessageBox::Ok | QMessageBox::Cancel, QMessageBox::Cancel);
    if (answer != QMessageBox::Ok) {
      event->ignore();
      return;
    }
    controller_->cancel();
  }
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  if (auto* split = findChild<QSplitter*>("mainSplitter"))
    settings.setValue("window/splitter", split->saveState());
  runPage_->saveLayout();
  event->accept();
}

}  // namespace dtlab::ui
