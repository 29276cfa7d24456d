#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include <QtCore/QSize>

#include <qcustomplot.h>

#include "core/analysis/experiment_report.h"
#include "core/store/project_store.h"
#include "ui/charts/comparison_data.h"

namespace dtlab::ui {

// What a report shows, read from its project before anything is drawn (drawing reads no file,
// so the window can read on the project's threads and draw on its own): the report and, for
// each of its charts in order, a curve chart's series (nullopt for a bar chart).
struct ReportContent {
  core::ExperimentReport report;
  std::vector<std::optional<ComparisonData>> curves;
};
// Reads the curves of `report`'s charts from `store` (its project). Throws core::StoreError /
// dtlab::Error when they cannot be read.
ReportContent readReportContent(core::ProjectStore& store, core::ExperimentReport report);

// Chart `chart` of a report, drawn at `size` and ready to render (toPainter): a curve chart is
// the compare page's ComparisonChart on the execution's runs, grouped by variant (each
// variant's median with its band, repetitions faint); bars show a comparison figure per
// variant, the median with its interval as an error bar, in the variants' colours of the curve
// charts.
std::unique_ptr<QCustomPlot> reportChart(const ReportContent& content, std::size_t chart,
                                         QSize size);

}  // namespace dtlab::ui
