#include "app/report_command.h"

#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>

#include <QtCore/QString>
#include <QtWidgets/QApplication>

#include "app/args.h"
#include "core/analysis/experiment_report.h"
#include "core/store/project_store.h"
#include "ui/report/report_export.h"

namespace dtlab::app {

int reportCommand(const std::vector<std::string>& argv) {
  const Args args(argv, {"-o", "--output", "--execution"}, {});
  if (args.positionals().empty() || args.positionals().size() > 2)
    throw UsageError("expected P.dtlab [EXPERIMENT] -o REPORT.html|pdf");
  const std::string out = args.value("-o", args.value("--output", ""));
  if (out.empty()) throw UsageError("-o REPORT.html|pdf: where to write the report");
  // Checked before anything is read, so that a wrong name is a usage error whatever the file.
  if (!ui::reportFormatOf(QString::fromStdString(out)))
    throw UsageError("-o " + out + ": a report is written as " + ui::kReportExtensions);
  std::optional<std::string> experiment;
  if (args.positionals().size() == 2) experiment = args.positionals()[1];
  std::optional<int64_t> execution;
  if (args.has("--execution"))
    execution = args.integer("--execution", 0, 1, std::numeric_limits<int64_t>::max());

  auto store = core::ProjectStore::open(args.positionals()[0], /*readOnly=*/true);
  const ui::ReportContent content =
      ui::readReportContent(*store, core::experimentReport(*store, experiment, execution));
  const core::ExperimentReport& report = content.report;
  // The charts are widgets drawn offscreen: no display needed, none used.
  if (std::getenv("QT_QPA_PLATFORM") == nullptr) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  // Qt's notes about this process's environment (no XDG_RUNTIME_DIR for a root shell) are not
  // about the report; its warnings and errors still show.
  qInstallMessageHandler([](QtMsgType type, const QMessageLogContext&, const QString& message) {
    if (type == QtDebugMsg || type == QtInfoMsg || message.startsWith("QStandardPaths:")) return;
    std::cerr << message.toStdString() << "\n";
  });
  int qtArgc = 1;
  char name[] = "dtlab-cli";
  char* qtArgv[] = {name, nullptr};
  QApplication app(qtArgc, qtArgv);
  ui::exportReport(content, QString::fromStdString(out));
  std::cerr << "wrote " << out << ": experiment " << report.experiment;
  if (report.executionId) std::cerr << ", execution " << *report.executionId;
  std::cerr << " (" << report.runCount << " runs, " << report.charts.size() << " charts)\n";
  return 0;
}

}  // namespace dtlab::app
