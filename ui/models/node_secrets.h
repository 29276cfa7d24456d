#pragma once

#include <QtCore/QHash>
#include <QtCore/QString>

#include <optional>

#include "ui/controller/experiment_controller.h"

namespace dtlab::ui {

// Where the workbench keeps what lets it start jobs on remote daemons: each node's token and
// the TLS client certificate, key and CA paths it uses for that node. Never in a spec, a
// project or the settings file (projects are shared with colleagues; the settings file is
// plain text). In the desktop's keyring through QtKeychain (the Secret Service, KWallet or the
// macOS Keychain): service "DTLab", key the node's address, "tls " + address for its TLS
// paths. Where no keyring answers (no Secret Service on the session bus: a bare X11 session, a
// headless machine), for this session only, or, once the user asks (keepInFile), in an
// owner-only file of its own beside the settings (node-secrets.json, mode 0600), refused on
// every read while others can read it: the rule `--token-file` follows.
//
// Keyring calls are made synchronously (a local event loop, at most 30 s each) and their
// answers cached, so a table that paints a token column does not ask the keyring per cell.
// Used from the GUI thread only.
class NodeSecrets {
 public:
  enum class Where { kKeyring, kSession, kFile };

  static NodeSecrets& instance();

  QString token(const QString& address);
  // The token when it is known without asking the keyring (which runs an event loop: never
  // from a paint); nullopt when only the keyring can say.
  std::optional<QString> cachedToken(const QString& address);
  void setToken(const QString& address, const QString& token);  // empty: forget it
  TlsPaths tls(const QString& address);
  void setTls(const QString& address, const TlsPaths& paths);  // empty: forget them

  // Where secrets go now (the first call asks the keyring whether it answers).
  Where where();
  // In words, for the token column's tooltip and the notices.
  QString whereText();
  // Why the keyring is not used: empty while it is.
  QString keyringProblem();
  // Something the user should be told once (no keyring, a file refused, secrets moved out of
  // the settings file); empty when there is nothing new. Asks nothing of the keyring.
  QString takeNotice();
  // From now on, and in later sessions (the choice is remembered in the settings), keep
  // secrets in the owner-only file; what this session kept goes there. Returns an error, or
  // empty.
  QString keepInFile();
  QString filePath() const;
  // Moves the tokens and TLS paths that earlier versions kept in the settings file (groups
  // node_tokens and node_tls) here (to the owner-only file when no keyring answers: they were
  // kept before, so they stay kept), removes them from it, and leaves the settings file
  // readable by its owner only. Called once at start.
  void migrateSettings();
  // Forgets the cache and the keyring's verdict, as a fresh process would (tests).
  void reset();
  // A keyring call is in progress (its event loop is running): callers from that loop wait.
  bool asking() const { return asking_; }

 private:
  NodeSecrets() = default;
  std::optional<QString> read(const QString& key);
  // Empty: remove. Returns whether it is kept (else a notice says why).
  bool write(const QString& key, const QString& value);
  // The owner-only file's entries; nullopt (and a notice) when it is refused.
  std::optional<QHash<QString, QString>> readFile();
  QString writeFile(const QHash<QString, QString>& entries);
  void notice(const QString& text);

  std::optional<Where> where_;
  QString keyringProblem_;
  QHash<QString, std::optional<QString>> cache_;  // keyring answers, by key
  QHash<QString, QString> session_;               // kSession's secrets, by key
  QString notice_;
  QString lastFileProblem_;  // told once per problem
  bool asking_ = false;
};

}  // namespace dtlab::ui
