// The fault-injection suite (installer/dev.sh faults [--seed S] [--count N]; a short run is
// the ctest case faults_short): real dtlab-node daemons on loopback and a real `dtlab-cli run`
// recording into a project, hit at a random moment (drawn from a printed seed) by one fault:
//
//   kill_node / stop_node / restart_node   SIGKILL, SIGSTOP, or SIGKILL and a new daemon on
//                                          the same port, of a random node: a worker, rank 0
//                                          (the rendezvous) or a parameter-server shard
//   net_cut                                a node's host cut off the network (its daemon in a
//                                          network namespace, every packet dropped)
//   kill_coordinator / stop_coordinator    SIGKILL or SIGSTOP of dtlab-cli itself
//   full_disk                              the project's file system filled (a small tmpfs)
//   read_only                              the project's files made immutable (chattr +i)
//
// on a variant drawn too: sync_allreduce with on_node_loss "fail" or "restart", async_ps
// (one shard, on node0) with "continue" (a lost shard fails the run, naming it), ssp the same
// with checkpoints (a lost shard comes back from the newest), or local_sgd with "continue"
// (its group re-formed). After
// each fault the run must end as its policy promises: the cause named within 5 s and the run ended,
// or the run recovered (a "recovery" event) and completed; every daemon idle again and gone when
// asked; the project passing integrity_check with every point committed before the fault. Faults
// that need root (the namespaces, the tmpfs, chattr) are skipped without it, saying so.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <QtCore/QCoreApplication>
#include <QtCore/QDir>
#include <QtCore/QTemporaryDir>

#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>

#include "tests/e2e/test_network.h"
#include "tests/faults/fault_world.h"

using namespace dtlab::faults;
using nlohmann::json;

namespace {

enum class Kind {
  kKillNode,
  kStopNode,
  kRestartNode,
  kNetCut,
  kKillCoordinator,
  kStopCoordinator,
  kFullDisk,
  kReadOnly
};
constexpr Kind kKinds[] = {Kind::kKillNode, Kind::kStopNode,        Kind::kRestartNode,
                           Kind::kNetCut,   Kind::kKillCoordinator, Kind::kStopCoordinator,
                           Kind::kFullDisk, Kind::kReadOnly};
const char* nameOf(Kind k) {
  switch (k) {
    case Kind::kKillNode:
      return "kill_node";
    case Kind::kStopNode:
      return "stop_node";
    case Kind::kRestartNode:
      return "restart_node";
    case Kind::kNetCut:
      return "net_cut";
    case Kind::kKillCoordinator:
      return "kill_coordinator";
    case Kind::kStopCoordinator:
      return "stop_coordinator";
    case Kind::kFullDisk:
      return "full_disk";
    case Kind::kReadOnly:
      return "read_only";
  }
  return "?";
}

enum class Policy { kSyncFail, kSyncRestart, kAsyncContinue, kLocalContinue, kSspCheckpointed };
constexpr int kPolicies = 5;
const char* nameOf(Policy p) {
  switch (p) {
    case Policy::kSyncFail:
      return "sync_allreduce/fail";
    case Policy::kSyncRestart:
      return "sync_allreduce/restart";
    case Policy::kAsyncContinue:
      return "async_ps/continue";
    case Policy::kLocalContinue:
      return "local_sgd/continue";
    case Policy::kSspCheckpointed:
      return "ssp/continue+checkpoints";
  }
  return "?";
}

struct Plan {
  int index = 0;
  Kind kind = Kind::kKillNode;
  Policy policy = Policy::kSyncFail;
  int victim = 0;   // the node hit by a node fault
  int delayMs = 0;  // after the first committed point
};

struct Result {
  bool ok = true;
  bool skipped = false;
  std::string detail;  // what happened, or why it failed
  std::optional<double> namedS;
  std::optional<double> recoveryS;
  std::optional<double> freedS;
  int64_t pointsBefore = 0;
  void fail(const std::string& why) {
    if (ok) detail.clear();
    ok = false;
    detail += (detail.empty() ? "" : "; ") + why;
  }
};

int nodesFor(Policy p) {
  return p == Policy::kAsyncContinue || p == Policy::kLocalContinue || p == Policy::kSspCheckpointed
             ? 4
             : 3;
}

bool parameterServer(Policy p) {
  return p == Policy::kAsyncContinue || p == Policy::kSspCheckpointed;
}

// A run of a few seconds (its time limit), checkpoints for the restarting variant and for the
// server of ssp's (a lost shard comes back from them).
json specFor(Policy p, uint64_t seed) {
  json variant =
      p == Policy::kAsyncContinue
          ? json{{"strategy", "async_ps"}, {"ps_shards", 1}, {"on_node_loss", "continue"}}
      : p == Policy::kSspCheckpointed
          ? json{{"strategy", "ssp"}, {"ps_shards", 1}, {"on_node_loss", "continue"}}
      : p == Policy::kLocalContinue
          ? json{{"strategy", "local_sgd"}, {"period", 4}, {"on_node_loss", "continue"}}
          : json{{"strategy", "sync_allreduce"},
                 {"on_node_loss", p == Policy::kSyncRestart ? "restart" : "fail"}};
  json training = {{"batch_size", 64},
                   {"epochs", 0},
                   {"max_steps", 0},
                   {"max_seconds", 6},
                   {"eval_interval", 50}};
  if (p == Policy::kSyncRestart || p == Policy::kSspCheckpointed) training["checkpoint_every"] = 10;
  return {{"name", "faults"},
          {"seed", seed},
          {"dataset",
           {{"kind", "teacher"},
            {"train_size", 4096},
            {"test_size", 512},
            {"features", 32},
            {"classes", 4}}},
          {"model", {{"hidden", {64}}}},
          {"training", training},
          {"cluster", {{"local_nodes", nodesFor(p)}}},
          {"variants", {variant}}};
}

// Sets or clears the immutable flag of a file (ext4 and friends; root only).
bool setImmutable(const std::string& path, bool on) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
  if (fd < 0) return false;
  int flags = 0;
  bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
  flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
  ok = ok && ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
  ::close(fd);
  return ok;
}

