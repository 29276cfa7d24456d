#include "ui/main_window.h"

#include <QtConcurrent/QtConcurrentRun>
#include <QtCore/QFileInfo>
#include <QtCore/QFutureWatcher>
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
#include <QtWidgets/QSplitter>
#include <QtWidgets/QStackedWidget>
#include <QtWidgets/QStatusBar>
#include <QtWidgets/QTreeView>

#include "core/common/config.h"
#include "ui/models/explorer_model.h"
#include "ui/pages/compare_page.h"
#include "ui/pages/entity_page.h"
#include "ui/pages/run_page.h"

namespace dtlab::ui {
namespace {

constexpr int kMaxRecent = 8;
constexpr int kPollMs = 1000;
const char* kFileFilter = "DTLab projects (*.dtlab);;All files (*)";

// Runs `read` on the thread pool and hands its result (or its error) to `done` on the GUI
// thread, unless `owner` is gone by then.
template <typename T, typename Read, typename Done>
void readInBackground(QObject* owner, Read read, Done done) {
  struct Outcome {
    std::optional<T> value;
    QString error;
  };
  auto* watcher = new QFutureWatcher<Outcome>(owner);
  QObject::connect(watcher, &QFutureWatcher<Outcome>::finished, owner, [watcher, done] {
    const Outcome outcome = watcher->result();
    watcher->deleteLater();
    done(outcome.value, outcome.error);
  });
  watcher->setFuture(QtConcurrent::run([read]() -> Outcome {
    try {
      return {read(), {}};
    } catch (const std::exception& e) {
      return {std::nullopt, QString::fromUtf8(e.what())};
    }
  }));
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      explorer_(new ExplorerModel(this)),
      tree_(new QTreeView(this)),
      pages_(new QStackedWidget(this)),
      welcome_(new QLabel(this)),
      entityPage_(new EntityPage(this)),
      runPage_(new RunPage(this)),
      comparePage_(new ComparePage(this)),
      poll_(new QTimer(this)),
      statusProject_(new QLabel(this)) {
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
  pages_->addWidget(entityPage_);
  pages_->addWidget(runPage_);
  pages_->addWidget(comparePage_);
  connect(comparePage_, &ComparePage::failed, this, [this](const QString& m) { fail(m); });

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->setObjectName("mainSplitter");
  split->addWidget(tree_);
  split->addWidget(pages_);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 5);
  setCentralWidget(split);
  statusBar()->addPermanentWidget(statusProject_);

  buildMenus();
  poll_->setInterval(kPollMs);
  connect(poll_, &QTimer::timeout, this, [this] { pollFile(); });

  QSettings settings;
  if (!restoreGeometry(settings.value("window/geometry").toByteArray())) resize(1280, 800);
  if (!split->restoreState(settings.value("window/splitter").toByteArray()))
    split->setSizes({width() * 2 / 7, width() * 5 / 7});
}

MainWindow::~MainWindow() = default;

QWidget* MainWindow::currentPage() const {
  return pages_->currentWidget();
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* newAction = file->addAction(tr("&New Project..."), this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("New project"), {}, kFileFilter);
    if (!path.isEmpty()) newProject(path.endsWith(".dtlab") ? path : path + ".dtlab");
  });
  newAction->setShortcut(QKeySequence::New);
  QAction* open = file->addAction(tr("&Open..."), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open project"), {}, kFileFilter);
    if (!path.isEmpty()) openProject(path);
  });
  open->setShortcut(QKeySequence::Open);
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  refreshRecentMenu();
  QAction* reloadAction = file->addAction(tr("&Reload"), this, [this] { reload(); });
  reloadAction->setShortcut(QKeySequence::Refresh);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, [this] { close(); });
  quit->setShortcut(QKeySequence::Quit);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  QAction* compare = view->addAction(tr("&Compare runs"), this, [this] { showCompare(); });
  compare->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_K));

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About DTLab"), this, [this] { showAbout(); });
}

void MainWindow::showAbout() {
  QMessageBox::about(
      this, tr("About DTLab"),
      tr("<h3>DTLab %1</h3><p>A workbench for distributed training experiments on synthetic "
         "data.</p><p>Qt %2 (built with %3), QCustomPlot 2.1</p>")
          .arg(DTLAB_VERSION, qVersion(), QT_VERSION_STR));
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
  setWindowTitle(QString("%1 - DTLab").arg(QFileInfo(path_).fileName()));
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
  readInBackground<ProjectSnapshot>(
      this, [path] { return readProjectSnapshot(path); },
      [this, generation](const std::optional<ProjectSnapshot>& snapshot, const QString& error) {
        if (generation != generation_) return;  // another project was opened meanwhile
        if (!snapshot) {
          poll_->stop();
          fail(tr("Cannot open %1: %2").arg(path_, error));
          return;
        }
        applySnapshot(generation, *snapshot);
      });
}

