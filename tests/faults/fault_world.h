#pragma once
// The pieces of one fault of the fault-injection suite (fault_suite.cc): real dtlab-node
// daemons on loopback, a real `dtlab-cli run` recording into a project, and what is checked
// after the fault (points committed before it, the project's integrity, nothing left behind).
#include <QtCore/QProcess>
#include <QtCore/QString>
#include <QtCore/QStringList>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/store/chunk_codec.h"
#include "tests/remote/node_process.h"

namespace dtlab::faults {

using Clock = std::chrono::steady_clock;

// Every daemon's token (daemons on a namespace host's address require one), which the runs
// and the checks send.
inline const std::string kToken = "fault-suite-token";

double secondsSince(Clock::time_point t);

// A dtlab-node at an emulated speed (so that a run lasts long enough to be hit in the
// middle): on loopback, on a port of its own or a given one (a daemon restarted on the same
// port), or on a network namespace host's address (`netns`; plain text: the namespaces are
// private to the suite).
class Daemon {
 public:
  explicit Daemon(double speed, const QString& listen = "127.0.0.1:0", const QString& netns = {});
  ~Daemon();  // SIGCONT first, so that a stopped daemon can act on its SIGTERM
  bool ready() const { return node_.ready(); }
  const std::string& address() const { return node_.address(); }
  int port() const;
  void signal(int sig);
  // Stops the daemon (SIGCONT, SIGTERM); whether it exited within `grace`.
  bool stop(std::chrono::milliseconds grace);
  bool running();  // reaps a daemon that has died

 private:
  test::NodeProcess node_;
};

// `dtlab-cli run` with its stderr read line by line as it comes, each line with the time it
// was read.
class Cli {
 public:
  Cli(const QStringList& args);
  ~Cli();
  void signal(int sig);
  // Reads what the CLI wrote meanwhile (at most `wait`); whether it is still running.
  bool pump(std::chrono::milliseconds wait = std::chrono::milliseconds(20));
  // The first stderr line containing `text` read after `since`: the seconds from `since`.
  std::optional<double> lineAfter(const std::string& text, Clock::time_point since) const;
  // Waits for the CLI to exit; false when it is still running after `timeout`.
  bool waitExit(std::chrono::milliseconds timeout);
  int exitCode() const { return exitCode_; }
  // The run's summary: the last `{"runs": [...]}` line's first run (null when there is none).
  nlohmann::json summary() const;
  std::string tail(std::size_t lines) const;  // the last stderr lines, for messages
  qint64 pid() const { return process_.processId(); }

 private:
  QProcess process_;
  std::vector<std::pair<Clock::time_point, std::string>> lines_;
  std::string partial_;
  std::string out_;
  int exitCode_ = -1;
};

// Every point of every series of every run in a project, by "run/key/node/worker".
using Points = std::map<std::string, std::vector<core::SeriesPoint>>;
// Read-only, beside the writer; nullopt while the project cannot be read yet.
std::optional<Points> readPoints(const std::string& project);
// Whether the project holds a checkpoint of any run (false when it cannot be read).
bool hasCheckpoint(const std::string& project);
int64_t pointCount(const Points& points);
// The points of `before` missing from `after` (none: nothing committed was lost), as text.
std::string missingPoints(const Points& before, const Points& after);
// PRAGMA integrity_check of the file ("ok" when whole).
std::string integrity(const std::string& project);
// The project's runs' statuses, opened for writing (which stores a run whose recorder is gone
// as interrupted).
std::vector<std::string> runStatuses(const std::string& project);

// Whether `address`'s daemon answers and runs no job within `timeout`; the seconds it took.
std::optional<double> waitIdle(const std::string& address, std::chrono::milliseconds timeout);

// Polls `done` every 20 ms until it holds or `timeout` passes (a caller that watches the CLI
// pumps it inside `done`).
bool waitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout);

}  // namespace dtlab::faults
