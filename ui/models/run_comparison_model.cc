#include "ui/models/run_comparison_model.h"

#include <algorithm>

#include "core/train/strategy_registry.h"
#include "ui/charts/chart_export.h"
#include "ui/charts/palette.h"

namespace dtlab::ui {
namespace {

// Per column: its CSV name, its title in the table's header (short, on two lines where that
// makes the column narrower: fifteen columns share the page's width with the explorer) and
// in Markdown and copies, and the decimals its numbers are shown with (-1: three significant
// digits, as `dtlab-cli compare` shows divergence).
struct ColumnInfo {
  const char* csvName;
  const char* header;
  const char* title;
  int decimals;
};
constexpr ColumnInfo kColumns[RunComparisonModel::kColumnCount] = {
    {"name", "Run", "Run", 0},
    {"strategy", "Strategy", "Strategy", 0},
    {"steps", "Steps", "Steps", 0},
    {"mean_staleness", "Stale.\nmean", "Mean staleness", 2},
    {"max_staleness", "Stale.\nmax", "Max staleness", 0},
    {"mean_divergence", "Diver-\ngence", "Mean divergence", -1},
    {"time_to_target_s", "Time to\ntarget (s)", "Time to target (s)", 2},
    {"samples_per_s", "Samples\n/s", "Samples/s", 0},
    {"mean_utilization", "Util.", "Mean utilisation", 3},
    {"mean_wait_fraction", "Wait\nfraction", "Wait fraction", 3},
    {"bytes_per_sample", "Comm.\nB/sample", "Communication (bytes/sample)", 0},
    {"compression_ratio", "Compr.\n(x)", "Compression ratio (bytes compressed / sent)", 1},
    {"compress_ms_per_step", "Compr.\nms/step", "Compression time (ms per step)", 2},
    {"peak_mem_bytes", "Peak\nMiB", "Peak memory (MiB)", 1},
    {"final_test_accuracy", "Final\naccuracy", "Final test accuracy", 4},
    {"recoveries", "Recov-\neries", "Recoveries", 0},
    {"outcome", "Outcome", "Outcome", 0},
};

QVariant figure(const std::optional<double>& v) {
  return v ? QVariant(*v) : QVariant();
}

bool numeric(int column) {
  return column >= RunComparisonModel::kStepsColumn && column != RunComparisonModel::kOutcomeColumn;
}

QString markdownCell(QString text) {
  return text.replace('|', "\\|").replace('\n', ' ');
}

QString tsvCell(QString text) {
  return text.replace('\t', ' ').replace('\n', ' ');
}

// What the table shows for a figure the run does not have.
const QString kUnknown = QStringLiteral("\u2013");

}  // namespace

RunComparisonModel::RunComparisonModel(QObject* parent) : QAbstractTableModel(parent) {}

QString RunComparisonModel::columnName(int column) {
  if (column < 0 || column >= kColumnCount) return {};
  return QString::fromLatin1(kColumns[column].csvName);
}

int RunComparisonModel::columnNamed(const QString& name) {
  for (int column = 0; column < kColumnCount; ++column)
    if (name == QLatin1String(kColumns[column].csvName)) return column;
  return -1;
}

void RunComparisonModel::setSnapshot(const ProjectSnapshot& snapshot) {
  std::vector<Row> rows;
  for (std::size_t i = 0; i < snapshot.runs.size(); ++i) {
    const core::RunRecord& run = snapshot.runs[i];
    const nlohmann::json summary =
        i < snapshot.summaries.size() ? snapshot.summaries[i] : nlohmann::json();
    std::string experiment;
    for (const core::Entity& e : snapshot.experiments)
      if (run.experimentId && *run.experimentId == e.id) experiment = e.name;
    core::ComparisonRow figures = core::comparisonRow(
        run, summary.is_object() ? std::optional(summary) : std::nullopt, experiment);
    rows.push_back({run, summary, std::move(figures)});
  }
  std::set<int64_t> experiments;
  for (const Row& r : rows) experiments.insert(r.run.experimentId.value_or(-1));
  severalExperiments_ = experiments.size() > 1;
  const bool sameRuns = std::equal(rows.begin(), rows.end(), rows_.begin(), rows_.end(),
                                   [](const Row& a, const Row& b) { return a.run.id == b.run.id; });
  const std::size_t chosenBefore = chosen_.size();
  if (sameRuns) {
    // Figures of running runs change; the rows stay: the view keeps its place and selection.
    rows_ = std::move(rows);
    if (!rows_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, kColumnCount - 1));
    return;
  }
  beginResetModel();
  rows_ = std::move(rows);
  std::erase_if(chosen_, [this](int64_t id) {
    return std::none_of(rows_.begin(), rows_.end(), [id](const Row& r) { return r.run.id == id; });
  });
  endResetModel();
  if (chosen_.size() != chosenBefore) emit chosenChanged();
}

