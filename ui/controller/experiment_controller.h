#pragma once

#include <QtCore/QMetaType>
#include <QtCore/QObject>
#include <QtCore/QString>
#include <QtCore/QStringList>

#include <string>
#include <vector>

#include "core/metrics/metrics.h"
#include "core/spec/experiment_spec.h"

namespace dtlab::ui {

class LiveFeed;

// Mutual TLS to remote daemons: this user's client certificate, its key and the cluster's CA
// (PEM file paths; `dtlab-node gen-certs` makes them). All empty: plain text.
struct TlsPaths {
  QString cert;
  QString key;
  QString ca;
  bool isEmpty() const { return cert.isEmpty() && key.isEmpty() && ca.isEmpty(); }
  bool operator==(const TlsPaths&) const = default;
};

// What to run: every variant of the spec in turn, recorded into the project.
struct RunRequest {
  QString projectPath;
  core::ExperimentSpec spec;
  // "host:port" of running daemons, in rank order. When they are the spec's own remote nodes
  // (cluster.nodes[i].address), each daemon is given its node entry's speed, bandwidth and
  // latency for the run; other daemons use their own flags. Empty: the spec's remote nodes
  // if it names any, else spec.cluster.local_nodes local daemons (with the spec's per-node
  // settings) started for the run and stopped afterwards.
  QStringList nodes;
  // Each node's token, parallel to `nodes` ("" or missing: `token`). Never stored with the
  // spec: the GUI keeps them in the user's settings.
  QStringList tokens;
  QString token;  // every node's token unless `tokens` says otherwise; local daemons get it
  TlsPaths tls;   // for the remote daemons; like tokens, kept in the user's settings
  // Not 0: resume this run of the project (its variant only) from its newest checkpoint (or
  // the one of resumeStep), recording into it, instead of running every variant afresh.
  qint64 resumeRunId = 0;
  qint64 resumeStep = 0;
};

// What a node daemon says of itself (its GetInfo), as the GUI shows it.
struct NodeInfo {
  std::string address;
  std::string programVersion;
  std::string hostname;
  std::vector<std::string> devices;  // "cpu (1 slot)", "cuda:0 (NVIDIA H200, ...)"
  int workerThreads = 0;
  int cores = 0;
  bool busy = false;
  std::string jobOwner;  // while busy, who runs what there (empty: an older node)
  std::string jobRun;
  int waitingRuns = 0;  // runs queued for it (other people's, while it is busy)
  // The daemon's own emulation flags (a job from a topology gets the topology's instead).
  double speed = 1.0;
  double bandwidthMbps = 0.0;
  double latencyMs = 0.0;
};

// How far the current run is, sent at most every 100 ms.
struct RunProgress {
  QString variant;
  int variantIndex = 0;
  int variantCount = 0;
  qint64 step = 0;
  qint64 plannedSteps = 0;  // 0: unbounded (time or target limits)
  double loss = 0.0;
};

// The GUI's way to run experiments. The GUI only talks to this interface; the
// implementation works on a thread of its own and reports through queued signals carrying
// values, so no slot ever waits on the cluster.
class ExperimentController : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;
  ~ExperimentController() override = default;

  // Starts the request unless busy() (then returns false and changes nothing).
  virtual bool start(const RunRequest& request) = 0;
  // Asks the running variant to stop (the nodes stop together; remaining variants do not
  // start). A no-op when idle.
  virtual void cancel() = 0;
  virtual bool busy() const = 0;
  // The points of the running variant as they are measured (for live charts).
  virtual LiveFeed* liveFeed() = 0;

  // Node checks for the editors ("Test connection"). Both block, so call them off the GUI
  // thread (ui/background.h); both are safe to call from any thread, while a run goes on too.
  // Each throws dtlab::Error with a message a user can act on (unreachable, token refused,
  // another protocol, a daemon that would not start).
  // GetInfo on the daemon at `address` ("host:port"), with its token ("" for none), over
  // mutual TLS with `tls` unless it is empty.
  virtual NodeInfo queryNode(const std::string& address, const std::string& token,
                             const TlsPaths& tls) const = 0;
  // Starts the local daemons `cluster` describes, as a run would (its local nodes with their
  // emulation), asks each, stops them: one NodeInfo per local node, in order.
  virtual std::vector<NodeInfo> queryLocalNodes(const core::ClusterConfig& cluster) const = 0;

 signals:
  // The request's execution exists in the project (its id), before its first run.
  void executionStarted(qint64 executionId);
  // A variant's run exists in the project (its id), before its first step.
  void runStarted(qint64 runId, const QString& variant);
  void progress(const dtlab::ui::RunProgress& progress);
  // The started run waits for its nodes, which other runs hold: what it waits for ("waiting
  // for node0 (busy with bob@lab's run 'exp/sync', position 1 of 2)"), each time that changes,
  // and "" once it has them. cancel() leaves the queue.
  void waiting(const QString& what);
  // How the variant's run ended (kFailed: error set).
  void runFinished(qint64 runId, dtlab::core::RunStatus status, const QString& error);
  // The request ended (all variants, a cancel, or a failure before any run).
  void finished();
  // Something a user must be told: the cluster could not start, a node was lost, ...
  void problem(const QString& message);
  // A resume refused because its checkpoint is damaged (`message` names the part), while an
  // older checkpoint of the run, of `wholeStep`, verifies: the request may be made again
  // with resumeStep = wholeStep.
  void damagedCheckpoint(qint64 runId, qint64 wholeStep, const QString& message);
};

}  // namespace dtlab::ui

Q_DECLARE_METATYPE(dtlab::ui::RunProgress)
Q_DECLARE_METATYPE(dtlab::core::RunStatus)
