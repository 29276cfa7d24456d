// What `cmake --install` (and so the .deb packages, installer/packaging.cmake) puts where a
// desktop and a service manager look: the workbench's menu entry, AppStream metadata, icons and
// the *.dtlab MIME type, checked by the freedesktop tools; the node service's unit and
// settings; the example specs and the benchmarks' reference scripts, found by the installed
// dtlab-cli; the three programs; the CUDA plugin where the build makes one.
#include <QtTest/QtTest>

#include <QtCore/QDir>
#include <QtCore/QFile>
#include <QtCore/QFileInfo>
#include <QtCore/QProcess>
#include <QtCore/QStandardPaths>
#include <QtCore/QTemporaryDir>
#include <QtCore/QXmlStreamReader>

#include "core/common/config.h"

namespace {

// Runs `program args` (with DESTDIR=`destdir` when given); its exit code and what it printed
// (both streams).
std::pair<int, QString> runTool(const QString& program, const QStringList& args,
                                const QString& destdir = {}) {
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  if (!destdir.isEmpty()) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("DESTDIR", destdir);
    p.setProcessEnvironment(env);
  }
  p.start(program, args);
  if (!p.waitForFinished(120000)) return {-1, "timed out"};
  return {p.exitCode(), QString::fromUtf8(p.readAll())};
}

}  // namespace

class TestInstallFiles : public QObject {
  Q_OBJECT
  QTemporaryDir root_;

 private slots:
  void initTestCase() {
    QStringList components = {"gui", "node", "cli"};
    if (DTLAB_HAVE_CUDA) components << "cuda";
    for (const QString& component : components) {
      // As the packages lay it out: under /usr, the settings in /etc (DESTDIR keeps both in
      // the temporary root, never in this machine's /etc).
      const auto [code, said] = runTool(
          "cmake", {"--install", DTLAB_BINARY_DIR, "--prefix", "/usr", "--component", component},
          root_.path());
      QVERIFY2(code == 0, qPrintable(said));
    }
  }

  void everyFileIsWhereItBelongs_data() {
    QTest::addColumn<QString>("path");
    for (const char* path :
         {"usr/bin/dtlab", "usr/bin/dtlab-node", "usr/bin/dtlab-cli",
          "usr/share/applications/org.dtlab.DTLab.desktop",
          "usr/share/metainfo/org.dtlab.DTLab.metainfo.xml", "usr/share/mime/packages/dtlab.xml",
          "usr/share/icons/hicolor/scalable/apps/dtlab.svg",
          "usr/share/icons/hicolor/48x48/apps/dtlab.png",
          "usr/share/icons/hicolor/256x256/apps/dtlab.png",
          "usr/lib/systemd/system/dtlab-node.service", "etc/dtlab/node.conf",
          "usr/share/dtlab/examples/default.json", "usr/share/dtlab/examples/hetero_2node.json",
          "usr/share/dtlab/bench/torch_step.py", "usr/share/dtlab/bench/torch_ddp.py",
          "usr/share/dtlab/bench/blas_probe.py"})
      QTest::newRow(path) << QString(path);
    if (DTLAB_HAVE_CUDA) QTest::newRow("cuda plugin") << QString("usr/lib/dtlab/libdtlab_cuda.so");
  }
  void everyFileIsWhereItBelongs() {
    QFETCH(QString, path);
    QVERIFY2(QFileInfo(root_.filePath(path)).isFile(), qPrintable(path));
  }

  void theDesktopEntryValidates() {
    const QString tool = QStandardPaths::findExecutable("desktop-file-validate");
    if (tool.isEmpty()) QSKIP("desktop-file-validate is not installed (desktop-file-utils)");
    const auto [code, said] =
        runTool(tool, {root_.filePath("usr/share/applications/org.dtlab.DTLab.desktop")});
    QVERIFY2(code == 0 && said.trimmed().isEmpty(), qPrintable(said));
  }