void RunComparisonModel::setChosen(const std::vector<int64_t>& runIds) {
  std::set<int64_t> chosen;
  for (const Row& r : rows_)
    if (std::find(runIds.begin(), runIds.end(), r.run.id) != runIds.end()) chosen.insert(r.run.id);
  if (chosen == chosen_) return;
  chosen_ = std::move(chosen);
  if (!rows_.empty()) emit dataChanged(index(0, kRunColumn), index(rowCount() - 1, kRunColumn));
  emit chosenChanged();
}

std::vector<int64_t> RunComparisonModel::chosen() const {
  std::vector<int64_t> out;
  for (const Row& r : rows_)
    if (chosen_.contains(r.run.id)) out.push_back(r.run.id);
  return out;
}

std::vector<int64_t> RunComparisonModel::runIds() const {
  std::vector<int64_t> out;
  for (const Row& r : rows_) out.push_back(r.run.id);
  return out;
}

int RunComparisonModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int RunComparisonModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant RunComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= kColumnCount) return {};
  if (role == Qt::DisplayRole) return tr(kColumns[section].header);
  if (role != Qt::ToolTipRole) return {};
  switch (section) {
    case kTimeToTargetColumn:
      return tr("Seconds until the test accuracy first reached the spec's target");
    case kUtilizationColumn:
      return tr("Mean utilisation: compute time / step time");
    case kWaitColumn:
      return tr("Wait fraction: share of step time blocked on peers or servers");
    case kMeanStalenessColumn:
      return tr(
          "Mean staleness: server version at push minus the version pulled, averaged "
          "over the run's pushes (asynchronous strategies)");
    case kMaxStalenessColumn:
      return tr("Largest staleness of any push in the run");
    case kBytesPerSampleColumn:
      return tr(
          "Communication per sample: bytes the run's workers sent and received per trained "
          "sample");
    case kCompressionColumn:
      return tr(
          "Compression ratio: bytes of the gradients or weights the run compressed over the "
          "bytes it sent instead (the variant's \"compression\"; \u2013 when none)");
    case kCompressMsColumn:
      return tr("Milliseconds per worker step spent compressing and decompressing");
    case kPeakMemoryColumn:
      return tr("Peak resident memory of the largest worker (MiB)");
    case kDivergenceColumn:
      return tr(
          "Mean divergence: relative distance of the workers' replicas from the server copy "
          "(asynchronous strategies)");
    case kOutcomeColumn:
      return tr("Why the run stopped, and whether it reached its target (as dtlab-cli compare)");
    default:
      return tr(kColumns[section].title);
  }
}

Qt::ItemFlags RunComparisonModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
  if (index.column() == kRunColumn) f |= Qt::ItemIsUserCheckable;
  return f;
}

QVariant RunComparisonModel::value(const Row& row, int column) const {
  const core::ComparisonRow& f = row.figures;
  const nlohmann::json& s = row.summary;
  switch (column) {
    case kRunColumn:
      return QString::fromStdString(row.run.name);
    case kStrategyColumn:
      return QString::fromStdString(f.strategy);
    case kStepsColumn:
      return s.is_object() && s.contains("steps") && s["steps"].is_number_integer()
                 ? QVariant::fromValue<qint64>(s["steps"].get<int64_t>())
                 : QVariant();
    case kMeanStalenessColumn:
      return figure(f.meanStaleness);
    case kMaxStalenessColumn:
      return figure(f.maxStaleness);
    case kDivergenceColumn:
      return figure(f.meanDivergence);
    case kTimeToTargetColumn:
      return figure(f.timeToTargetS);
    case kSamplesPerSColumn:
      return figure(f.samplesPerS);
    case kUtilizationColumn:
      return figure(f.meanUtilization);
    case kWaitColumn:
      return figure(f.meanWaitFraction);
    case kBytesPerSampleColumn:
      return figure(f.bytesPerSample);
    case kCompressionColumn:
      return figure(f.compressionRatio);
    case kCompressMsColumn:
      return figure(f.compressMsPerStep);
    case kPeakMemoryColumn:
      return f.peakMemBytes ? QVariant::fromValue<qint64>(*f.peakMemBytes) : QVariant();
    case kAccuracyColumn:
      return figure(f.finalTestAccuracy);
    case kRecoveriesColumn:
      return f.recoveries ? QVariant::fromValue<qint64>(*f.recoveries) : QVariant();
    case kOutcomeColumn:
      return QString::fromStdString(core::comparisonOutcome(f));
    default:
      return {};
  }
}

