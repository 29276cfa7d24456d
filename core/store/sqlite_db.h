#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/common/check.h"

namespace dtlab::core {

// Every failure of the project store: a refused file, a missing run, a failed SQLite call.
// what() names the file or the object and says what to do where there is something to do;
// callers that must tell failures apart ask the SQLite code, never the message.
class StoreError : public Error {
 public:
  explicit StoreError(const std::string& message, int sqliteCode = 0)
      : Error(message), code_(sqliteCode) {}
  // SQLite's extended result code (SQLITE_CONSTRAINT_UNIQUE, SQLITE_READONLY_DBMOVED, ...);
  // 0 when the failure is the store's own (a refused file, a missing run).
  int sqliteCode() const { return code_; }
  bool busy() const { return primary() == SQLITE_BUSY || primary() == SQLITE_LOCKED; }
  bool readOnly() const { return primary() == SQLITE_READONLY; }
  bool corrupt() const { return primary() == SQLITE_CORRUPT || primary() == SQLITE_NOTADB; }
  bool full() const { return primary() == SQLITE_FULL; }
  bool uniqueViolation() const {
    return code_ == SQLITE_CONSTRAINT_UNIQUE || code_ == SQLITE_CONSTRAINT_PRIMARYKEY;
  }
  bool foreignKeyViolation() const { return code_ == SQLITE_CONSTRAINT_FOREIGNKEY; }

 private:
  int primary() const { return code_ & 0xff; }
  int code_;
};

namespace sqlite {

class Statement;

// One SQLite connection (RAII). The store's connections always run with foreign keys on
// and a busy timeout, so a writer holding the lock briefly makes others wait instead of
// failing with "database is locked".
class Db {
 public:
  // flags: SQLITE_OPEN_* (no SQLITE_OPEN_CREATE unless creating). `name` is the file as
  // messages call it (default: path; differs when path is a URI). Throws StoreError.
  Db(const std::string& path, int flags, const std::string& name = "");
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }

  // Runs one or more statements without results. Throws StoreError with the SQL's error.
  void exec(const char* sql);
  // The first column of the first row of a one-row query, as integer/text.
  int64_t queryInt(const char* sql);
  std::string queryText(const char* sql);
  int64_t lastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  int changes() const { return sqlite3_changes(db_); }

  // Throws StoreError "context: <sqlite message>" when rc is an error code.
  void check(int rc, const char* context) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

// A prepared statement (RAII). bind* indexes start at 1, column* at 0.
class Statement {
 public:
  Statement(Db& db, const char* sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value);  // NaN is stored as NULL by SQLite
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
  Statement& bindBlob(int index, std::span<const unsigned char> bytes);
  Statement& bindNull(int index);
  Statement& bind(int index, const std::optional<int64_t>& value);
  Statement& bind(int index, const std::optional<double>& value);

  // Advances: true while a row is available, false when done. Throws on error.
  bool step();
  // step() that expects completion (INSERT/UPDATE/DELETE).
  void run();
  // Ready for reuse with new bindings.
  void reset();

  bool isNull(int column) const;
  int64_t columnInt(int column) const;
  double columnDouble(int column) const;  // NULL reads as NaN
  std::string columnText(int column) const;
  std::optional<int64_t> columnOptionalInt(int column) const;
  std::optional<double> columnOptionalDouble(int column) const;
  std::span<const unsigned char> columnBlob(int column) const;  // valid until the next step

 private:
  Db& db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back when destroyed without commit(). IMMEDIATE takes
// the write lock up front, so the busy timeout applies: a deferred transaction that reads
// and then writes can fail at once with SQLITE_BUSY when another connection committed in
// between, and no timeout helps.
class Transaction {
 public:
  explicit Transaction(Db& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Db& db_;
  bool open_ = true;
};

}  // namespace sqlite
}  // namespace dtlab::core
