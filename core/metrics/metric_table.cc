#include "core/metrics/metric_table.h"

namespace dtlab::core {
namespace {

struct ByScope {
  std::array<std::vector<const MetricInfo*>, 3> rows;
  ByScope() {
    for (const MetricInfo& m : kMetricTable) rows[static_cast<std::size_t>(m.scope)].push_back(&m);
  }
};

// Each row names its metric's field in exactly the record of its scope.
constexpr bool rowsAreConsistent() {
  for (const MetricInfo& m : kMetricTable) {
    const int set = (m.worker != nullptr) + (m.node != nullptr) + (m.run != nullptr);
    if (set != 1) return false;
    if ((m.scope == MetricScope::kWorker) != (m.worker != nullptr)) return false;
    if ((m.scope == MetricScope::kNode) != (m.node != nullptr)) return false;
    if (m.name.empty()) return false;
  }
  for (std::size_t i = 0; i < kMetricTable.size(); ++i)
    for (std::size_t j = i + 1; j < kMetricTable.size(); ++j)
      if (kMetricTable[i].name == kMetricTable[j].name) return false;
  return true;
}
static_assert(rowsAreConsistent(), "every metric row names one field of its scope's record");

}  // namespace

std::span<const MetricInfo* const> metricsOf(MetricScope scope) {
  static const ByScope byScope;
  return byScope.rows[static_cast<std::size_t>(scope)];
}

const MetricInfo* findMetric(std::string_view name) {
  for (const MetricInfo& m : kMetricTable)
    if (m.name == name) return &m;
  return nullptr;
}

const char* toString(MetricScope scope) {
  switch (scope) {
    case MetricScope::kWorker:
      return "worker";
    case MetricScope::kNode:
      return "node";
    case MetricScope::kRun:
      return "run";
  }
  return "run";
}

}  // namespace dtlab::core
