#pragma once

#include <memory>

#include <QtCore/QSize>

#include <qcustomplot.h>

#include "core/analysis/experiment_report.h"

namespace dtlab::ui {

// A chart of an experiment report, drawn at `size` and ready to render (toPainter): a curve
// chart is the compare page's ComparisonChart on the execution's runs, grouped by variant
// (each variant's median with its band, repetitions faint), read from the report's project;
// bars show a comparison figure per variant, the median with its interval as an error bar, in
// the variants' colours of the curve charts. Throws core::StoreError / dtlab::Error when the
// project cannot be read.
std::unique_ptr<QCustomPlot> reportChart(const core::ExperimentReport& report,
                                         const core::ReportChart& chart, QSize size);

}  // namespace dtlab::ui
