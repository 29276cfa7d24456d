#pragma once

#include <QtCore/QDateTime>
#include <QtWidgets/QMainWindow>

#include "ui/models/project_snapshot.h"

class QLabel;
class QMenu;
class QStackedWidget;
class QTimer;
class QTreeView;

namespace dtlab::ui {

class ComparePage;
class EntityPage;
class ExplorerModel;
class RunPage;

// The workbench window: the project explorer beside the page of what is selected. Project
// reads happen on a thread pool and arrive as values (ProjectSnapshot, RunDetail); the GUI
// thread never waits on the file. The open project is re-read when its file changes, so runs
// that another process (`dtlab-cli run --project`) records appear as they happen.
class MainWindow final : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens (reads in the background) and emits projectLoaded, or loadFailed with the reason.
  void openProject(const QString& path);
  // Creates a new, empty project file and opens it; false (with a message) if it cannot.
  bool newProject(const QString& path);
  // Selects a run in the explorer and shows its page (emits runShown when it is drawn).
  void selectRun(qint64 runId);
  // Shows the comparison of the project's runs (View > Compare runs).
  void showCompare();
  // Errors go to the status bar only (screenshots, tests) instead of a message box.
  void setQuietErrors(bool quiet) { quietErrors_ = quiet; }

  QString projectPath() const { return path_; }
  ExplorerModel* explorerModel() const { return explorer_; }
  QTreeView* explorerView() const { return tree_; }
  RunPage* runPage() const { return runPage_; }
  EntityPage* entityPage() const { return entityPage_; }
  ComparePage* comparePage() const { return comparePage_; }
  QWidget* currentPage() const;

 signals:
  void projectLoaded(const QString& path);
  void loadFailed(const QString& message);
  void runShown(qint64 runId);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildMenus();
  void reload();
  void applySnapshot(quint64 generation, const ProjectSnapshot& snapshot);
  void showOverview(const ProjectSnapshot& snapshot);
  void showSelection();
  void loadRun(qint64 runId);
  void pollFile();
  void fail(const QString& message);
  void rememberRecent(const QString& path);
  void refreshRecentMenu();
  void showAbout();

  ExplorerModel* explorer_;
  QTreeView* tree_;
  QStackedWidget* pages_;
  QLabel* welcome_;
  EntityPage* entityPage_;
  RunPage* runPage_;
  ComparePage* comparePage_;
  QMenu* recentMenu_ = nullptr;
  QTimer* poll_;
  QLabel* statusProject_;

  QString path_;
  quint64 generation_ = 0;  // of the open project; stale reads are dropped
  quint64 runRequest_ = 0;  // of the run page
  qint64 shownRun_ = -1;
  QString pendingKind_;  // re-selected after a reload
  qint64 pendingId_ = -1;
  QDateTime seenModified_;  // the file's and its WAL's last change, for pollFile
  qint64 seenWalSize_ = -1;
  bool quietErrors_ = false;
};

}  // namespace dtlab::ui
