#include "ui/models/compare_layout.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace dtlab::ui {
namespace {

constexpr int kVersion = 1;

QString q(const std::string& text) {
  return QString::fromStdString(text);
}

nlohmann::json sizes(const std::vector<int>& values) {
  return values;
}

// A list of sizes: non-negative integers (a splitter's); nullopt, with a problem, otherwise.
std::optional<std::vector<int>> readSizes(const nlohmann::json& value, const char* field,
                                          QStringList& problems) {
  std::vector<int> out;
  bool ok = value.is_array();
  if (ok) {
    for (const nlohmann::json& v : value) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 100000) {
        ok = false;
        break;
      }
      out.push_back(v.get<int>());
    }
  }
  if (ok) return out;
  problems << QString("'%1' is not a list of sizes: ignored").arg(field);
  return std::nullopt;
}

std::optional<ChartSettings> readChart(const nlohmann::json& value, std::size_t index,
                                       QStringList& problems) {
  const QString where = QString("chart %1").arg(index + 1);
  if (!value.is_object()) {
    problems << QString("%1 is not an object: ignored").arg(where);
    return std::nullopt;
  }
  ChartSettings chart;
  for (const auto& [key, v] : value.items()) {
    if (key == "metric") {
      if (!v.is_string() || core::findMetric(v.get<std::string>()) == nullptr) {
        problems << QString("%1: unknown metric %2: the chart is left out").arg(where, q(v.dump()));
        return std::nullopt;
      }
      chart.metric = v.get<std::string>();
    } else if (key == "x") {
      const std::optional<ChartX> x =
          v.is_string() ? parseChartX(v.get<std::string>()) : std::nullopt;
      if (x)
        chart.x = *x;
      else
        problems
            << QString("%1: 'x' is %2, not \"step\" or \"wall\": ignored").arg(where, q(v.dump()));
    } else if (key == "workers") {
      if (v == "mean")
        chart.reduction = MemberReduction::kMean;
      else if (v == "first")
        chart.reduction = MemberReduction::kFirst;
      else
        problems << QString("%1: 'workers' is %2, not \"mean\" or \"first\": ignored")
                        .arg(where, q(v.dump()));
    } else if (key == "smoothing") {
      if (v.is_number() && v.get<double>() >= 0.0 && v.get<double>() < 1.0)
        chart.smoothing = v.get<double>();
      else
        problems << QString("%1: 'smoothing' is %2, not a weight in [0, 1): ignored")
                        .arg(where, q(v.dump()));
    } else {
      problems << QString("%1: unknown field '%2' ignored").arg(where, q(key));
    }
  }
  return chart;
}

}  // namespace

std::string compareLayoutToJson(const CompareLayout& layout) {
  nlohmann::json charts = nlohmann::json::array();
  for (const ChartSettings& c : layout.charts)
    charts.push_back({{"metric", c.metric},
                      {"x", toString(c.x)},
                      {"workers", c.reduction == MemberReduction::kMean ? "mean" : "first"},
                      {"smoothing", c.smoothing}});
  nlohmann::json out = {{"version", kVersion}, {"charts", charts}, {"current", layout.current}};
  if (layout.runs) out["runs"] = *layout.runs;
  if (!layout.splitter.empty()) out["splitter"] = sizes(layout.splitter);
  if (!layout.chartSplitter.empty()) out["chart_splitter"] = sizes(layout.chartSplitter);
  if (!layout.sortColumn.empty())
    out["sort"] = {{"column", layout.sortColumn},
                   {"order", layout.sortDescending ? "descending" : "ascending"}};
  if (layout.execution) out["execution"] = *layout.execution;
  if (!layout.bands) out["bands"] = false;
  return out.dump();
}

CompareLayout parseCompareLayout(const std::string& text, QStringList& problems) {
  CompareLayout layout;
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    problems << QString("it is not a JSON object: the default layout is used");
    return layout;
  }
  for (const auto& [key, v] : doc.items()) {
    if (key == "version") {
      if (!v.is_number_integer() || v.get<int64_t>() > kVersion)
        problems << QString(
                        "version %1 is not one this DTLab knows (%2): read as far as it "
                        "goes")
                        .arg(q(v.dump()))
                        .arg(kVersion);
    } else if (key == "charts") {
      if (!v.is_array()) {
        problems << QString("'charts' is not a list: one default chart");
        continue;
      }
      std::vector<ChartSettings> charts;
      for (std::size_t i = 0; i < v.size(); ++i)
        if (auto chart = readChart(v[i], i, problems)) charts.push_back(*chart);
      if (!charts.empty()) layout.charts = std::move(charts);
    } else if (key == "current") {
      if (v.is_number_integer())
        layout.current = static_cast<int>(std::clamp<int64_t>(v.get<int64_t>(), 0, 1000));
      else
        problems << QString("'current' is %1, not a chart number: ignored").arg(q(v.dump()));
    } else if (key == "runs") {
      std::vector<int64_t> runs;
      bool ok = v.is_array();
      for (std::size_t i = 0; ok && i < v.size(); ++i) {
        ok = v[i].is_number_integer();
        if (ok) runs.push_back(v[i].get<int64_t>());
      }
      if (ok)
        layout.runs = std::move(runs);
      else
        problems << QString("'runs' is not a list of run numbers: the latest runs are chosen");
    } else if (key == "splitter") {
      if (auto s = readSizes(v, "splitter", problems)) layout.splitter = std::move(*s);
    } else if (key == "chart_splitter") {
      if (auto s = readSizes(v, "chart_splitter", problems)) layout.chartSplitter = std::move(*s);
    } else if (key == "sort") {
      const bool ok =
          v.is_object() && v.contains("column") && v["column"].is_string() &&
          (!v.contains("order") || v["order"] == "ascending" || v["order"] == "descending");
      if (ok) {
        layout.sortColumn = v["column"].get<std::string>();
        // No column is the run order, which has no direction.
        layout.sortDescending =
            !layout.sortColumn.empty() && v.contains("order") && v["order"] == "descending";
      } else {
        problems << QString(
                        "'sort' is %1, not {\"column\": ..., \"order\": \"ascending\" or "
                        "\"descending\"}: ignored")
                        .arg(q(v.dump()));
      }
    } else if (key == "execution") {
      if (v.is_number_integer() && v.get<int64_t>() > 0)
        layout.execution = v.get<int64_t>();
      else
        problems << QString("'execution' is %1, not an execution number: ignored").arg(q(v.dump()));
    } else if (key == "bands") {
      if (v.is_boolean())
        layout.bands = v.get<bool>();
      else
        problems << QString("'bands' is %1, not true or false: ignored").arg(q(v.dump()));
    } else {
      problems << QString("unknown field '%1' ignored").arg(q(key));
    }
  }
  layout.current = std::min(layout.current, static_cast<int>(layout.charts.size()) - 1);
  return layout;
}

}  // namespace dtlab::ui