// What a fault leaves to undo whatever happens: the immutable flags, the tmpfs.
struct Undo {
  std::vector<std::string> immutable;
  std::string mounted;
  ~Undo() {
    for (const std::string& path : immutable) setImmutable(path, false);
    if (!mounted.empty()) ::umount2(mounted.c_str(), MNT_DETACH);
  }
};

// Fills the file system under `dir` until it is full.
void fillDisk(const std::string& dir) {
  std::ofstream out(dir + "/filler", std::ios::binary);
  const std::string block(1 << 16, '\0');
  while (out.write(block.data(), static_cast<std::streamsize>(block.size()))) out.flush();
}

// `checkpointBefore`: the project held a checkpoint of the run when the fault struck.
void expectNodeFault(const Plan& plan, Cli& cli, const std::string& victim,
                     Clock::time_point faultAt, bool checkpointBefore, Result& r) {
  // Shard 0 lives on node0: its blocks come back from a checkpoint of the server, if any.
  const bool shardLost = parameterServer(plan.policy) && plan.victim == 0;
  const bool survives = plan.policy == Policy::kSyncRestart ||
                        plan.policy == Policy::kLocalContinue ||
                        (parameterServer(plan.policy) && !shardLost) ||
                        (plan.policy == Policy::kSspCheckpointed && checkpointBefore);
  // ssp's shard lost before a checkpoint was stored: one may still be released when the lost
  // rank's stream ends (its points up to it delivered), so either ending keeps the promise.
  const bool either = plan.policy == Policy::kSspCheckpointed && shardLost && !checkpointBefore;
  if (!cli.waitExit(std::chrono::seconds(40))) return r.fail("dtlab-cli still running 40 s on");
  const json summary = cli.summary();
  if (!summary.is_object()) return r.fail("no run summary");
  r.namedS = cli.lineAfter("node_lost", faultAt);
  const std::string status = summary.value("status", "");
  if (survives || (either && status == "completed")) {
    const int64_t recoveries = summary.value("recoveries", int64_t{0});
    if (status != "completed" || cli.exitCode() != 0 || recoveries < 1)
      return r.fail("expected a recovery and a completed run, got " + status + " (exit " +
                    std::to_string(cli.exitCode()) + ", " + std::to_string(recoveries) +
                    " recoveries): " + summary.value("error", ""));
    r.recoveryS = summary.value("recovery_s", 0.0);
    r.detail = "recovered, run completed";
    return;
  }
  const std::string error = summary.value("error", "");
  if (status != "failed" || cli.exitCode() == 0)
    return r.fail("expected the run to fail, got " + status);
  if (error.find(victim) == std::string::npos)
    return r.fail("the error does not name the lost node " + victim + ": " + error);
  if (shardLost && error.find("shard 0") == std::string::npos)
    return r.fail("the error does not name the lost shard: " + error);
  if (either && error.find("no checkpoint yet") == std::string::npos)
    return r.fail("the error does not say the shard had no checkpoint: " + error);
  if (!r.namedS || *r.namedS > 5.0)
    return r.fail("the lost node was not named within 5 s of the fault");
  r.detail = "failed naming " + victim;
}

