#include "ui/pages/execution_statistics.h"

#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QTableView>
#include <QtWidgets/QVBoxLayout>

#include "core/analysis/comparison.h"
#include "core/analysis/comparison_output.h"
#include "core/analysis/comparison_statistics.h"
#include "core/analysis/run_calibration.h"
#include "core/analysis/seed_table.h"
#include "core/store/project_store.h"
#include "ui/background.h"
#include "ui/models/project_access.h"
#include "ui/models/statistics_table_model.h"

namespace dtlab::ui {
namespace {

struct Tables {
  std::string heading;
  core::StatisticsTable variants;
  core::StatisticsTable ratios;
  core::StatisticsTable seed;
  // The simulator beside each run (core/analysis/run_calibration.h), when the experiment has a
  // calibration; else what to do about it.
  core::StatisticsTable yardstick;
  std::string yardstickNote;
};

QTableView* tableView(StatisticsTableModel* model, QWidget* parent) {
  auto* view = new QTableView(parent);
  view->setModel(model);
  view->verticalHeader()->hide();
  view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 8);
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view->horizontalHeader()->setStretchLastSection(true);
  view->setAlternatingRowColors(true);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setEditTriggers(QAbstractItemView::NoEditTriggers);
  return view;
}

QLabel* captionLabel(QWidget* parent) {
  auto* label = new QLabel(parent);
  label->setWordWrap(true);
  label->setStyleSheet("color: #444;");
  return label;
}

}  // namespace

ExecutionStatistics::ExecutionStatistics(QWidget* parent)
    : QWidget(parent),
      heading_(new QLabel(this)),
      variantsCaption_(captionLabel(this)),
      ratiosCaption_(captionLabel(this)),
      variants_(new StatisticsTableModel(this)),
      ratios_(new StatisticsTableModel(this)),
      seed_(new StatisticsTableModel(this)),
      seedPanel_(new QWidget(this)),
      seedCaption_(captionLabel(seedPanel_)),
      yardstick_(new StatisticsTableModel(this)),
      yardstickPanel_(new QWidget(this)),
      yardstickCaption_(captionLabel(yardstickPanel_)),
      variantsView_(tableView(variants_, this)),
      ratiosView_(tableView(ratios_, this)) {
  QFont bold = heading_->font();
  bold.setBold(true);
  heading_->setFont(bold);
  heading_->setWordWrap(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(heading_);
  layout->addWidget(variantsCaption_);
  layout->addWidget(variantsView_, 3);
  layout->addWidget(ratiosCaption_);
  layout->addWidget(ratiosView_, 2);
  auto* seedLayout = new QVBoxLayout(seedPanel_);
  seedLayout->setContentsMargins(4, 4, 4, 4);
  seedLayout->addWidget(seedCaption_);
  seedLayout->addWidget(tableView(seed_, seedPanel_), 1);
  auto* yardstickLayout = new QVBoxLayout(yardstickPanel_);
  yardstickLayout->setContentsMargins(4, 4, 4, 4);
  yardstickLayout->addWidget(yardstickCaption_);
  yardstickLayout->addWidget(tableView(yardstick_, yardstickPanel_), 1);
  clear(tr("Choose an execution to see its medians and intervals."));
}

void ExecutionStatistics::clear(const QString& why) {
  ++read_;
  pending_ = 0;
  heading_->setText(why);
  variantsCaption_->clear();
  ratiosCaption_->clear();
  variants_->setTable({});
  ratios_->setTable({});
  seed_->setTable({});
  seedCaption_->setText(why);
  yardstick_->setTable({});
  yardstickCaption_->setText(why);
}

void ExecutionStatistics::setExecution(const std::string& path, int64_t executionId) {
  const quint64 id = ++read_;
  ++pending_;
  readProject<Tables>(
      this, path,
      [executionId](core::ProjectStore& opened) {
        core::ProjectStore* store = &opened;
        const core::Comparison c = core::compareExperiment(*store, std::nullopt, executionId);
        const core::ComparisonStatistics stats = core::comparisonStatistics(c);
        const std::string table = core::comparisonTable(c);
        Tables tables;
        tables.heading = table.substr(0, table.find('\n'));
        tables.variants = core::variantStatisticsTable(stats);
        tables.ratios = core::ratioStatisticsTable(stats);
        tables.seed = core::seedTable(c, stats);
        try {
          if (const auto yardstick = core::comparisonYardstick(*store, c))
            tables.yardstick = core::yardstickTable(*yardstick);
          else
            tables.yardstickNote =
                "No calibration of experiment \"" + c.experiment +
                "\" yet: View > Predict at Scale, then Calibrate from Runs, fits one (or "
                "dtlab-cli calibrate); the simulator's time per step is then set beside each run.";
        } catch (const std::exception& e) {
          tables.yardstickNote = std::string("No yardstick: ") + e.what();
        }
        return tables;
      },
      [this, id](const std::optional<Tables>& tables, const QString& error) {
        if (id != read_) return;  // another execution was chosen meanwhile
        pending_ = 0;
        if (!tables) {
          clear(tr("Cannot read the execution: %1").arg(error));
          emit failed(tr("Cannot read the execution's statistics: %1").arg(error));
          return;
        }
        heading_->setText(QString::fromStdString(tables->heading));
        variantsCaption_->setText(QString::fromStdString(tables->variants.caption));
        ratiosCaption_->setText(tables->ratios.rows.empty()
                                    ? tr("No ratios: the variants share no completed repetition.")
                                    : QString::fromStdString(tables->ratios.caption));
        variants_->setTable(tables->variants);
        ratios_->setTable(tables->ratios);
        seed_->setTable(tables->seed);
        seedCaption_->setText(
            QString::fromStdString(tables->heading + "\n" + tables->seed.caption));
        yardstick_->setTable(tables->yardstick);
        yardstickCaption_->setText(QString::fromStdString(
            tables->yardstickNote.empty() ? tables->heading + "\n" + tables->yardstick.caption
                                          : tables->yardstickNote));
        emit shown();
      });
}

}  // namespace dtlab::ui
