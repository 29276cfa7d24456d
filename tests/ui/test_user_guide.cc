// Help > User Guide: the repository's docs/ (what the packages install) read in the window:
// the index, a page reached by its link, its pictures, a page that is not there, the
// documentation found through $DTLAB_DOCS, and the main window's Help menu. Offscreen.
#include <QtTest/QtTest>

#include <QtCore/QTemporaryDir>
#include <QtGui/QImage>
#include <QtWidgets/QMenuBar>
#include <QtWidgets/QTextBrowser>

#include "ui/help/user_guide.h"
#include "ui/main_window.h"

using namespace dtlab;

class TestUserGuide : public QObject {
  Q_OBJECT
 private slots:
  void readsTheRepositorysDocumentation() {
    QCOMPARE(ui::documentationDir(), QDir(DTLAB_SOURCE_DIR "/docs").canonicalPath());
    ui::UserGuide guide;
    QVERIFY(guide.showPage("README.md"));
    QVERIFY2(guide.browser()->toPlainText().startsWith("DTLab documentation"),
             qPrintable(guide.browser()->toPlainText().left(200)));
    // A link between pages is followed in the window, and back returns.
    guide.browser()->setSource(QUrl("user-guide.md"));
    QVERIFY2(guide.browser()->toPlainText().contains("The desktop workbench"),
             qPrintable(guide.browser()->toPlainText().left(200)));
    QVERIFY(guide.browser()->isBackwardAvailable());
    guide.browser()->backward();
    QVERIFY(guide.browser()->toPlainText().startsWith("DTLab documentation"));
    // A click on a link between pages follows it in the window.
    emit guide.browser()->anchorClicked(QUrl("project-files.md"));
    QVERIFY2(guide.browser()->toPlainText().startsWith("Project files"),
             qPrintable(guide.browser()->toPlainText().left(200)));
    guide.browser()->backward();
    // The guide's pictures come from the documentation's images/.
    guide.browser()->setSource(QUrl("user-guide.md"));
    const QVariant picture =
        guide.browser()->loadResource(QTextDocument::ImageResource, QUrl("images/explorer.png"));
    QImage image;
    QVERIFY(image.loadFromData(picture.toByteArray()));
    QVERIFY(image.width() > 100);
  }

  void aMissingPageSaysWhereItLooked() {
    ui::UserGuide guide;
    QVERIFY(!guide.showPage("no-such-page.md"));
    QVERIFY(guide.browser()->toPlainText().contains("No documentation here"));
    QVERIFY(guide.browser()->toPlainText().contains("no-such-page.md"));
  }

  void theEnvironmentNamesAnotherDocumentation() {
    QTemporaryDir dir;
    QFile index(dir.filePath("README.md"));
    QVERIFY(index.open(QIODevice::WriteOnly));
    index.write("# Site notes\n\nOur cluster's own pages.\n");
    index.close();
    qputenv("DTLAB_DOCS", dir.path().toUtf8());
    const QString found = ui::documentationDir();
    qunsetenv("DTLAB_DOCS");
    QCOMPARE(found, QDir(dir.path()).canonicalPath());
  }

  void theHelpMenuOpensIt() {
    ui::MainWindow window;
    QAction* guide = nullptr;
    for (QAction* menu : window.menuBar()->actions())
      if (menu->menu() != nullptr)
        for (QAction* a : menu->menu()->actions())
          if (a->text() == "&User Guide") guide = a;
    QVERIFY(guide != nullptr);
    QCOMPARE(guide->shortcut(), QKeySequence(QKeySequence::HelpContents));
    guide->trigger();
    ui::UserGuide* shown = window.showUserGuide("distributed-runs.md");
    QVERIFY(shown->isVisible());
    QVERIFY(shown->browser()->toPlainText().startsWith("Distributed runs"));
  }
};

QTEST_MAIN(TestUserGuide)
#include "test_user_guide.moc"