void MainWindow::applySnapshot(quint64, const ProjectSnapshot& snapshot) {
  // Keep what is selected (by kind and id) across the reset.
  const QModelIndex current = tree_->currentIndex();
  if (current.isValid() && current.data(ExplorerModel::KindRole).toString() != "group") {
    pendingKind_ = current.data(ExplorerModel::KindRole).toString();
    pendingId_ = current.data(ExplorerModel::IdRole).toLongLong();
  }
  const bool first = explorer_->snapshot().path != snapshot.path;
  explorer_->setSnapshot(snapshot);
  tree_->expandAll();
  if (!pendingKind_.isEmpty()) {
    const QModelIndex again = explorer_->find(pendingKind_, pendingId_);
    if (again.isValid()) tree_->setCurrentIndex(again);
  }
  statusBar()->showMessage(
      tr("%1 runs, %2 experiments").arg(snapshot.runs.size()).arg(snapshot.experiments.size()),
      4000);
  showOverview(snapshot);
  if (first) {
    rememberRecent(path_);
    poll_->start();
    emit projectLoaded(path_);
  }
  // A run on screen that is still being recorded is redrawn with the new points.
  if (shownRun_ >= 0 && pages_->currentWidget() == runPage_) loadRun(shownRun_);
  if (pages_->currentWidget() == comparePage_) comparePage_->setSnapshot(snapshot);
}

void MainWindow::showCompare() {
  // The page is not an explorer item: nothing stays selected there to be re-shown on reload.
  pendingKind_.clear();
  pendingId_ = -1;
  tree_->setCurrentIndex({});
  tree_->clearSelection();
  comparePage_->setSnapshot(explorer_->snapshot());
  pages_->setCurrentWidget(comparePage_);
}

// What the right side says while nothing is selected: the project at a glance.
void MainWindow::showOverview(const ProjectSnapshot& s) {
  int completed = 0, running = 0, failed = 0;
  for (const core::RunRecord& r : s.runs) {
    completed += r.status == "completed";
    running += r.status == "running";
    failed += r.status == "failed";
  }
  const QString name =
      s.name.empty() ? QFileInfo(path_).completeBaseName() : QString::fromStdString(s.name);
  welcome_->setText(
      tr("<h2>%1</h2><p><tt>%2</tt></p><p>%3 datasets, %4 topologies, %5 experiments<br>"
         "%6 runs: %7 completed, %8 running, %9 failed</p>"
         "<p>Select a run in the explorer for its curves and metrics, or an entry for its "
         "configuration.</p>")
          .arg(name.toHtmlEscaped(), path_.toHtmlEscaped())
          .arg(s.datasets.size())
          .arg(s.topologies.size())
          .arg(s.experiments.size())
          .arg(s.runs.size())
          .arg(completed)
          .arg(running)
          .arg(failed));
}

void MainWindow::pollFile() {
  if (path_.isEmpty()) return;
  const QFileInfo file(path_), wal(path_ + "-wal");
  const QDateTime modified =
      std::max(file.lastModified(), wal.exists() ? wal.lastModified() : QDateTime());
  const qint64 walSize = wal.exists() ? wal.size() : -1;
  if (modified != seenModified_ || walSize != seenWalSize_) reload();
}

void MainWindow::showSelection() {
  const QModelIndex index = tree_->currentIndex();
  const QString kind = index.data(ExplorerModel::KindRole).toString();
  if (!index.isValid() || kind == "group") {
    pages_->setCurrentWidget(welcome_);
    shownRun_ = -1;
    return;
  }
  const qint64 id = index.data(ExplorerModel::IdRole).toLongLong();
  pendingKind_ = kind;
  pendingId_ = id;
  if (kind == "run") {
    if (id != shownRun_) loadRun(id);
    return;
  }
  shownRun_ = -1;
  const ProjectSnapshot& s = explorer_->snapshot();
  const std::vector<core::Entity>& list = kind == "dataset"    ? s.datasets
                                          : kind == "topology" ? s.topologies
                                                               : s.experiments;
  for (const core::Entity& e : list) {
    if (e.id != id) continue;
    entityPage_->showEntity(kind, e);
    pages_->setCurrentWidget(entityPage_);
  }
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
  readInBackground<RunDetail>(
      this, [path, runId] { return readRunDetail(path, runId); },
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
    recentMenu_->addAction(path, this, [this, path] { openProject(path); });
  recentMenu_->setEnabled(!recent.isEmpty());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  if (auto* split = findChild<QSplitter*>("mainSplitter"))
    settings.setValue("window/splitter", split->saveState());
  event->accept();
}

}  // namespace dtlab::ui
