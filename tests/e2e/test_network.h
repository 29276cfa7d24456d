#pragma once
// Real network hosts for the multi-host tests and the fault suite: one network namespace per
// host, joined by veth pairs on a bridge in a namespace of its own (the hub). Host i is at
// 10.213.0.(10+i), the hub at 10.213.0.254; with `joinHere`, this process's own namespace
// joins the bridge too (10.213.0.253), so that it reaches the hosts without entering the hub.
// Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and iproute2; error() says why not otherwise.
// Everything is removed again on destruction (deleting the namespaces deletes their links).
#include <QtCore/QProcess>
#include <QtCore/QStandardPaths>
#include <QtCore/QString>
#include <QtCore/QStringList>

#include <unistd.h>

#include <vector>

namespace dtlab::test {

// Runs `ip ARGS...`; returns "" on success, else what it said.
inline QString ip(const QStringList& args) {
  QProcess p;
  p.start("ip", args);
  if (!p.waitForFinished(20000)) return "ip " + args.join(' ') + ": did not finish";
  if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0)
    return "ip " + args.join(' ') + ": " + QString::fromUtf8(p.readAllStandardError()).trimmed();
  return {};
}

class TestNetwork {
 public:
  explicit TestNetwork(int hosts, bool joinHere = false)
      : prefix_(QString("dtlab%1").arg(::getpid())) {
    error_ = setUp(hosts, joinHere);
  }
  ~TestNetwork() {
    for (const QString& ns : created_) ip({"netns", "del", ns});
  }
  TestNetwork(const TestNetwork&) = delete;
  TestNetwork& operator=(const TestNetwork&) = delete;

  const QString& error() const { return error_; }
  QString hub() const { return prefix_ + "-hub"; }
  QString host(int i) const { return prefix_ + QString("-h%1").arg(i); }
  static QString address(int i) { return QString("10.213.0.%1").arg(10 + i); }
  // Cuts host i off the bridge (every packet to or from it dropped), or joins it again.
  QString cut(int i, bool off) const {
    return ip(
        {"netns", "exec", hub(), "ip", "link", "set", QString("b%1").arg(i), off ? "down" : "up"});
  }

 private:
  QString add(const QString& ns) {
    QString e = ip({"netns", "add", ns});
    if (e.isEmpty()) created_.push_back(ns);
    return e;
  }
  QString setUp(int hosts, bool joinHere) {
    if (::geteuid() != 0) return "not root: network namespaces need CAP_SYS_ADMIN";
    if (QStandardPaths::findExecutable("ip").isEmpty() &&
        QStandardPaths::findExecutable("ip", {"/usr/sbin", "/sbin"}).isEmpty())
      return "no 'ip' command (Debian's iproute2)";
    if (QString e = add(hub()); !e.isEmpty()) return "cannot create a network namespace: " + e;
    const QStringList inHub = {"netns", "exec", hub(), "ip"};
    for (const QStringList& args :
         {inHub + QStringList{"link", "set", "lo", "up"},
          inHub + QStringList{"link", "add", "br0", "type", "bridge"},
          inHub + QStringList{"addr", "add", "10.213.0.254/24", "dev", "br0"},
          inHub + QStringList{"link", "set", "br0", "up"}}) {
      if (QString e = ip(args); !e.isEmpty()) return e;
    }
    for (int i = 1; i <= hosts; ++i) {
      const QString ns = host(i);
      const QString outside = QString("b%1").arg(i);
      const QString inside = QString("v%1").arg(i);
      const QStringList inHost = {"netns", "exec", ns, "ip"};
      if (QString e = add(ns); !e.isEmpty()) return e;
      for (const QStringList& args :
           {QStringList{"link", "add", inside, "netns", ns, "type", "veth", "peer", "name", outside,
                        "netns", hub()},
            inHost + QStringList{"link", "set", "lo", "up"},
            inHost + QStringList{"addr", "add", address(i) + "/24", "dev", inside},
            inHost + QStringList{"link", "set", inside, "up"},
            inHub + QStringList{"link", "set", outside, "master", "br0"},
            inHub + QStringList{"link", "set", outside, "up"}}) {
        if (QString e = ip(args); !e.isEmpty()) return e;
      }
    }
    if (joinHere) {
      // The pair's end here goes with the hub's end when the hub is deleted.
      const QString here = prefix_ + "-d";
      for (const QStringList& args :
           {QStringList{"link", "add", here, "type", "veth", "peer", "name", "d0", "netns", hub()},
            QStringList{"addr", "add", "10.213.0.253/24", "dev", here},
            QStringList{"link", "set", here, "up"},
            inHub + QStringList{"link", "set", "d0", "master", "br0"},
            inHub + QStringList{"link", "set", "d0", "up"}}) {
        if (QString e = ip(args); !e.isEmpty()) return e;
      }
    }
    return {};
  }

  QString prefix_;
  QString error_;
  std::vector<QString> created_;
};

}  // namespace dtlab::test
