// Where the workbench keeps node tokens (ui/models/node_secrets.h): a real GNOME keyring on a
// D-Bus session of the test's own; without one, the session or an owner-only file that is
// refused once others can read it; tokens an earlier version left in the settings file moved
// out of it. After each, no file the test can see holds a token in plain text.
#include <QtTest/QtTest>

#include <sys/stat.h>

#include <QtCore/QFile>
#include <QtCore/QSettings>
#include <QtCore/QTemporaryDir>
#include <QtWidgets/QMessageBox>
#include <QtWidgets/QPushButton>

#include "ui/models/node_secrets.h"
#include "ui/models/topology_model.h"
#include "ui/pages/topology_page.h"

#include "tests/ui/keyring_session.h"

using namespace dtlab;
using ui::NodeSecrets;

namespace {

int modeOf(const QString& path) {
  struct stat info {};
  if (::stat(QFile::encodeName(path).constData(), &info) != 0) return -1;
  return static_cast<int>(info.st_mode & 07777);
}

}  // namespace

class TestNodeSecrets : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY(settingsDir_.isValid());
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, settingsDir_.path());
    QCoreApplication::setOrganizationName("DTLabTest");
    QCoreApplication::setApplicationName("test_node_secrets");
  }

  void init() {
    // Every case starts as a first start would: no choice made, no file, nothing cached.
    QSettings().clear();
    QSettings().sync();
    QFile::remove(NodeSecrets::instance().filePath());
    NodeSecrets::instance().reset();
  }

  void withoutAKeyringTokensStayForTheSessionOrGoToAnOwnerOnlyFile() {
    // No session bus: no keyring answers.
    qunsetenv("DBUS_SESSION_BUS_ADDRESS");
    qunsetenv("DISPLAY");
    NodeSecrets& secrets = NodeSecrets::instance();
    QCOMPARE(secrets.where(), NodeSecrets::Where::kSession);
    QVERIFY(!secrets.keyringProblem().isEmpty());
    QVERIFY2(secrets.takeNotice().contains("this session only"), "told once");
    QVERIFY(secrets.takeNotice().isEmpty());

    ui::node_tokens::setToken("h:1", "tok-session-A");
    QCOMPARE(ui::node_tokens::token("h:1"), QString("tok-session-A"));
    QVERIFY(!QFile::exists(secrets.filePath()));
    QSettings().sync();
    QVERIFY(ui_test::filesHolding(settingsDir_.path(), "tok-session-A").isEmpty());

    // The user asks for the file: created owner-only, with the session's token in it.
    QCOMPARE(secrets.keepInFile(), QString());
    QCOMPARE(secrets.where(), NodeSecrets::Where::kFile);
    QCOMPARE(modeOf(secrets.filePath()), 0600);
    secrets.reset();  // a later session remembers the choice
    QCOMPARE(secrets.where(), NodeSecrets::Where::kFile);
    QCOMPARE(ui::node_tokens::token("h:1"), QString("tok-session-A"));
    ui::node_tls::setPaths("h:1", {"/c.pem", "/k.pem", "/ca.pem"});
    QCOMPARE(ui::node_tls::paths("h:1").key, QString("/k.pem"));

    // Readable by others: refused, naming the file, and not written over.
    QVERIFY(::chmod(QFile::encodeName(secrets.filePath()).constData(), 0644) == 0);
    QCOMPARE(ui::node_tokens::token("h:1"), QString());
    const QString notice = secrets.takeNotice();
    QVERIFY2(notice.contains(secrets.filePath()) && notice.contains("other users may read it") &&
                 notice.contains("chmod 600"),
             qPrintable(notice));
    QFile file(secrets.filePath());
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray before = file.readAll();
    file.close();
    ui::node_tokens::setToken("h:2", "tok-other");
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), before);
    file.close();
    QVERIFY(::chmod(QFile::encodeName(secrets.filePath()).constData(), 0600) == 0);
    QCOMPARE(ui::node_tokens::token("h:1"), QString("tok-session-A"));
    QSettings().sync();
    QCOMPARE(ui_test::filesHolding(settingsDir_.path(), "tok-session-A"),
             QStringList{secrets.filePath()});
  }

  // Typed into the topology editor without a keyring: a dialog says where the token went and
  // offers the owner-only file; taking the offer keeps it there.
  void theEditorSaysWhereTokensGoAndOffersTheFile() {
    qunsetenv("DBUS_SESSION_BUS_ADDRESS");
    ui::TopologyPage page;
    page.resize(900, 500);
    page.show();
    page.edit(-1, "lab", {{"nodes", {{{"address", "gpu-box:7070"}}}}});
    ui::TopologyModel* model = page.model();
    QVERIFY(model->setData(model->index(0, ui::TopologyModel::kTokenColumn), "tok-typed-E"));
    QMessageBox* box = nullptr;
    QTRY_VERIFY((box = page.findChild<QMessageBox*>("secretsNotice")) != nullptr);
    QVERIFY2(box->text().contains("this session only"), qPrintable(box->text()));
    if (const QString shot = qEnvironmentVariable("DTLAB_SCREENSHOT_DIR"); !shot.isEmpty())
      box->grab().save(shot + "/secrets_notice.png");
    auto* keep = box->findChild<QPushButton*>("keepInFile");
    QVERIFY(keep != nullptr);
    keep->click();
    QCOMPARE(NodeSecrets::instance().where(), NodeSecrets::Where::kFile);
    QCOMPARE(modeOf(NodeSecrets::instance().filePath()), 0600);
    NodeSecrets::instance().reset();
    QCOMPARE(ui::node_tokens::token("gpu-box:7070"), QString("tok-typed-E"));
    // Told once: the next token goes where the first did, without a word.
    QVERIFY(model->setData(model->index(0, ui::TopologyModel::kTokenColumn), "tok-typed-F"));
    QTest::qWait(50);
    QVERIFY(page.findChildren<QMessageBox*>("secretsNotice").size() <= 1);
    QCOMPARE(ui::node_tokens::token("gpu-box:7070"), QString("tok-typed-F"));
  }

  void tokensInAnOldSettingsFileAreMovedOutOfIt() {
    qunsetenv("DBUS_SESSION_BUS_ADDRESS");
    const QString settingsFile = writeOldSettings("h:3", "tok-old-B");
    QVERIFY(::chmod(QFile::encodeName(settingsFile).constData(), 0644) == 0);
    NodeSecrets& secrets = NodeSecrets::instance();
    secrets.migrateSettings();
    // Kept before, so kept now: no keyring here, so in the owner-only file.
    QCOMPARE(secrets.where(), NodeSecrets::Where::kFile);
    QCOMPARE(ui::node_tokens::token("h:3"), QString("tok-old-B"));
    QCOMPARE(ui::node_tls::paths("h:3").cert, QString("/old/cert.pem"));
    QVERIFY2(secrets.takeNotice().contains("moved out of the settings file"), "said so");
    QSettings settings;
    QVERIFY(settings.childGroups().indexOf("node_tokens") < 0);
    QVERIFY(settings.childGroups().indexOf("node_tls") < 0);
    QCOMPARE(modeOf(settingsFile), 0600);
    QCOMPARE(ui_test::filesHolding(settingsDir_.path(), "tok-old-B"),
             QStringList{secrets.filePath()});
  }

  void aRealKeyringKeepsTokensOutOfEveryFile() {
    QTemporaryDir home;
    QVERIFY(home.isValid());
    ui_test::KeyringSession keyring(home.path());
    if (!keyring.error().isEmpty()) QSKIP(qPrintable(keyring.error()));
    NodeSecrets& secrets = NodeSecrets::instance();
    QCOMPARE(secrets.where(), NodeSecrets::Where::kKeyring);
    QCOMPARE(secrets.keyringProblem(), QString());

    // Typed into the topology editor's token cell.
    ui::TopologyModel model;
    model.addRemoteNode("10.0.0.7:50051");
    QVERIFY(model.setData(model.index(0, ui::TopologyModel::kTokenColumn), "tok-keyring-C"));
    QVERIFY(secrets.takeNotice().isEmpty());
    // An earlier version's settings move into the keyring.
    writeOldSettings("10.0.0.8:50051", "tok-old-D");
    secrets.migrateSettings();

    secrets.reset();  // as a restarted workbench: nothing cached, asked of the keyring again
    QCOMPARE(ui::node_tokens::token("10.0.0.7:50051"), QString("tok-keyring-C"));
    QCOMPARE(ui::node_tokens::token("10.0.0.8:50051"), QString("tok-old-D"));
    QCOMPARE(ui::node_tls::paths("10.0.0.8:50051").ca, QString("/old/ca.pem"));
    QVERIFY(!QFile::exists(secrets.filePath()));
    QSettings().sync();
    for (const char* token : {"tok-keyring-C", "tok-old-D"}) {
      QVERIFY2(ui_test::filesHolding(home.path(), token).isEmpty(), token);
      QVERIFY2(ui_test::filesHolding(settingsDir_.path(), token).isEmpty(), token);
    }
    // Forgotten when emptied.
    ui::node_tokens::setToken("10.0.0.7:50051", "");
    secrets.reset();
    QCOMPARE(ui::node_tokens::token("10.0.0.7:50051"), QString());
  }

 private:
  // The settings file as DTLab before the keyring wrote it; returns its path.
  static QString writeOldSettings(const QString& address, const QString& token) {
    QSettings settings;
    settings.setValue("node_tokens/" + address, token);
    settings.setValue("node_tls/" + address + "/cert", "/old/cert.pem");
    settings.setValue("node_tls/" + address + "/key", "/old/key.pem");
    settings.setValue("node_tls/" + address + "/ca", "/old/ca.pem");
    settings.sync();
    return settings.fileName();
  }

  QTemporaryDir settingsDir_;
};

QTEST_MAIN(TestNodeSecrets)
#include "test_node_secrets.moc"
