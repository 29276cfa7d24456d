// Context help (ui/help/context_help.h): an editor field's tooltip is its descriptor's help with
// a line naming its entry in the documentation, F1 on the field opens the User Guide at that
// entry (before the window's own F1, which still opens the front page elsewhere), and every
// entry any field of the dataset, experiment and topology pages names is a heading of a page
// of docs/ (a renamed heading fails here). Offscreen, on the real main window.
#include <QtTest/QtTest>

#include <map>
#include <set>

#include <QtCore/QRegularExpression>
#include <QtCore/QStandardPaths>
#include <QtCore/QTemporaryDir>
#include <QtWidgets/QAbstractItemView>
#include <QtWidgets/QAbstractSpinBox>
#include <QtWidgets/QApplication>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QTableView>
#include <QtWidgets/QTextBrowser>
#include <QtWidgets/QToolTip>
#include <QtWidgets/QTreeView>

#include "core/data/dataset_kinds.h"
#include "core/nn/model_kinds.h"
#include "core/train/strategy_registry.h"
#include "ui/help/context_help.h"
#include "ui/help/user_guide.h"
#include "ui/main_window.h"
#include "ui/models/variants_model.h"
#include "ui/pages/dataset_page.h"
#include "ui/pages/experiment_page.h"
#include "ui/pages/topology_page.h"

using namespace dtlab;
using V = ui::VariantsModel;

namespace {

// A spec with a variant per registered strategy, in their order (row i: strategyNames()[i]).
nlohmann::json everyStrategy() {
  nlohmann::json variants = nlohmann::json::array();
  for (const std::string& name : core::strategyNames())
    variants.push_back({{"name", name}, {"strategy", name}});
  return {{"name", "all"}, {"cluster", {{"local_nodes", 2}}}, {"variants", variants}};
}

int rowOf(const std::string& strategy) {
  const std::vector<std::string> names = core::strategyNames();
  return static_cast<int>(std::find(names.begin(), names.end(), strategy) - names.begin());
}

const core::SettingSchema& settingOf(const std::string& strategy, const std::string& key) {
  const core::SettingSchema* s = core::findSetting(core::findStrategy(strategy)->settings, key);
  if (s == nullptr) qFatal("%s declares no %s", strategy.c_str(), key.c_str());
  return *s;
}

// The anchors of a Markdown page's headings (and paragraphs' bold openings), read from its text
// here rather than through the guide.
std::set<QString> anchorsOf(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly | QIODevice::Text)) return {};
  static const QRegularExpression kHeading(R"(^#{1,6}\s+(.+?)\s*$)");
  static const QRegularExpression kRunIn(R"(^\*\*(.+?)\*\*)");
  std::set<QString> anchors;
  bool fenced = false;
  for (const QString& line : QString::fromUtf8(file.readAll()).split('\n')) {
    if (line.startsWith("```")) fenced = !fenced;
    if (fenced) continue;
    QRegularExpressionMatch m = kHeading.match(line);
    if (!m.hasMatch()) m = kRunIn.match(line);
    if (m.hasMatch()) anchors.insert(ui::headingAnchor(m.captured(1).remove('`')));
  }
  return anchors;
}

}  // namespace

class TestContextHelp : public QObject {
  Q_OBJECT

  // Target -> the fields that name it ("dataset/noise"), from every page below.
  std::map<QString, QStringList> targets_;

