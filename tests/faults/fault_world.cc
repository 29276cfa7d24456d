#include "tests/faults/fault_world.h"

#include <signal.h>

#include <thread>

#include "core/store/project_store.h"
#include "core/store/sqlite_db.h"
#include "remote/coordinator/coordinator.h"
#include "tests/support/wait.h"

namespace dtlab::faults {

namespace {

const QString kCli = QStringLiteral(DTLAB_BINARY_DIR "/app/dtlab-cli");

}  // namespace

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

Daemon::Daemon(double speed, const QString& listen, const QString& netns)
    : node_(QStringList{"--listen", listen, "--speed", QString::number(speed), "--token",
                        QString::fromStdString(kToken), "--log-level", "error"} +
                (netns.isEmpty() ? QStringList() : QStringList{"--insecure"}),
            netns) {}

Daemon::~Daemon() {
  signal(SIGCONT);
}

int Daemon::port() const {
  const std::size_t colon = address().rfind(':');
  return colon == std::string::npos ? 0 : std::stoi(address().substr(colon + 1));
}

bool Daemon::running() {
  QProcess& p = node_.process();
  return p.state() != QProcess::NotRunning && !p.waitForFinished(0);
}

void Daemon::signal(int sig) {
  if (running()) ::kill(static_cast<pid_t>(node_.process().processId()), sig);
}

bool Daemon::stop(std::chrono::milliseconds grace) {
  if (!running()) return true;
  signal(SIGCONT);
  signal(SIGTERM);
  return node_.process().waitForFinished(static_cast<int>(grace.count()));
}

Cli::Cli(const QStringList& args) {
  process_.start(kCli, args);
  process_.waitForStarted(10000);
}

Cli::~Cli() {
  if (process_.state() == QProcess::NotRunning) return;
  signal(SIGCONT);
  process_.kill();
  process_.waitForFinished(5000);
}

void Cli::signal(int sig) {
  if (process_.state() != QProcess::NotRunning)
    ::kill(static_cast<pid_t>(process_.processId()), sig);
}

bool Cli::pump(std::chrono::milliseconds wait) {
  if (process_.state() != QProcess::NotRunning)
    process_.waitForReadyRead(static_cast<int>(wait.count()));
  out_ += process_.readAllStandardOutput().toStdString();
  partial_ += process_.readAllStandardError().toStdString();
  for (std::size_t end; (end = partial_.find('\n')) != std::string::npos;) {
    lines_.emplace_back(Clock::now(), partial_.substr(0, end));
    partial_.erase(0, end + 1);
  }
  if (process_.state() == QProcess::NotRunning && exitCode_ < 0)
    exitCode_ = process_.exitStatus() == QProcess::NormalExit ? process_.exitCode() : 128;
  return process_.state() != QProcess::NotRunning;
}

std::optional<double> Cli::lineAfter(const std::string& text, Clock::time_point since) const {
  for (const auto& [at, line] : lines_)
    if (at >= since && line.find(text) != std::string::npos)
      return std::chrono::duration<double>(at - since).count();
  return std::nullopt;
}

bool Cli::waitExit(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (pump(std::chrono::milliseconds(50)))
    if (Clock::now() >= deadline) return false;
  pump(std::chrono::milliseconds(0));
  return true;
}

nlohmann::json Cli::summary() const {
  nlohmann::json found;
  std::size_t start = 0;
  for (std::size_t end; (end = out_.find('\n', start)) != std::string::npos; start = end + 1) {
    const std::string line = out_.substr(start, end - start);
    if (line.rfind("{\"runs\"", 0) != 0) continue;
    const nlohmann::json doc = nlohmann::json::parse(line, nullptr, false);
    if (doc.is_object() && doc["runs"].is_array() && !doc["runs"].empty()) found = doc["runs"][0];
  }
  return found;
}

std::string Cli::tail(std::size_t count) const {
  std::string text;
  for (std::size_t i = lines_.size() > count ? lines_.size() - count : 0; i < lines_.size(); ++i)
    text += "    | " + lines_[i].second + "\n";
  return text;
}

std::optional<Points> readPoints(const std::string& project) {
  try {
    auto store = core::ProjectStore::open(project, /*readOnly=*/true);
    Points points;
    for (const core::RunRecord& run : store->runs())
      for (const core::SeriesInfo& s : store->series(run.id))
        points[std::to_string(run.id) + "/" + s.key + "/" + std::to_string(s.node) + "/" +
               std::to_string(s.worker)] = store->readSeries(s.id);
    return points;
  } catch (const std::exception&) {
    return std::nullopt;  // not created yet, or caught between the writer's first steps
  }
}

bool hasCheckpoint(const std::string& project) {
  try {
    auto store = core::ProjectStore::open(project, /*readOnly=*/true);
    for (const core::RunRecord& run : store->runs())
      if (!store->checkpoints(run.id).empty()) return true;
  } catch (const std::exception&) {
  }
  return false;
}

int64_t pointCount(const Points& points) {
  int64_t n = 0;
  for (const auto& [key, series] : points) n += static_cast<int64_t>(series.size());
  return n;
}

std::string missingPoints(const Points& before, const Points& after) {
  int64_t missing = 0;
  std::string first;
  for (const auto& [key, series] : before) {
    const auto it = after.find(key);
    for (const core::SeriesPoint& p : series) {
      const bool kept = it != after.end() &&
                        std::find(it->second.begin(), it->second.end(), p) != it->second.end();
      if (kept) continue;
      if (missing++ == 0) first = key + " step " + std::to_string(p.step);
    }
  }
  return missing == 0 ? std::string()
                      : std::to_string(missing) + " committed points lost (first: " + first + ")";
}

std::string integrity(const std::string& project) {
  try {
    core::sqlite::Db db(project, SQLITE_OPEN_READWRITE);
    return db.queryText("PRAGMA integrity_check");
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::vector<std::string> runStatuses(const std::string& project) {
  std::vector<std::string> statuses;
  auto store = core::ProjectStore::open(project);
  for (const core::RunRecord& run : store->runs()) statuses.push_back(core::toString(run.status));
  return statuses;
}

std::optional<double> waitIdle(const std::string& address, std::chrono::milliseconds timeout) {
  const Clock::time_point start = Clock::now();
  while (Clock::now() - start < timeout) {
    try {
      if (!remote::queryNode(address, kToken, std::chrono::milliseconds(1000)).busy)
        return secondsSince(start);
    } catch (const std::exception&) {
      // Not answering yet (a stopped daemon woken a moment ago): ask again.
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return std::nullopt;
}

bool waitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  return test::waitUntil(done, timeout, std::chrono::milliseconds(20));
}

}  // namespace dtlab::faults
