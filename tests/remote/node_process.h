#pragma once
// A real dtlab-node child process for the remote tests. Include after the protocol headers
// (Qt's `slots` macro would otherwise rename DeviceInfo::slots()).
#include <QtCore/QProcess>
#include <QtCore/QStringList>

#include <chrono>
#include <string>

namespace dtlab::test {

inline const QString kNodeBinary = QStringLiteral(DTLAB_BINARY_DIR "/app/dtlab-node");

// A dtlab-node child process; stopped (SIGTERM, then SIGKILL) when it goes out of scope.
// With `netns`, it runs in that network namespace (`ip netns exec`, which execs the daemon:
// the process is still the daemon itself).
class NodeProcess {
 public:
  explicit NodeProcess(QStringList args, const QString& netns = {}) {
    if (!args.contains("--log-level"))
      args << "--log-level"
           << "warn";
    process_.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    if (netns.isEmpty())
      process_.start(kNodeBinary, args);
    else
      process_.start("ip", QStringList{"netns", "exec", netns, kNodeBinary} + args);
    if (!process_.waitForStarted(10000)) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    QByteArray out;
    while (std::chrono::steady_clock::now() < deadline) {
      process_.waitForReadyRead(200);
      out += process_.readAllStandardOutput();
      const int at = out.indexOf("dtlab-node listening on ");
      const int end = at < 0 ? -1 : out.indexOf('\n', at);
      if (end > at) {
        address_ = out.mid(at + 24, end - at - 24).trimmed().toStdString();
        return;
      }
      if (process_.state() == QProcess::NotRunning) return;
    }
  }
  ~NodeProcess() {
    if (process_.state() == QProcess::NotRunning) return;
    process_.terminate();
    if (!process_.waitForFinished(10000)) {
      process_.kill();
      process_.waitForFinished(5000);
    }
  }
  NodeProcess(const NodeProcess&) = delete;
  NodeProcess& operator=(const NodeProcess&) = delete;

  bool ready() const { return !address_.empty(); }
  const std::string& address() const { return address_; }
  QProcess& process() { return process_; }

 private:
  QProcess process_;
  std::string address_;
};

}  // namespace dtlab::test