  void theAppStreamMetadataValidates() {
    const QString tool = QStandardPaths::findExecutable("appstreamcli");
    if (tool.isEmpty()) QSKIP("appstreamcli is not installed (appstream)");
    const auto [code, said] =
        runTool(tool, {"validate", "--no-net",
                       root_.filePath("usr/share/metainfo/org.dtlab.DTLab.metainfo.xml")});
    QVERIFY2(code == 0, qPrintable(said));
  }

  // *.dtlab is application/x-dtlab-project, the type the desktop entry opens.
  void projectsHaveTheirMimeType() {
    QFile xml(root_.filePath("usr/share/mime/packages/dtlab.xml"));
    QVERIFY(xml.open(QIODevice::ReadOnly));
    QXmlStreamReader reader(&xml);
    QString type, glob;
    while (!reader.atEnd()) {
      reader.readNext();
      if (reader.isStartElement() && reader.name() == u"mime-type")
        type = reader.attributes().value("type").toString();
      if (reader.isStartElement() && reader.name() == u"glob")
        glob = reader.attributes().value("pattern").toString();
    }
    QVERIFY2(!reader.hasError(), qPrintable(reader.errorString()));
    QCOMPARE(type, QString("application/x-dtlab-project"));
    QCOMPARE(glob, QString("*.dtlab"));
    QFile desktop(root_.filePath("usr/share/applications/org.dtlab.DTLab.desktop"));
    QVERIFY(desktop.open(QIODevice::ReadOnly));
    const QString entry = QString::fromUtf8(desktop.readAll());
    QVERIFY(entry.contains("MimeType=application/x-dtlab-project;"));
    QVERIFY(entry.contains("Exec=dtlab %f"));
    QVERIFY(entry.contains("Icon=dtlab"));
  }

  // The installed dtlab-cli reads its installed copies (../share/dtlab beside its directory),
  // not the source tree it was built from: without the installed spec, `bench strategies`
  // names the installed path it looked at.
  void theInstalledCliUsesItsInstalledFiles() {
    const QString spec = root_.filePath("usr/share/dtlab/examples/hetero_3node.json");
    QVERIFY(QFile::exists(spec));
    QVERIFY(QFile::rename(spec, spec + ".away"));
    const auto [code, said] =
        runTool(root_.filePath("usr/bin/dtlab-cli"),
                {"bench", "strategies", "--only", "hetero_3node", "--reps", "1", "--project",
                 root_.filePath("strategies.dtlab")});
    QVERIFY(QFile::rename(spec + ".away", spec));
    QVERIFY2(code != 0 && said.contains(spec), qPrintable(said));
  }

  // The installed programs agree on their version (one place: the project's VERSION).
  void theProgramsAgreeOnTheirVersion() {
    QStringList versions;
    for (const char* program : {"dtlab-cli", "dtlab-node"}) {
      const auto [code, said] =
          runTool(root_.filePath(QString("usr/bin/") + program), {"--version"});
      QVERIFY2(code == 0, qPrintable(said));
      versions << said.section('\n', 0, 0).section(' ', -1);
    }
    QProcess gui;
    gui.setProcessEnvironment([] {
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.insert("QT_QPA_PLATFORM", "offscreen");
      return env;
    }());
    gui.start(root_.filePath("usr/bin/dtlab"), {"--version"});
    QVERIFY(gui.waitForFinished(60000));
    versions << QString::fromUtf8(gui.readAllStandardOutput()).trimmed().section(' ', -1);
    QCOMPARE(versions.size(), 3);
    QVERIFY2(versions[0] == versions[1] && versions[1] == versions[2],
             qPrintable(versions.join(", ")));
    QVERIFY2(!versions[0].isEmpty(), qPrintable(versions.join(", ")));
  }
};

QTEST_GUILESS_MAIN(TestInstallFiles)
#include "test_install_files.moc"
