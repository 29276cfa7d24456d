// The comparison view's saved layout (ui/models/compare_layout.h), read from a project that
// anyone may have edited: parseCompareLayout never throws, returns a layout the page can apply
// (at least one chart, a current chart among them, known metrics, weights in [0, 1)), and that
// layout writes out and reads back as itself without a problem.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/metrics/metric_table.h"
#include "tests/fuzz/fuzz_support.h"
#include "ui/models/compare_layout.h"

using dtlab::fuzz::finding;
using dtlab::ui::CompareLayout;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  QStringList problems;
  const CompareLayout layout = dtlab::ui::parseCompareLayout(text, problems);
  if (layout.charts.empty()) finding("a layout without a chart", text);
  if (layout.current < 0 || layout.current >= static_cast<int>(layout.charts.size()))
    finding("the current chart is not one of the charts", text);
  for (const dtlab::ui::ChartSettings& chart : layout.charts) {
    if (dtlab::core::findMetric(chart.metric) == nullptr)
      finding("a chart of an unknown metric: " + chart.metric, text);
    if (!(chart.smoothing >= 0.0 && chart.smoothing < 1.0)) finding("a smoothing weight", text);
  }
  for (const QString& problem : problems)
    if (problem.isEmpty()) finding("an empty problem", text);
  QStringList again;
  if (!(dtlab::ui::parseCompareLayout(dtlab::ui::compareLayoutToJson(layout), again) == layout))
    finding("a layout does not read back as itself", text);
  if (!again.isEmpty())
    finding("a written layout reads with problems: " + again.join("; ").toStdString(), text);
  return 0;
}
