#include "ui/models/node_secrets.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <qt6keychain/keychain.h>
#include <QtCore/QCoreApplication>
#include <QtCore/QDir>
#include <QtCore/QEventLoop>
#include <QtCore/QFile>
#include <QtCore/QFileInfo>
#include <QtCore/QJsonDocument>
#include <QtCore/QJsonObject>
#include <QtCore/QSettings>
#include <QtCore/QTimer>

#include <cerrno>
#include <cstring>

#include "core/common/owner_only.h"

namespace dtlab::ui {
namespace {

constexpr const char* kService = "DTLab";
constexpr const char* kChoiceKey = "node_secrets/store";  // "file" once the user chose it
constexpr int kKeyringTimeoutMs = 30000;

QString tokenKey(const QString& address) {
  return address;
}

QString tlsKey(const QString& address) {
  return "tls " + address;
}

QString encodeTls(const TlsPaths& p) {
  if (p.isEmpty()) return {};
  return QString::fromUtf8(
      QJsonDocument(QJsonObject{{"cert", p.cert}, {"key", p.key}, {"ca", p.ca}})
          .toJson(QJsonDocument::Compact));
}

TlsPaths decodeTls(const QString& text) {
  const QJsonObject o = QJsonDocument::fromJson(text.toUtf8()).object();
  return {o.value("cert").toString(), o.value("key").toString(), o.value("ca").toString()};
}

// A keyring call, run to its end here: QtKeychain's jobs answer through the event loop.
struct JobOutcome {
  QKeychain::Error error = QKeychain::NoError;
  QString errorText;
};

JobOutcome runJob(QKeychain::Job& job, bool& asking) {
  asking = true;
  struct Done {
    bool& asking;
    ~Done() { asking = false; }
  } done_asking{asking};
  job.setAutoDelete(false);
  job.setInsecureFallback(false);  // never QtKeychain's plain-text QSettings fallback
  bool done = false;
  QEventLoop loop;
  QObject::connect(&job, &QKeychain::Job::finished, &loop, [&] {
    done = true;
    loop.quit();
  });
  QTimer::singleShot(kKeyringTimeoutMs, &loop, &QEventLoop::quit);
  job.start();
  if (!done) loop.exec(QEventLoop::ExcludeUserInputEvents);
  if (!done)
    return {QKeychain::OtherError,
            QString("the keyring did not answer within %1 s").arg(kKeyringTimeoutMs / 1000)};
  return {job.error(), job.errorString()};
}

bool keyringFailed(const JobOutcome& o) {
  return o.error != QKeychain::NoError && o.error != QKeychain::EntryNotFound;
}

QString describe(const JobOutcome& o) {
  return o.errorText.isEmpty() ? QString("error %1").arg(static_cast<int>(o.error)) : o.errorText;
}

// Leaves a file readable and writable by its owner only.
void ownerOnly(const QString& path) {
  ::chmod(QFile::encodeName(path).constData(), S_IRUSR | S_IWUSR);
}

}  // namespace

NodeSecrets& NodeSecrets::instance() {
  static NodeSecrets secrets;
  return secrets;
}

void NodeSecrets::reset() {
  where_.reset();
  keyringProblem_.clear();
  cache_.clear();
  session_.clear();
  notice_.clear();
  lastFileProblem_.clear();
}

QString NodeSecrets::filePath() const {
  return QFileInfo(QSettings().fileName()).absolutePath() + "/node-secrets.json";
}

NodeSecrets::Where NodeSecrets::where() {
  if (where_) return *where_;
  // Asked again from the event loop of a keyring call in progress: no second call meanwhile.
  if (asking_) return Where::kSession;
  if (QSettings().value(kChoiceKey).toString() == "file") {
    where_ = Where::kFile;
    return *where_;
  }
  // Asking for an entry that is never written tells whether a keyring answers at all.
  QKeychain::ReadPasswordJob probe(kService);
  probe.setKey("keyring check");
  const JobOutcome o = runJob(probe, asking_);
  if (keyringFailed(o)) {
    keyringProblem_ = describe(o);
    where_ = Where::kSession;
    notice(QCoreApplication::translate(
               "NodeSecrets",
               "No keyring answers on this desktop (%1), so node tokens are kept for this "
               "session only. To keep them, start a keyring (gnome-keyring, KWallet), or keep "
               "them in a file only you can read (%2).")
               .arg(keyringProblem_, filePath()));
  } else {
    where_ = Where::kKeyring;
  }
  return *where_;
}

QString NodeSecrets::whereText() {
  switch (where()) {
    case Where::kKeyring:
      return QCoreApplication::translate("NodeSecrets", "kept in your desktop's keyring");
    case Where::kFile:
      return QCoreApplication::translate("NodeSecrets", "kept in %1, readable by you only")
          .arg(filePath());
    case Where::kSession:
      break;
  }
  return QCoreApplication::translate("NodeSecrets",
                                     "kept for this session only (no keyring answers)");
}

QString NodeSecrets::keyringProblem() {
  where();
  return keyringProblem_;
}

QString NodeSecrets::takeNotice() {
  return std::exchange(notice_, QString());
}

void NodeSecrets::notice(const QString& text) {
  notice_ = notice_.isEmpty() ? text : notice_ + "\n" + text;
}

std::optional<QHash<QString, QString>> NodeSecrets::readFile() {
  const QString path = filePath();
  QHash<QString, QString> entries;
  if (!QFileInfo::exists(path)) return entries;
  const std::string problem = core::notOwnerOnly(QFile::encodeName(path).toStdString());
  if (!problem.empty()) {
    const QString text =
        QCoreApplication::translate("NodeSecrets", "Node tokens in %1 are not used: %2")
            .arg(path, QString::fromStdString(problem));
    if (text != lastFileProblem_) notice(text);
    lastFileProblem_ = text;
    return std::nullopt;
  }
  lastFileProblem_.clear();
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return entries;
  const QJsonObject o = QJsonDocument::fromJson(file.readAll()).object();
  for (auto it = o.begin(); it != o.end(); ++it) entries.insert(it.key(), it.value().toString());
  return entries;
}

QString NodeSecrets::writeFile(const QHash<QString, QString>& entries) {
  const QString path = filePath();
  QJsonObject o;
  for (auto it = entries.begin(); it != entries.end(); ++it) o.insert(it.key(), it.value());
  const QByteArray bytes = QJsonDocument(o).toJson();
  // Written whole to a file created owner-only, then renamed over the old one: never a
  // moment when the secrets are readable by others, or half written.
  const QByteArray temp = QFile::encodeName(path + ".new");
  QFileInfo(path).dir().mkpath(".");
  ::unlink(temp.constData());
  const int fd = ::open(temp.constData(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return path + ": " + QString::fromLocal8Bit(std::strerror(errno));
  const bool written = ::write(fd, bytes.constData(), static_cast<std::size_t>(bytes.size())) ==
                       static_cast<ssize_t>(bytes.size());
  const bool closed = ::close(fd) == 0;
  if (!written || !closed || ::rename(temp.constData(), QFile::encodeName(path).constData()) != 0) {
    const QString error = QString::fromLocal8Bit(std::strerror(errno));
    ::unlink(temp.constData());
    return path + ": " + error;
  }
  return {};
}

std::optional<QString> NodeSecrets::read(const QString& key) {
  switch (where()) {
    case Where::kSession:
      if (session_.contains(key)) return session_.value(key);
      return std::nullopt;
    case Where::kFile: {
      const std::optional<QHash<QString, QString>> entries = readFile();
      if (!entries || !entries->contains(key)) return std::nullopt;
      return entries->value(key);
    }
    case Where::kKeyring:
      break;
  }
  if (cache_.contains(key)) return cache_.value(key);
  QKeychain::ReadPasswordJob job(kService);
  job.setKey(key);
  const JobOutcome o = runJob(job, asking_);
  if (keyringFailed(o)) {
    notice(QCoreApplication::translate("NodeSecrets",
                                       "Reading a node token from the keyring "
                                       "failed: %1")
               .arg(describe(o)));
    return std::nullopt;  // not cached: the next read asks again
  }
  std::optional<QString> value;
  if (o.error == QKeychain::NoError) value = job.textData();
  cache_.insert(key, value);
  return value;
}

bool NodeSecrets::write(const QString& key, const QString& value) {
  switch (where()) {
    case Where::kSession:
      if (value.isEmpty())
        session_.remove(key);
      else
        session_.insert(key, value);
      return true;
    case Where::kFile: {
      std::optional<QHash<QString, QString>> entries = readFile();
      if (!entries) return false;  // refused: said so; nothing written over it
      if (value.isEmpty())
        entries->remove(key);
      else
        entries->insert(key, value);
      const QString error = writeFile(*entries);
      if (error.isEmpty()) return true;
      notice(QCoreApplication::translate("NodeSecrets", "Node tokens could not be saved: %1")
                 .arg(error));
      return false;
    }
    case Where::kKeyring:
      break;
  }
  cache_.remove(key);
  JobOutcome o;
  if (value.isEmpty()) {
    QKeychain::DeletePasswordJob job(kService);
    job.setKey(key);
    o = runJob(job, asking_);
  } else {
    QKeychain::WritePasswordJob job(kService);
    job.setKey(key);
    job.setTextData(value);
    o = runJob(job, asking_);
  }
  if (!keyringFailed(o) || (value.isEmpty() && o.error == QKeychain::CouldNotDeleteEntry)) {
    // What the keyring now holds is known: no need to ask it back.
    cache_.insert(key, value.isEmpty() ? std::nullopt : std::optional<QString>(value));
    return true;
  }
  notice(QCoreApplication::translate("NodeSecrets", "Saving a node token in the keyring failed: %1")
             .arg(describe(o)));
  return false;
}

QString NodeSecrets::token(const QString& address) {
  if (address.isEmpty()) return {};
  return read(tokenKey(address)).value_or(QString());
}

std::optional<QString> NodeSecrets::cachedToken(const QString& address) {
  if (address.isEmpty()) return QString();
  if (!where_) return std::nullopt;  // the keyring's verdict is not in yet
  if (*where_ != Where::kKeyring) return token(address);
  const auto it = cache_.find(tokenKey(address));
  if (it == cache_.end()) return std::nullopt;
  return it->value_or(QString());
}

void NodeSecrets::setToken(const QString& address, const QString& token) {
  if (!address.isEmpty()) write(tokenKey(address), token);
}

TlsPaths NodeSecrets::tls(const QString& address) {
  if (address.isEmpty()) return {};
  const std::optional<QString> text = read(tlsKey(address));
  return text ? decodeTls(*text) : TlsPaths{};
}

void NodeSecrets::setTls(const QString& address, const TlsPaths& paths) {
  if (!address.isEmpty()) write(tlsKey(address), encodeTls(paths));
}

QString NodeSecrets::keepInFile() {
  if (where() == Where::kFile) return {};
  std::optional<QHash<QString, QString>> entries = readFile();
  if (!entries) return takeNotice();
  for (auto it = session_.begin(); it != session_.end(); ++it)
    entries->insert(it.key(), it.value());
  const QString error = writeFile(*entries);
  if (!error.isEmpty()) return error;
  QSettings().setValue(kChoiceKey, "file");
  session_.clear();
  where_ = Where::kFile;
  return {};
}

void NodeSecrets::migrateSettings() {
  QSettings settings;
  QHash<QString, QString> found;
  settings.beginGroup("node_tokens");
  for (const QString& address : settings.childKeys())
    found.insert(tokenKey(address), settings.value(address).toString());
  settings.endGroup();
  settings.beginGroup("node_tls");
  for (const QString& address : settings.childGroups()) {
    settings.beginGroup(address);
    found.insert(tlsKey(address),
                 encodeTls({settings.value("cert").toString(), settings.value("key").toString(),
                            settings.value("ca").toString()}));
    settings.endGroup();
  }
  settings.endGroup();
  if (!found.isEmpty()) {
    // They were kept before: without a keyring they stay kept, in the owner-only file.
    if (where() == Where::kSession) {
      const QString error = keepInFile();
      if (!error.isEmpty()) {
        notice(QCoreApplication::translate("NodeSecrets",
                                           "Node tokens stay in the settings file %1 for now: %2")
                   .arg(settings.fileName(), error));
        return;
      }
    }
    bool moved = true;
    for (auto it = found.begin(); it != found.end(); ++it)
      if (!it.value().isEmpty()) moved = write(it.key(), it.value()) && moved;
    // Removed from the settings file only once every one is kept elsewhere.
    if (moved) {
      settings.remove("node_tokens");
      settings.remove("node_tls");
      notice(QCoreApplication::translate(
                 "NodeSecrets",
                 "%n node secret(s) (tokens, TLS paths) moved out of the settings file, %1.",
                 nullptr, static_cast<int>(found.size()))
                 .arg(whereText()));
    }
  }
  settings.sync();
  // Whatever else is in it (window layout, recent projects) is nobody else's business either.
  if (QFileInfo::exists(settings.fileName())) ownerOnly(settings.fileName());
}

}  // namespace dtlab::ui
