// MainWindow's File > Export Report: the experiment report of the execution in view. Part of
// main_window.cc's class, kept apart for size.
#include <QtCore/QFileInfo>
#include <QtWidgets/QApplication>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QMessageBox>
#include <QtWidgets/QStackedWidget>
#include <QtWidgets/QStatusBar>

#include "core/analysis/experiment_report.h"
#include "core/store/project_store.h"
#include "ui/main_window.h"
#include "ui/models/explorer_model.h"
#include "ui/models/project_access.h"
#include "ui/pages/compare_page.h"
#include "ui/report/report_export.h"

namespace dtlab::ui {

std::pair<std::optional<std::string>, std::optional<int64_t>> MainWindow::reportTarget() const {
  if (pages_->currentWidget() == comparePage_ && comparePage_->execution())
    return {std::nullopt, comparePage_->execution()};
  const ProjectSnapshot& s = explorer_->snapshot();
  if (pendingKind_ == "execution") return {std::nullopt, pendingId_};
  if (pendingKind_ == "run")
    for (const core::RunRecord& r : s.runs)
      if (r.id == pendingId_ && r.executionId) return {std::nullopt, r.executionId};
  std::optional<int64_t> experimentId;
  if (pendingKind_ == "experiment") experimentId = pendingId_;
  if (pendingKind_ == "run")
    for (const core::RunRecord& r : s.runs)
      if (r.id == pendingId_) experimentId = r.experimentId;
  if (experimentId)
    for (const core::Entity& e : s.experiments)
      if (e.id == *experimentId) return {e.name, std::nullopt};
  return {std::nullopt, std::nullopt};  // the project's most recent
}

bool MainWindow::exportReport(const QString& path) {
  QString error;
  try {
    if (path_.isEmpty()) throw Error("no project is open");
    const std::pair<std::optional<std::string>, std::optional<int64_t>> target = reportTarget();
    QApplication::setOverrideCursor(Qt::WaitCursor);
    struct Restore {
      ~Restore() { QApplication::restoreOverrideCursor(); }
    } restore;
    const ReportContent content =
        readProjectNow<ReportContent>(path_.toStdString(), [target](core::ProjectStore& store) {
          return readReportContent(store,
                                   core::experimentReport(store, target.first, target.second));
        });
    const core::ExperimentReport& report = content.report;
    ui::exportReport(content, path);
    QString what = QString::fromStdString(report.experiment);
    if (report.executionId) what += tr(", execution %1").arg(*report.executionId);
    statusBar()->showMessage(tr("Report of %1 written to %2").arg(what, path));
    return true;
  } catch (const std::exception& e) {
    error = tr("Cannot export the report: %1").arg(QString::fromUtf8(e.what()));
  }
  statusBar()->showMessage(error);
  if (!quietErrors_) QMessageBox::warning(this, tr("DTLab"), error);
  return false;
}

void MainWindow::chooseReportFile() {
  const auto [experiment, execution] = reportTarget();
  QString name = experiment ? QString::fromStdString(*experiment) : QStringLiteral("report");
  if (execution) name += QString("-execution-%1").arg(*execution);
  const QString start = QFileInfo(path_).dir().filePath(name + ".html");
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Export the experiment report"), start,
                                   tr("Report as a web page (*.html);;Report as PDF (*.pdf)"));
  if (path.isEmpty()) return;
  exportReport(reportFormatOf(path) ? path : path + ".html");
}

}  // namespace dtlab::ui
