#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include "ui/controller/experiment_controller.h"
#include "ui/controller/live_feed.h"

namespace dtlab::ui {

// ExperimentController over real node daemons: a local cluster it starts itself, or given
// nodes, coordinated by remote::Coordinator on a worker thread; every variant is recorded
// into the project through core::RunRecording (so the store is the GUI's source of truth and
// other readers see the run live).
class ClusterController final : public ExperimentController {
  Q_OBJECT
 public:
  explicit ClusterController(QObject* parent = nullptr);
  ~ClusterController() override;  // cancels and waits for the worker thread

  bool start(const RunRequest& request) override;
  void cancel() override;
  bool busy() const override { return busy_.load(); }
  LiveFeed* liveFeed() override { return &feed_; }
  NodeInfo queryNode(const std::string& address, const std::string& token,
                     const TlsPaths& tls) const override;
  std::vector<NodeInfo> queryLocalNodes(const core::ClusterConfig& cluster) const override;

 private:
  void work(RunRequest request);

  LiveFeed feed_;
  std::atomic<bool> busy_{false};
  std::atomic<bool> cancel_{false};
  std::thread worker_;
};

// The versions of the libraries the cluster code runs on ("gRPC 1.51.1, ..."), for the About box.
std::vector<std::string> clusterLibraryVersions();

}  // namespace dtlab::ui
