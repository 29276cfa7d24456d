// ComparePage's executions: the runs of an execution grouped by variant, the execution chooser,
// and comparing one as a whole. Part of compare_page.cc's class, kept apart for size.
#include "ui/pages/compare_page.h"

#include <QtWidgets/QCheckBox>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QTabWidget>
#include <QtWidgets/QTableView>

#include <algorithm>

#include "ui/models/run_comparison_model.h"
#include "ui/pages/execution_statistics.h"

namespace dtlab::ui {

std::vector<int64_t> ComparePage::runsOf(int64_t executionId) const {
  std::vector<int64_t> ids;
  for (const RunGroup& g : groupsOf(executionId))
    ids.insert(ids.end(), g.runIds.begin(), g.runIds.end());
  return ids;
}

bool ComparePage::choosesExecution(int64_t executionId) const {
  std::vector<int64_t> chosen = runs_->chosen();
  std::vector<int64_t> runs = runsOf(executionId);
  std::sort(chosen.begin(), chosen.end());
  std::sort(runs.begin(), runs.end());
  return chosen == runs;
}

std::vector<RunGroup> ComparePage::groupsOf(int64_t executionId) const {
  const auto execution =
      std::find_if(snapshot_.executions.begin(), snapshot_.executions.end(),
                   [&](const core::ExecutionRecord& e) { return e.id == executionId; });
  if (execution == snapshot_.executions.end()) return {};
  std::string prefix;
  for (const core::Entity& e : snapshot_.experiments)
    if (e.id == execution->experimentId) prefix = e.name + "/";
  // Variants in the order of the execution's spec; a run of a variant it does not list (the
  // name of a run is all it has) follows.
  std::vector<RunGroup> groups;
  const nlohmann::json& spec = execution->spec;
  if (spec.is_object() && spec.contains("variants") && spec["variants"].is_array())
    for (const nlohmann::json& v : spec["variants"])
      if (v.is_object() && v.contains("name") && v["name"].is_string())
        groups.push_back({v["name"].get<std::string>(), {}});
  for (const core::RunRecord& r : snapshot_.runs) {
    if (r.executionId != executionId) continue;
    const std::string variant =
        !prefix.empty() && r.name.rfind(prefix, 0) == 0 ? r.name.substr(prefix.size()) : r.name;
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const RunGroup& x) { return x.label == variant; });
    if (g == groups.end()) g = groups.insert(groups.end(), RunGroup{variant, {}});
    g->runIds.push_back(r.id);
  }
  std::erase_if(groups, [](const RunGroup& g) { return g.runIds.empty(); });
  return groups;
}

void ComparePage::fillExecutionChoice() {
  executionChoice_->clear();
  for (auto e = snapshot_.executions.rbegin(); e != snapshot_.executions.rend(); ++e) {
    QString experiment = tr("(deleted experiment)");
    for (const core::Entity& x : snapshot_.experiments)
      if (x.id == e->experimentId) experiment = QString::fromStdString(x.name);
    std::size_t runs = 0;
    for (const RunGroup& g : groupsOf(e->id)) runs += g.runIds.size();
    executionChoice_->addItem(tr("execution #%1 of %2: %3 runs, %4 per variant")
                                  .arg(e->id)
                                  .arg(experiment)
                                  .arg(runs)
                                  .arg(e->repeats),
                              QVariant::fromValue<qint64>(e->id));
  }
  executionChoice_->addItem(tr("the runs checked in the table"));
  const int at = execution_ ? executionChoice_->findData(QVariant::fromValue<qint64>(*execution_))
                            : executionChoice_->count() - 1;
  executionChoice_->setCurrentIndex(at >= 0 ? at : executionChoice_->count() - 1);
}

bool ComparePage::showExecution(std::optional<int64_t> executionId) {
  if (executionId && runsOf(*executionId).empty()) return false;
  // Asked while the project's saved layout is on its way: asked again over it.
  if (layoutPending_ && applying_ == 0 && executionId != execution_)
    asked_.push_back([this, executionId] { showExecution(executionId); });
  const bool changed = executionId != execution_;
  execution_ = executionId;
  fillExecutionChoice();
  if (execution_) {
    runs_->setChosen(runsOf(*execution_));
    statisticsOf_ = executionState(*execution_);
    statistics_->setExecution(path_, *execution_);
    tabs_->setTabText(1, tr("Statistics (execution #%1)").arg(*execution_));
    // What an execution says is in its statistics; its runs are a tab away.
    if (changed) tabs_->setCurrentWidget(statistics_);
  } else {
    statistics_->clear(
        tr("Choose an execution above to see its variants' medians with 95% "
           "intervals and the ratios between them."));
    tabs_->setTabText(1, tr("Statistics"));
    if (changed) tabs_->setCurrentWidget(runsView_);
  }
  bands_->setEnabled(execution_.has_value());
  refreshPanels();
  if (changed) layoutChanged();
  return true;
}

std::string ComparePage::executionState(int64_t executionId) const {
  std::string state;
  for (const core::RunRecord& r : snapshot_.runs)
    if (r.executionId == executionId)
      state += std::to_string(r.id) + ":" + core::toString(r.status) + " ";
  return state;
}

void ComparePage::setBands(bool bands) {
  bands_->setChecked(bands);
}

}  // namespace dtlab::ui