  // Every editor of `page` names an entry (its own or a parent's); one that names its own has
  // a tooltip ending with the entry's line. An item view's cells: their own entries.
  void collect(QWidget* page, const QString& pageName) {
    for (QWidget* w : page->findChildren<QWidget*>()) {
      const bool editor =
          qobject_cast<QLineEdit*>(w) != nullptr || qobject_cast<QAbstractSpinBox*>(w) != nullptr ||
          qobject_cast<QComboBox*>(w) != nullptr || qobject_cast<QAbstractItemView*>(w) != nullptr;
      // A field on the page as it is now (not another kind's hidden row, nor a popup).
      if (!editor || !w->isVisibleTo(page) || w->window() != page->window()) continue;
      const QString where =
          pageName + "/" +
          (w->objectName().isEmpty() ? QString(w->metaObject()->className()) : w->objectName());
      const QString target = ui::referenceEntryAt(w);
      QVERIFY2(!target.isEmpty(), qPrintable(where + ": no reference entry"));
      if (const QString own = ui::referenceEntry(w); !own.isEmpty()) {
        targets_[own] << where;
        if (qobject_cast<QAbstractItemView*>(w) == nullptr)
          QVERIFY2(w->toolTip().endsWith("\n" + ui::referenceLine(own)),
                   qPrintable(where + ": " + w->toolTip()));
      }
      auto* view = qobject_cast<QAbstractItemView*>(w);
      if (view != nullptr && !ui::referenceEntry(view).isEmpty()) {
        QAbstractItemModel* model = view->model();
        for (int row = 0; row < model->rowCount(); ++row)
          for (int column = 0; column < model->columnCount(); ++column) {
            const QModelIndex cell = model->index(row, column);
            const QString entry = cell.data(ui::kReferenceEntryRole).toString();
            if (entry.isEmpty()) continue;
            const QString at = where + QString("[%1,%2]").arg(row).arg(column);
            targets_[entry] << at;
            if (cell.flags() & Qt::ItemIsEditable)
              QVERIFY2(cell.data(Qt::ToolTipRole).toString().endsWith(ui::referenceLine(entry)),
                       qPrintable(at + ": " + cell.data(Qt::ToolTipRole).toString()));
          }
      }
    }
  }

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  // The descriptors' words, each with its strategy's or kind's entry.
  void tooltipsAreTheDescriptorsHelpAndTheirEntry() {
    ui::ExperimentPage page;
    page.edit(-1, everyStrategy(), {}, {});
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    V* model = page.variants();
    const QModelIndex staleness = model->index(rowOf("ssp"), model->columnOf("staleness"));
    const QString tip = staleness.data(Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains(QString::fromStdString(settingOf("ssp", "staleness").help)),
             qPrintable(tip));
    QCOMPARE(staleness.data(ui::kReferenceEntryRole).toString(),
             QString("reference/strategies.md#ssp"));
    QVERIFY2(tip.endsWith("\n" + ui::referenceLine("reference/strategies.md#ssp")),
             qPrintable(tip));
    QVERIFY2(tip.endsWith(QString::fromUtf8("F1: the reference entry (Strategies \u203a ssp)")),
             qPrintable(tip));
    // A key several strategies declare: each row in its own strategy's words.
    const int loss = model->columnOf("on_node_loss");
    for (const char* strategy : {"sync_allreduce", "ssp"}) {
      const QString own = model->index(rowOf(strategy), loss).data(Qt::ToolTipRole).toString();
      QVERIFY2(own.startsWith(QString::fromStdString(settingOf(strategy, "on_node_loss").help)),
               qPrintable(own));
    }
    // The strategy cell: its descriptor's summary.
    const QString strategy =
        model->index(rowOf("ssp"), V::kStrategyColumn).data(Qt::ToolTipRole).toString();
    QVERIFY2(strategy.startsWith(QString::fromStdString(core::findStrategy("ssp")->summary)),
             qPrintable(strategy));

    // A model kind's settings, and every dataset kind's parameters.
    auto* modelKind = static_cast<QComboBox*>(page.field("model.kind"));
    for (const core::ModelKindDescriptor* kind : core::modelKinds()) {
      modelKind->setCurrentText(QString::fromStdString(kind->name));
      for (const core::SettingSchema& s : kind->parameters) {
        auto* editor = page.findChild<QWidget*>(QString::fromStdString(s.key));
        QVERIFY(editor != nullptr);
        QVERIFY2(editor->toolTip().startsWith(QString::fromStdString(s.help)) &&
                     editor->toolTip().endsWith(ui::referenceLine(ui::modelKindEntry(kind->name))),
                 qPrintable(editor->toolTip()));
      }
    }
    ui::DatasetPage dataset;
    auto* datasetKind = dataset.findChild<QComboBox*>("kind");
    for (const core::DatasetKindDescriptor* kind : core::datasetKinds()) {
      datasetKind->setCurrentText(QString::fromStdString(kind->name));
      const QString line = ui::referenceLine(ui::datasetKindEntry(kind->name));
      QVERIFY(datasetKind->toolTip().endsWith(line));
      for (const core::SettingSchema& s : kind->parameters) {
        auto* editor = dataset.findChild<QWidget*>(QString::fromStdString(s.key));
        QVERIFY(editor != nullptr);
        QVERIFY2(editor->toolTip().startsWith(QString::fromStdString(s.help)) &&
                     editor->toolTip().endsWith(line),
                 qPrintable(editor->toolTip()));
      }
    }
  }