// "#id name" with the run's whole name (the experiment's too).
QString RunComparisonModel::fullName(const Row& row) {
  return QString("#%1 %2").arg(row.run.id).arg(QString::fromStdString(row.run.name));
}

QString RunComparisonModel::text(const Row& row, int column) const {
  // A run by its variant's name, as `dtlab-cli compare` names it, when all runs belong to one
  // experiment; with several, variants repeat ("one_node" of two experiments), so the whole
  // name (EXPERIMENT/VARIANT), elided in the middle where the column is narrow.
  if (column == kRunColumn)
    return severalExperiments_
               ? fullName(row)
               : QString("#%1 %2").arg(row.run.id).arg(QString::fromStdString(row.figures.variant));
  const QVariant v = value(row, column);
  if (!v.isValid()) {
    // A finished run without a time to target did not reach it, or had none to reach.
    if (column == kTimeToTargetColumn && row.figures.hasSummary)
      return row.figures.targetAccuracy ? tr("not reached") : tr("none set");
    return kUnknown;
  }
  if (!numeric(column)) return v.toString();
  if (column == kPeakMemoryColumn)
    return QString::number(v.toDouble() / (1024.0 * 1024.0), 'f', kColumns[column].decimals);
  if (column == kStepsColumn) return QString::number(v.toLongLong());
  if (kColumns[column].decimals < 0) return QString::number(v.toDouble(), 'g', 3);
  return QString::number(v.toDouble(), 'f', kColumns[column].decimals);
}

// Why a cell shows no figure.
QString RunComparisonModel::unknownTip(const Row& row, int column) const {
  if (!row.summary.is_object())
    return tr("Run #%1 has no summary yet (it is running, or ended without one)").arg(row.run.id);
  switch (column) {
    case kTimeToTargetColumn:
      return row.figures.targetAccuracy ? tr("The run did not reach its target accuracy")
                                        : tr("The run's spec sets no target accuracy");
    case kDivergenceColumn:
      // Divergence is a replica's distance from the parameter server's copy: a run without
      // one (a synchronous strategy, a single process) has nothing to diverge from.
      if (const core::StrategyDescriptor* d = core::findStrategy(row.figures.strategy);
          d == nullptr || !d->traits.usesParameterServer)
        return tr("Only strategies with a parameter server (%1) measure divergence")
            .arg(QString::fromStdString(core::strategyList(
                [](const core::StrategyDescriptor& s) { return s.traits.usesParameterServer; })));
      return tr("Run #%1 did not record divergence: its summary has no 'mean_divergence'")
          .arg(row.run.id);
    case kMeanStalenessColumn:
    case kMaxStalenessColumn:
    case kBytesPerSampleColumn:
    case kRecoveriesColumn:
      return tr("Run #%1 did not record %2: its summary has no '%3' (runs recorded before "
                "DTLab measured it)")
          .arg(row.run.id)
          .arg(tr(kColumns[column].title).toLower(), QString::fromLatin1(kColumns[column].csvName));
    default:
      return tr("Run #%1 did not record %2").arg(row.run.id).arg(tr(kColumns[column].title));
  }
}

QVariant RunComparisonModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= kColumnCount) return {};
  const Row& row = rows_[static_cast<std::size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
      return text(row, index.column());
    case IdRole:
      return QVariant::fromValue<qint64>(row.run.id);
    case ValueRole:
      return value(row, index.column());
    case SortRole:
      return index.column() == kRunColumn ? QVariant::fromValue<qint64>(row.run.id)
                                          : value(row, index.column());
    case Qt::TextAlignmentRole:
      return numeric(index.column()) ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::CheckStateRole:
      if (index.column() != kRunColumn) return {};
      return chosen_.contains(row.run.id) ? Qt::Checked : Qt::Unchecked;
    case Qt::DecorationRole:
      return index.column() == kRunColumn ? QVariant(runColour(row.run.id)) : QVariant();
    case Qt::ToolTipRole:
      if (index.column() == kRunColumn)  // the full name where the column is narrower
        return row.run.error.empty()
                   ? fullName(row)
                   : QString("%1: %2").arg(fullName(row), QString::fromStdString(row.run.error));
      if (index.column() != kRunColumn && !value(row, index.column()).isValid())
        return unknownTip(row, index.column());
      if (index.column() == kOutcomeColumn)  // elided where the column is narrower
        return text(row, kOutcomeColumn);
      if (index.column() == kRecoveriesColumn)
        return tr("%n lost node(s) survived: %1 s from losing each to training again, summed; "
                  "%2 steps taken again after a restart",
                  nullptr, static_cast<int>(row.figures.recoveries.value_or(0)))
            .arg(row.figures.recoveryS.value_or(0.0), 0, 'f', 2)
            .arg(row.figures.stepsLost.value_or(0));
      return {};
    default:
      return {};
  }
}