Result runFault(const Plan& plan, uint64_t seed) {
  Result r;
  QTemporaryDir dir;
  Undo undo;
  std::string projectDir = dir.path().toStdString() + "/project";
  QDir().mkpath(QString::fromStdString(projectDir));
  if (plan.kind == Kind::kFullDisk) {
    if (::mount("tmpfs", projectDir.c_str(), "tmpfs", 0, "size=6m") != 0) {
      r.skipped = true;
      r.detail = "skipped: cannot mount a small tmpfs here (root only)";
      return r;
    }
    undo.mounted = projectDir;
  }
  const std::string project = projectDir + "/p.dtlab";

  // A network cut needs hosts of their own: each daemon in a namespace on a bridge that this
  // process joins too.
  std::unique_ptr<dtlab::test::TestNetwork> network;
  if (plan.kind == Kind::kNetCut) {
    network = std::make_unique<dtlab::test::TestNetwork>(nodesFor(plan.policy), true);
    if (!network->error().isEmpty()) {
      r.skipped = true;
      r.detail = "skipped: " + network->error().toStdString();
      return r;
    }
  }
  std::vector<std::unique_ptr<Daemon>> daemons;
  QStringList args{"run",       dir.filePath("spec.json"),
                   "--project", QString::fromStdString(project),
                   "--token",   QString::fromStdString(kToken)};
  for (int i = 0; i < nodesFor(plan.policy); ++i) {
    daemons.push_back(
        network ? std::make_unique<Daemon>(0.05, dtlab::test::TestNetwork::address(i + 1) + ":7000",
                                           network->host(i + 1))
                : std::make_unique<Daemon>(0.05));
    if (!daemons.back()->ready()) return r.fail("a daemon did not start"), r;
    args << "--node" << QString::fromStdString(daemons.back()->address());
  }
  {
    std::ofstream spec(dir.filePath("spec.json").toStdString());
    spec << specFor(plan.policy, seed).dump();
  }
  Cli cli(args);
  if (!waitUntil(
          [&] {
            cli.pump();
            const auto points = readPoints(project);
            return points && pointCount(*points) > 0;
          },
          std::chrono::seconds(60)))
    return r.fail("no point committed within 60 s\n" + cli.tail(5)), r;
  waitUntil([&] { return !cli.pump(); }, std::chrono::milliseconds(plan.delayMs));
  const std::optional<Points> before = readPoints(project);
  if (!before) return r.fail("the project could not be read before the fault"), r;
  r.pointsBefore = pointCount(*before);
  const bool checkpointBefore = hasCheckpoint(project);

  const Clock::time_point faultAt = Clock::now();
  Daemon& victim = *daemons[static_cast<std::size_t>(plan.victim)];
  const std::string victimAddress = victim.address();
  switch (plan.kind) {
    case Kind::kKillNode:
      victim.signal(SIGKILL);
      expectNodeFault(plan, cli, victimAddress, faultAt, checkpointBefore, r);
      break;
    case Kind::kStopNode:
      victim.signal(SIGSTOP);
      expectNodeFault(plan, cli, victimAddress, faultAt, checkpointBefore, r);
      victim.signal(SIGCONT);  // woken, it must find its job dropped
      break;
    case Kind::kRestartNode: {
      const int port = victim.port();
      victim.signal(SIGKILL);
      victim.stop(std::chrono::seconds(5));
      daemons[static_cast<std::size_t>(plan.victim)] =
          std::make_unique<Daemon>(0.05, QString("127.0.0.1:%1").arg(port));
      if (!daemons[static_cast<std::size_t>(plan.victim)]->ready())
        r.fail("no daemon could start again on port " + std::to_string(port));
      expectNodeFault(plan, cli, victimAddress, faultAt, checkpointBefore, r);
      break;
    }
    case Kind::kNetCut:
      if (const QString e = network->cut(plan.victim + 1, true); !e.isEmpty()) {
        r.fail("cutting the link: " + e.toStdString());
        break;
      }
      expectNodeFault(plan, cli, victimAddress, faultAt, checkpointBefore, r);
      network->cut(plan.victim + 1, false);  // joined again, it must find its job dropped
      break;
    case Kind::kKillCoordinator:
    case Kind::kStopCoordinator: {
      cli.signal(plan.kind == Kind::kKillCoordinator ? SIGKILL : SIGSTOP);
      for (const auto& d : daemons)
        if (!waitIdle(d->address(), std::chrono::seconds(12)))
          r.fail(d->address() + " still runs the orphaned job 12 s on");
      r.freedS = secondsSince(faultAt);  // when the last of them was idle
      cli.signal(SIGCONT);
      if (!cli.waitExit(std::chrono::seconds(20))) r.fail("dtlab-cli did not end after SIGCONT");
      if (r.ok) r.detail = "nodes free again";
      break;
    }
    case Kind::kFullDisk:
    case Kind::kReadOnly: {
      if (plan.kind == Kind::kFullDisk) {
        fillDisk(projectDir);
      } else {
        // Not the -shm index: SQLite maps it, and a mapped file made immutable kills the
        // process with SIGBUS, which no program can handle (a read-only file system refuses
        // to become one while files are open for writing, so that case cannot arise).
        for (const char* suffix : {"", "-wal"}) {
          const std::string path = project + suffix;
          if (!setImmutable(path, true)) {
            if (std::string(suffix).empty()) {
              r.skipped = true;
              r.detail = "skipped: cannot make the project immutable here (root, ext4)";
            }
            continue;
          }
          undo.immutable.push_back(path);
        }
        if (r.skipped) break;
      }
      if (!cli.waitExit(std::chrono::seconds(20))) r.fail("dtlab-cli still running 20 s on");
      r.namedS = cli.lineAfter("recording stopped", faultAt);
      if (!r.namedS || *r.namedS > 5.0) r.fail("the recording failure was not named within 5 s");
      if (cli.exitCode() != 1) r.fail("exit code " + std::to_string(cli.exitCode()) + ", not 1");
      if (r.ok) r.detail = "run stopped naming the failure";
      for (const std::string& path : undo.immutable) setImmutable(path, false);
      undo.immutable.clear();
      ::unlink((projectDir + "/filler").c_str());
      break;
    }
  }
  if (!r.ok) r.detail += "\n" + cli.tail(6);

  // Nothing left behind: dtlab-cli ended, every daemon idle (a stopped one woken first) and
  // gone when asked.
  if (!cli.waitExit(std::chrono::seconds(30))) r.fail("dtlab-cli left running");
  for (std::size_t i = 0; i < daemons.size(); ++i) {
    Daemon& d = *daemons[i];
    if (!d.running()) continue;
    if (!waitIdle(d.address(), std::chrono::seconds(12)))
      r.fail("node" + std::to_string(i) + " still busy after the run");
    if (!d.stop(std::chrono::seconds(5))) r.fail("node" + std::to_string(i) + " did not exit");
  }
  // The project: whole, every committed point kept; a run whose recorder was killed is
  // interrupted once the project is opened, none stays running.
  if (const std::string check = integrity(project); check != "ok")
    r.fail("integrity_check: " + check);
  const std::optional<Points> after = readPoints(project);
  if (!after) return r.fail("the project does not open after the fault"), r;
  if (const std::string lost = missingPoints(*before, *after); !lost.empty()) r.fail(lost);
  try {
    for (const std::string& status : runStatuses(project))
      if (status == "running") r.fail("a run is still 'running' in the project");
  } catch (const std::exception& e) {
    r.fail(std::string("opening the project for writing: ") + e.what());
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  uint64_t seed = std::random_device{}();
  int count = 40;
  std::string only;        // --only KIND: every fault of that kind
  std::string policyOnly;  // --policy P: every fault on that variant
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seed")
      seed = std::stoull(argv[i + 1]);
    else if (flag == "--count")
      count = std::stoi(argv[i + 1]);
    else if (flag == "--only")
      only = argv[i + 1];
    else if (flag == "--policy")
      policyOnly = argv[i + 1];
    else
      return std::fprintf(stderr,
                          "usage: dtlab_faults [--seed S] [--count N] [--only KIND] "
                          "[--policy P]\n"),
             2;
  }
  std::optional<Policy> onlyPolicy;
  for (int p = 0; p < kPolicies; ++p)
    if (policyOnly == nameOf(static_cast<Policy>(p))) onlyPolicy = static_cast<Policy>(p);
  if (!policyOnly.empty() && !onlyPolicy)
    return std::fprintf(stderr, "dtlab_faults: --policy %s: not a policy\n", policyOnly.c_str()), 2;
  if (!only.empty() &&
      std::none_of(std::begin(kKinds), std::end(kKinds), [&](Kind k) { return only == nameOf(k); }))
    return std::fprintf(stderr, "dtlab_faults: --only %s: not a kind of fault\n", only.c_str()), 2;
  std::printf("fault-injection suite: seed %" PRIu64 ", %d faults (rerun: --seed %" PRIu64
              " --count %d%s%s%s%s)\n",
              seed, count, seed, count, only.empty() ? "" : " --only ", only.c_str(),
              policyOnly.empty() ? "" : " --policy ", policyOnly.c_str());
  std::fflush(stdout);
  std::mt19937_64 rng(seed);
  // Every kind in turn (in an order drawn from the seed), so that a short run covers them all.
  std::vector<Kind> order;
  for (Kind k : kKinds)
    if (only.empty() || only == nameOf(k)) order.push_back(k);
  std::shuffle(order.begin(), order.end(), rng);
  int passed = 0, failed = 0, skipped = 0;
  std::map<std::string, int> perKind;
  std::vector<double> recoveries, named, freed;
  for (int i = 0; i < count; ++i) {
    Plan plan;
    plan.index = i;
    plan.kind = order[static_cast<std::size_t>(i) % order.size()];
    plan.policy = static_cast<Policy>(rng() % kPolicies);
    if (onlyPolicy) plan.policy = *onlyPolicy;
    plan.victim = static_cast<int>(rng() % static_cast<uint64_t>(nodesFor(plan.policy)));
    plan.delayMs = static_cast<int>(rng() % 1500);
    const auto start = Clock::now();
    const Result r = runFault(plan, seed + static_cast<uint64_t>(i));
    const bool node = plan.kind == Kind::kKillNode || plan.kind == Kind::kStopNode ||
                      plan.kind == Kind::kRestartNode || plan.kind == Kind::kNetCut;
    std::string figures;
    char buffer[96];
    if (r.namedS)
      std::snprintf(buffer, sizeof(buffer), ", named in %.2f s", *r.namedS), figures += buffer;
    if (r.recoveryS)
      std::snprintf(buffer, sizeof(buffer), ", recovered in %.2f s", *r.recoveryS),
          figures += buffer;
    if (r.freedS)
      std::snprintf(buffer, sizeof(buffer), ", nodes free in %.2f s", *r.freedS), figures += buffer;
    std::printf("#%-3d %-17s %-23s %s +%4d ms  %s: %s%s (%" PRId64 " points before; %.1f s)\n", i,
                nameOf(plan.kind), nameOf(plan.policy),
                node ? ("node" + std::to_string(plan.victim)).c_str() : "     ", plan.delayMs,
                r.skipped ? "SKIP"
                : r.ok    ? "ok"
                          : "FAILED",
                r.detail.c_str(), figures.c_str(), r.pointsBefore, secondsSince(start));
    std::fflush(stdout);
    if (r.skipped) {
      ++skipped;
      continue;
    }
    (r.ok ? passed : failed) += 1;
    ++perKind[nameOf(plan.kind)];
    if (r.recoveryS) recoveries.push_back(*r.recoveryS);
    if (r.namedS && !r.recoveryS) named.push_back(*r.namedS);
    if (r.freedS) freed.push_back(*r.freedS);
  }
  auto range = [](std::vector<double> v) {
    if (v.empty()) return std::string("-");
    std::sort(v.begin(), v.end());
    char b[64];
    std::snprintf(b, sizeof(b), "median %.2f s, max %.2f s (%zu)", v[v.size() / 2], v.back(),
                  v.size());
    return std::string(b);
  };
  std::printf("\nseed %" PRIu64 ": %d faults, %d ok, %d failed, %d skipped\n", seed, count, passed,
              failed, skipped);
  for (const auto& [kind, n] : perKind) std::printf("  %-17s %d\n", kind.c_str(), n);
  std::printf("  recovery time      %s\n  cause named after  %s\n  nodes freed after  %s\n",
              range(recoveries).c_str(), range(named).c_str(), range(freed).c_str());
  return failed == 0 ? 0 : 1;
}