  // F1 on a variant's cell (or in its editor) opens the window's guide at the row's strategy;
  // F1 elsewhere is still Help > User Guide's front page.
  void f1OnAVariantCellOpensItsStrategysEntry() {
    QTemporaryDir dir;
    ui::MainWindow window;
    window.setQuietErrors(true);
    window.resize(1280, 800);
    window.show();
    QSignalSpy loaded(&window, &ui::MainWindow::projectLoaded);
    QVERIFY(window.newProject(dir.filePath("help.dtlab")));
    QVERIFY(loaded.count() > 0 || loaded.wait(20000));
    window.newExperiment();
    ui::ExperimentPage* page = window.experimentPage();
    page->edit(-1, everyStrategy(), {}, {});
    window.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&window));

    auto* view = page->findChild<QTableView*>();
    QVERIFY(view != nullptr);
    const QModelIndex cell =
        page->variants()->index(rowOf("ssp"), page->variants()->columnOf("staleness"));
    view->setCurrentIndex(cell);
    view->setFocus();
    QTRY_VERIFY(view->hasFocus());
    QTest::keyClick(view, Qt::Key_F1);
    auto guides = window.findChildren<ui::UserGuide*>();
    QCOMPARE(guides.size(), qsizetype{1});
    ui::UserGuide* guide = guides.front();
    QVERIFY(guide->isVisible());
    QCOMPARE(guide->browser()->source().fileName(), QString("strategies.md"));
    QCOMPARE(guide->browser()->source().fragment(), QString("ssp"));
    QTRY_COMPARE(guide->headingInView(), QString("ssp"));
    // Help > User Guide shows the same window (the one F1 opened is the window's own).
    if (const QString shot = qEnvironmentVariable("DTLAB_SCREENSHOT_DIR"); !shot.isEmpty())
      guide->grab().save(shot + "/context_help_guide.png");

    // From the cell's editor too, at its row's strategy (local_sgd's period).
    const QModelIndex period =
        page->variants()->index(rowOf("local_sgd"), page->variants()->columnOf("period"));
    window.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    view->setCurrentIndex(period);
    view->edit(period);
    QWidget* editor = QApplication::focusWidget();
    QVERIFY(editor != nullptr && view->isAncestorOf(editor));
    QTest::keyClick(editor, Qt::Key_F1);
    QCOMPARE(guide->browser()->source().fragment(), QString("local_sgd"));
    QTRY_COMPARE(guide->headingInView(), QString("local_sgd"));
    QCOMPARE(window.findChildren<ui::UserGuide*>().size(), qsizetype{1});

    // A field of the form: its own entry, in the guide's pages.
    window.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    QWidget* checkpoints = page->field("training.checkpoint_every");
    checkpoints->setFocus();
    QTRY_VERIFY(checkpoints->hasFocus());
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_F1);
    QCOMPARE(guide->browser()->source().fileName(), QString("distributed-runs.md"));
    QTRY_COMPARE(guide->headingInView(), QString("checkpoints-and-resume"));

    // Elsewhere (the explorer), F1 is the window's Help > User Guide: the front page.
    window.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    window.explorerView()->setFocus();
    QTRY_VERIFY(window.explorerView()->hasFocus());
    QTest::keyClick(window.explorerView(), Qt::Key_F1);
    QCOMPARE(guide->browser()->source().fileName(), QString("README.md"));
    QCOMPARE(window.showUserGuide(), guide);

    if (const QString shot = qEnvironmentVariable("DTLAB_SCREENSHOT_DIR"); !shot.isEmpty()) {
      guide->hide();
      const QRect rect = view->visualRect(cell);
      QToolTip::showText(view->viewport()->mapToGlobal(rect.center()),
                         cell.data(Qt::ToolTipRole).toString(), view->viewport());
      QTest::qWait(200);
      for (QWidget* w : QApplication::topLevelWidgets())
        if (w->inherits("QTipLabel") && w->isVisible())
          w->grab().save(shot + "/context_help_tip.png");
      window.grab().save(shot + "/context_help_page.png");
    }
  }

  // A page on its own (no main window, no Help menu): F1 opens a guide of its own, scrolled
  // once it is shown.
  void f1OnAPageWithoutTheWindow() {
    ui::TopologyPage page;
    page.edit(-1, "shared", {{"nodes", {{{"address", "127.0.0.1:1"}}}}});
    page.show();
    page.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&page));
    auto* wait = page.findChild<QSpinBox*>("wait_seconds");
    QVERIFY(wait != nullptr && wait->isEnabled());
    QVERIFY2(wait->toolTip().endsWith(QString::fromUtf8(
                 "F1: the User Guide (Distributed runs \u203a Nodes shared by several people)")),
             qPrintable(wait->toolTip()));
    wait->setFocus();
    QTRY_VERIFY(wait->hasFocus());
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_F1);
    auto* guide = page.findChild<ui::UserGuide*>();
    QVERIFY(guide != nullptr && guide->isVisible());
    QCOMPARE(guide->browser()->source().fragment(), QString("nodes-shared-by-several-people"));
    QTRY_COMPARE(guide->headingInView(), QString("nodes-shared-by-several-people"));
  }

  // Every entry a field of the three pages names (each kind, each strategy, a local and a
  // remote topology) is a page of docs/ with that heading, and the guide shows it there.
  void everyFieldsEntryIsAHeadingOfTheDocumentation() {
    targets_.clear();
    ui::DatasetPage dataset;
    auto* datasetKind = dataset.findChild<QComboBox*>("kind");
    for (const core::DatasetKindDescriptor* kind : core::datasetKinds()) {
      datasetKind->setCurrentText(QString::fromStdString(kind->name));
      collect(&dataset, "dataset(" + QString::fromStdString(kind->name) + ")");
    }
    ui::ExperimentPage experiment;
    experiment.edit(-1, everyStrategy(), {}, {});
    auto* modelKind = static_cast<QComboBox*>(experiment.field("model.kind"));
    for (const core::ModelKindDescriptor* kind : core::modelKinds()) {
      modelKind->setCurrentText(QString::fromStdString(kind->name));
      collect(&experiment, "experiment(" + QString::fromStdString(kind->name) + ")");
    }
    ui::TopologyPage topology;
    topology.edit(-1, "local", {{"local_nodes", 2}});
    collect(&topology, "topology(local)");
    topology.edit(-1, "remote", {{"nodes", {{{"address", "127.0.0.1:1"}}}}});
    collect(&topology, "topology(remote)");

    // A node's cells name the spec's node fields.
    QVERIFY(targets_.count(ui::guideEntry(ui::kSpecPage, "cluster.nodes[i]")));
    // Every strategy's entry is named by some cell.
    for (const std::string& name : core::strategyNames())
      QVERIFY2(targets_.count(ui::strategyEntry(name)), name.c_str());
    const QDir docs(DTLAB_SOURCE_DIR "/docs");
    QCOMPARE(ui::documentationDir(), docs.canonicalPath());
    ui::UserGuide guide;
    for (const auto& [target, fields] : targets_) {
      const QString page = target.section('#', 0, 0);
      const QString anchor = target.section('#', 1);
      const QString why =
          target + " (" + fields.front() + ", " + QString::number(fields.size()) + " fields)";
      QVERIFY2(QFileInfo(docs.filePath(page)).isFile(), qPrintable(why + ": no such page"));
      if (!anchor.isEmpty())
        QVERIFY2(anchorsOf(docs.filePath(page)).count(anchor),
                 qPrintable(why + ": no such heading"));
      QVERIFY2(guide.showEntry(target), qPrintable(why + ": the guide does not find it"));
      qInfo("%s: %lld fields", qPrintable(target), static_cast<long long>(fields.size()));
    }
    // A heading that is not there is refused (the check above can fail).
    QVERIFY(!guide.showEntry("reference/strategies.md#no-such-strategy"));
    QVERIFY(!anchorsOf(docs.filePath("reference/strategies.md")).count("no-such-strategy"));
  }
};

QTEST_MAIN(TestContextHelp)
#include "test_context_help.moc"