bool RunComparisonModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || index.column() != kRunColumn || role != Qt::CheckStateRole) return false;
  const int64_t id = rows_[static_cast<std::size_t>(index.row())].run.id;
  const bool check = value.value<Qt::CheckState>() == Qt::Checked;
  if (check == chosen_.contains(id)) return true;
  if (check)
    chosen_.insert(id);
  else
    chosen_.erase(id);
  emit dataChanged(index, index, {Qt::CheckStateRole});
  emit chosenChanged();
  return true;
}

QString RunComparisonModel::toCsv() const {
  QStringList header{"run"};
  for (const ColumnInfo& c : kColumns) header << c.csvName;
  QString out = header.join(',') + '\n';
  for (const Row& row : rows_) {
    if (!chosen_.contains(row.run.id)) continue;
    QStringList fields{QString::number(row.run.id)};
    for (int column = 0; column < kColumnCount; ++column) {
      const QVariant v = value(row, column);
      if (!v.isValid())
        fields << QString();
      else if (v.typeId() == QMetaType::Double)
        fields << QString::number(v.toDouble(), 'g', 10);
      else
        fields << csvField(v.toString());
    }
    out += fields.join(',') + '\n';
  }
  return out;
}

QString RunComparisonModel::toMarkdown() const {
  QStringList header, rule;
  for (int column = 0; column < kColumnCount; ++column) {
    header << tr(kColumns[column].title);
    rule << (numeric(column) ? "---:" : "---");
  }
  QString out = "| " + header.join(" | ") + " |\n| " + rule.join(" | ") + " |\n";
  for (const Row& row : rows_) {
    if (!chosen_.contains(row.run.id)) continue;
    QStringList cells;
    for (int column = 0; column < kColumnCount; ++column) cells << markdownCell(text(row, column));
    out += "| " + cells.join(" | ") + " |\n";
  }
  return out;
}

QString RunComparisonModel::toTsv(const std::vector<int64_t>& runIds) const {
  QStringList header;
  for (int column = 0; column < kColumnCount; ++column) header << tr(kColumns[column].title);
  QString out = header.join('\t') + '\n';
  for (const int64_t id : runIds) {
    const auto row =
        std::find_if(rows_.begin(), rows_.end(), [id](const Row& r) { return r.run.id == id; });
    if (row == rows_.end()) continue;
    QStringList cells;
    for (int column = 0; column < kColumnCount; ++column) cells << tsvCell(text(*row, column));
    out += cells.join('\t') + '\n';
  }
  return out;
}

RunComparisonSortModel::RunComparisonSortModel(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(RunComparisonModel::SortRole);
}

void RunComparisonSortModel::sort(int column, Qt::SortOrder order) {
  QSortFilterProxyModel::sort(column, order);
  emit headerDataChanged(Qt::Horizontal, 0, columnCount() - 1);
}

QVariant RunComparisonSortModel::headerData(int section, Qt::Orientation orientation,
                                            int role) const {
  QVariant title = QSortFilterProxyModel::headerData(section, orientation, role);
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal || section != sortColumn())
    return title;
  return title.toString() + (sortOrder() == Qt::AscendingOrder ? QStringLiteral(" \u25b2")
                                                               : QStringLiteral(" \u25bc"));
}

bool RunComparisonSortModel::lessThan(const QModelIndex& left, const QModelIndex& right) const {
  const QVariant a = left.data(sortRole());
  const QVariant b = right.data(sortRole());
  // Descending order asks lessThan(right, left): an unknown value is then the least, so that
  // it still comes last.
  const bool unknownIsGreatest = sortOrder() == Qt::AscendingOrder;
  if (!a.isValid() || !b.isValid()) {
    if (a.isValid() == b.isValid()) return false;
    return a.isValid() == unknownIsGreatest;
  }
  if (a.typeId() == QMetaType::QString || b.typeId() == QMetaType::QString)
    return a.toString().localeAwareCompare(b.toString()) < 0;
  return a.toDouble() < b.toDouble();
}

}  // namespace dtlab::ui
