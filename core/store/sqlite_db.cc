#include "core/store/sqlite_db.h"

#include <cmath>
#include <limits>

namespace dtlab::core::sqlite {
namespace {

// How long a connection waits for another one's write lock before giving up. Commits of
// the point writer take milliseconds; a long timeout only matters when something holds
// the lock abnormally long (a checkpoint on a slow disk).
constexpr int kBusyTimeoutMs = 10000;

}  // namespace

Db::Db(const std::string& path, int flags, const std::string& name)
    : path_(name.empty() ? path : name) {
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(path_ + ": cannot open: " + message, rc);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  exec("PRAGMA foreign_keys = ON");
}

Db::~Db() {
  // Statements are owned by RAII objects that die first; close_v2 copes if one leaked.
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

void Db::check(int rc, const char* context) const {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
  throw StoreError(
      path_ + ": " + context + ": " + sqlite3_errmsg(db_) + " (" + sqlite3_errstr(rc) + ")",
      sqlite3_extended_errcode(db_));
}

void Db::exec(const char* sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    std::string message = error != nullptr ? error : sqlite3_errstr(rc);
    sqlite3_free(error);
    // Keep the statement short in the message: the first line is enough to find it.
    std::string head(sql);
    if (const auto nl = head.find('\n'); nl != std::string::npos) head = head.substr(0, nl);
    throw StoreError(path_ + ": " + message + " (in: " + head + ")", sqlite3_extended_errcode(db_));
  }
}

int64_t Db::queryInt(const char* sql) {
  Statement s(*this, sql);
  if (!s.step()) throw StoreError(path_ + ": no result for: " + sql);
  return s.columnInt(0);
}

std::string Db::queryText(const char* sql) {
  Statement s(*this, sql);
  if (!s.step()) throw StoreError(path_ + ": no result for: " + sql);
  return s.columnText(0);
}

Statement::Statement(Db& db, const char* sql) : db_(db) {
  db_.check(sqlite3_prepare_v3(db_.handle(), sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr),
            sql);
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

Statement& Statement::bind(int index, int64_t value) {
  db_.check(sqlite3_bind_int64(stmt_, index, value), "bind");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  db_.check(sqlite3_bind_double(stmt_, index, value), "bind");
  return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
  db_.check(
      sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT),
      "bind");
  return *this;
}

Statement& Statement::bindBlob(int index, std::span<const unsigned char> bytes) {
  // SQLITE_STATIC: callers keep the bytes alive until step(); the chunk blobs are large and
  // a copy per insert would be measurable in the ingest rate.
  db_.check(sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_STATIC), "bind");
  return *this;
}

Statement& Statement::bindNull(int index) {
  db_.check(sqlite3_bind_null(stmt_, index), "bind");
  return *this;
}

Statement& Statement::bind(int index, const std::optional<int64_t>& value) {
  return value ? bind(index, *value) : bindNull(index);
}

Statement& Statement::bind(int index, const std::optional<double>& value) {
  return value && !std::isnan(*value) ? bind(index, *value) : bindNull(index);
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const std::string sql = sqlite3_sql(stmt_) != nullptr ? sqlite3_sql(stmt_) : "";
  sqlite3_reset(stmt_);
  db_.check(rc, sql.c_str());
  return false;
}

void Statement::run() {
  step();
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::isNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Statement::columnInt(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

double Statement::columnDouble(int column) const {
  if (isNull(column)) return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(stmt_, column);
}

std::string Statement::columnText(int column) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  if (text == nullptr) return {};
  return std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::optional<int64_t> Statement::columnOptionalInt(int column) const {
  if (isNull(column)) return std::nullopt;
  return columnInt(column);
}

std::optional<double> Statement::columnOptionalDouble(int column) const {
  if (isNull(column)) return std::nullopt;
  return sqlite3_column_double(stmt_, column);
}

std::span<const unsigned char> Statement::columnBlob(int column) const {
  const auto* data = static_cast<const unsigned char*>(sqlite3_column_blob(stmt_, column));
  const int bytes = sqlite3_column_bytes(stmt_, column);
  return {data, static_cast<std::size_t>(bytes)};
}

Transaction::Transaction(Db& db) : db_(db) {
  db_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (open_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  open_ = false;
}

}  // namespace dtlab::core::sqlite
