#pragma once
// A real Secret Service for a test: a D-Bus session bus of the test's own and a GNOME keyring
// daemon on it, with a login keyring unlocked by a password the test chose, kept under a home
// directory the test owns. The process's DBUS_SESSION_BUS_ADDRESS points at the bus while the
// session lives (QtKeychain, through libsecret, finds the keyring there).

#include <QtCore/QDirIterator>
#include <QtCore/QFile>
#include <QtCore/QProcess>
#include <QtCore/QStandardPaths>
#include <QtCore/QString>
#include <QtCore/QStringList>
#include <QtCore/QThread>

#include <csignal>

namespace dtlab::ui_test {

class KeyringSession {
 public:
  // `home`: the keyring's files go under home/.local/share/keyrings. Empty error(): running.
  explicit KeyringSession(const QString& home) {
    const QString dbus = QStandardPaths::findExecutable("dbus-daemon");
    const QString keyring = QStandardPaths::findExecutable("gnome-keyring-daemon");
    if (dbus.isEmpty() || keyring.isEmpty()) {
      error_ =
          "no dbus-daemon or gnome-keyring-daemon on PATH (installer/dev.sh deps installs "
          "dbus and gnome-keyring)";
      return;
    }
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("HOME", home);
    env.insert("XDG_DATA_HOME", home + "/.local/share");
    env.insert("XDG_RUNTIME_DIR", home);
    bus_.setProcessEnvironment(env);
    bus_.start(dbus, {"--session", "--nofork", "--nopidfile", "--print-address=1"});
    if (!bus_.waitForStarted(10000) || !bus_.waitForReadyRead(10000)) {
      error_ = "dbus-daemon did not start: " + bus_.errorString();
      return;
    }
    address_ = QString::fromUtf8(bus_.readLine()).trimmed();
    env.insert("DBUS_SESSION_BUS_ADDRESS", address_);
    daemon_.setProcessEnvironment(env);
    daemon_.setProcessChannelMode(QProcess::MergedChannels);
    daemon_.start(keyring, {"--foreground", "--unlock", "--components=secrets"});
    if (!daemon_.waitForStarted(10000)) {
      error_ = "gnome-keyring-daemon did not start: " + daemon_.errorString();
      return;
    }
    daemon_.write("keyring-test-password");
    daemon_.waitForBytesWritten(5000);  // no event loop runs here to send it later
    daemon_.closeWriteChannel();
    // It takes the bus name once it has unlocked the login keyring.
    for (int i = 0; i < 100; ++i) {
      QProcess ask;
      ask.setProcessEnvironment(env);
      ask.start("dbus-send", {"--session", "--print-reply", "--dest=org.freedesktop.DBus",
                              "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner",
                              "string:org.freedesktop.secrets"});
      ask.waitForFinished(5000);
      if (ask.readAllStandardOutput().contains("boolean true")) {
        qputenv("DBUS_SESSION_BUS_ADDRESS", address_.toUtf8());
        return;
      }
      QThread::msleep(100);
    }
    error_ = "gnome-keyring-daemon never took org.freedesktop.secrets: " +
             QString::fromUtf8(daemon_.readAll());
  }
  ~KeyringSession() {
    for (QProcess* p : {&daemon_, &bus_}) {
      if (p->state() == QProcess::NotRunning) continue;
      p->terminate();
      if (!p->waitForFinished(5000)) p->kill();
      p->waitForFinished(5000);
    }
    if (!address_.isEmpty()) qunsetenv("DBUS_SESSION_BUS_ADDRESS");
  }
  KeyringSession(const KeyringSession&) = delete;
  KeyringSession& operator=(const KeyringSession&) = delete;

  const QString& error() const { return error_; }

 private:
  QProcess bus_;
  QProcess daemon_;
  QString address_;
  QString error_;
};

// Every file under `dir` whose bytes contain `secret` (hidden ones and subdirectories too).
inline QStringList filesHolding(const QString& dir, const QByteArray& secret) {
  QStringList found;
  QDirIterator it(dir, QDir::Files | QDir::Hidden | QDir::System, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    const QString path = it.next();
    QFile file(path);
    if (file.open(QIODevice::ReadOnly) && file.readAll().contains(secret)) found << path;
  }
  return found;
}

}  // namespace dtlab::ui_test
