#include "ui/pages/start_page.h"

#include <QtCore/QCoreApplication>
#include <QtCore/QDir>
#include <QtCore/QFileInfo>
#include <QtCore/QSettings>
#include <QtCore/QStandardPaths>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QLabel>
#include <QtWidgets/QListWidget>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QVBoxLayout>

#include "core/spec/spec_description.h"
#include "core/spec/spec_json.h"

namespace dtlab::ui {
namespace {

constexpr int kPathRole = Qt::UserRole + 1;

bool hasSpecs(const QString& dir) {
  return !dir.isEmpty() && !QDir(dir).entryList({"*.json"}, QDir::Files).isEmpty();
}

}  // namespace

QString examplesDir() {
  QStringList candidates;
  const QString fromEnv = qEnvironmentVariable("DTLAB_RESOURCES");
  if (!fromEnv.isEmpty()) candidates << QDir(fromEnv).filePath("specs");
  // installer/packaging.cmake: /usr/bin/dtlab, /usr/share/dtlab/examples.
  candidates << QDir(QCoreApplication::applicationDirPath()).filePath("../share/dtlab/examples");
#ifdef DTLAB_SOURCE_DIR
  candidates << QStringLiteral(DTLAB_SOURCE_DIR "/resources/specs");
#endif
  for (const QString& dir : candidates)
    if (hasSpecs(dir)) return QDir(dir).canonicalPath();
  return {};
}

std::vector<Tour> tours() {
  const std::vector<Tour> all = {
      {QObject::tr("Compare sync and async under a straggler"), "modes_straggler.json",
       QObject::tr("Six training modes on four nodes, one of which pauses at random: how far "
                   "each gets in the same time, how stale its updates are, and what that does "
                   "to accuracy.")},
      {QObject::tr("Does the heterogeneity scheduler pay on my cluster?"), "hetero_2node.json",
       QObject::tr("Two nodes of different speeds: the equal split of each batch against the "
                   "split by measured speed, and a one-node baseline, on this machine.")},
      {QObject::tr("What if I had 64 nodes?"),
       "scale_out.json",
       QObject::tr("Runs on one node and on two (a few seconds each), the simulator calibrated "
                   "from them, and each strategy predicted from 2 to 64 nodes: where the "
                   "all-reduce stops paying, and how stale the parameter server gets."),
       {2, 4, 8, 16, 32, 64}},
  };
  std::vector<Tour> out;
  const QString dir = examplesDir();
  for (const Tour& t : all)
    if (!dir.isEmpty() && QFileInfo(QDir(dir).filePath(t.example)).isFile()) out.push_back(t);
  return out;
}

QString exampleProjectsDir() {
  return QDir(QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation))
      .filePath("DTLab");
}

StartPage::StartPage(QWidget* parent) : QWidget(parent) {
  auto* title = new QLabel(
      tr("<h2>DTLab</h2><p>Start from an example: it opens as a project of its own in "
         "<tt>%1</tt>, ready to run (<b>Run Experiment</b>), compare and report. Or open a "
         "project, or make a new one.</p>")
          .arg(exampleProjectsDir().toHtmlEscaped()),
      this);
  title->setWordWrap(true);
  examples_ = new QListWidget(this);
  examples_->setObjectName("examples");
  examples_->setWordWrap(true);
  examples_->setAlternatingRowColors(true);
  tours_ = new QListWidget(this);
  tours_->setObjectName("tours");
  tours_->setMaximumHeight(80);
  recent_ = new QListWidget(this);
  recent_->setObjectName("recentProjects");
  auto* newButton = new QPushButton(tr("New Project..."), this);
  auto* openButton = new QPushButton(tr("Open Project..."), this);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(newButton);
  buttons->addWidget(openButton);
  buttons->addStretch(1);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title);
  layout->addWidget(new QLabel(
      tr("<b>Guided tours</b>: an example opened, run on local nodes and compared"), this));
  layout->addWidget(tours_);
  layout->addWidget(new QLabel(tr("<b>Examples</b> (double-click to open)"), this));
  layout->addWidget(examples_, 3);
  layout->addWidget(new QLabel(tr("<b>Recent projects</b>"), this));
  layout->addWidget(recent_, 1);
  layout->addLayout(buttons);

  connect(examples_, &QListWidget::itemActivated, this,
          [this](QListWidgetItem* item) { emit exampleChosen(item->data(kPathRole).toString()); });
  connect(tours_, &QListWidget::itemActivated, this, [this](QListWidgetItem* item) {
    emit tourChosen(item->data(kPathRole).toString(), item->text());
  });
  connect(recent_, &QListWidget::itemActivated, this,
          [this](QListWidgetItem* item) { emit recentChosen(item->data(kPathRole).toString()); });
  connect(newButton, &QPushButton::clicked, this, &StartPage::newRequested);
  connect(openButton, &QPushButton::clicked, this, &StartPage::openRequested);
  refresh();
}

void StartPage::refresh() {
  examples_->clear();
  const QString dir = examplesDir();
  for (const QFileInfo& file : QDir(dir).entryInfoList({"*.json"}, QDir::Files, QDir::Name)) {
    // Each example says what it is: its name, then the spec in words (the spec's description,
    // as the experiment page and the report give it).
    QString text = file.completeBaseName();
    QString tip;
    try {
      const core::ExperimentSpec spec = core::loadExperimentSpec(file.filePath().toStdString());
      text = QString::fromStdString(spec.name) + QStringLiteral(": ") +
             QString::number(spec.variants.size()) +
             (spec.variants.size() == 1 ? tr(" variant on ") : tr(" variants on ")) +
             QString::number(spec.cluster.localNodes) + tr(" nodes");
      QStringList variants;
      for (const core::VariantConfig& v : spec.variants) variants << QString::fromStdString(v.name);
      if (spec.variants.size() > 1) text += QStringLiteral(" (") + variants.join(", ") + ")";
      for (const core::SpecFact& fact : core::describeSpec(spec))
        tip += QString::fromStdString(fact.label + ": " + fact.text) + "\n";
    } catch (const std::exception&) {
      continue;  // not a spec this build reads: not offered
    }
    auto* item = new QListWidgetItem(text, examples_);
    item->setData(kPathRole, file.filePath());
    item->setToolTip(tip.trimmed());
  }
  if (examples_->count() == 0)
    new QListWidgetItem(tr("No examples found (looked in $DTLAB_RESOURCES/specs, the installed "
                           "share/dtlab/examples and the source tree's resources/specs)."),
                        examples_);
  tours_->clear();
  for (const Tour& t : tours()) {
    auto* item = new QListWidgetItem(t.title, tours_);
    item->setData(kPathRole, QDir(dir).filePath(t.example));
    item->setToolTip(t.shows);
  }
  recent_->clear();
  for (const QString& path : QSettings().value("recentProjects").toStringList()) {
    if (!QFileInfo::exists(path)) continue;
    auto* item = new QListWidgetItem(path, recent_);
    item->setData(kPathRole, path);
  }
}

}  // namespace dtlab::ui
