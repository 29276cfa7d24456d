#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/comm/communicator.h"

namespace dtlab::core {

// The event a group's leading rank records when the group went on without a lost rank (the
// coordinator reports it as the run's "recovery").
inline constexpr const char* kRegroupEvent = "regroup";

// A group formed again from the ranks that survived a lost one.
struct Regroup {
  std::unique_ptr<Communicator> comm;
  // The original ranks (of the job's first group) in the new group's rank order.
  std::vector<int> members;
  int generation = 0;  // 1 for the first group re-formed, 2 for the next...
};

// Where a rank learns who is left after a lost peer (on_node_loss "continue" of a strategy
// with a collective group): the node daemon hears it from the coordinator, which saw the node
// go. Implementations: remote/node (RegroupJob), the tests' in-process groups.
class GroupRecovery {
 public:
  virtual ~GroupRecovery() = default;
  // Called after a collective failed with `cause`: waits for word of the survivors and joins
  // their new group. Throws when there is none to join: `cause` when this rank was aborted
  // (cancel, a failing run), an Error when no word came in time.
  virtual Regroup regroup(const CommError& cause) = 0;
};

// A collective group that goes on without a lost rank. It is the Communicator the strategy and
// the loop use (forwarding to the current group, bytes counted over all of them); collectives
// that may be re-run after a loss go through collective().
//
// Every rank numbers its calls of collective(). When one throws CommError, the rank asks its
// GroupRecovery for the survivors' group, and the survivors exchange their numbers: those
// whose failed collective is the furthest along run it again on the new group; a rank that
// failed in an earlier one skips its collectives up to that number (the others completed them
// with the lost rank's data, and went on, so their stop votes said to go on). Skipping or
// re-running is the caller's: collective() returns false for a skipped call.
class ElasticGroup final : public Communicator {
 public:
  // `first`: the job's group, of `world` ranks, this rank `rank` in it (not owned).
  ElasticGroup(Communicator& first, int rank, int world, GroupRecovery& recovery);
  ~ElasticGroup() override;

  // Runs op on the current group, re-forming it as often as peers are lost; false: skipped.
  // op must be repeatable: it rebuilds its buffers from its inputs before communicating.
  bool collective(const std::function<void(Communicator&)>& op);

  // The original ranks of the current group, in its rank order.
  const std::vector<int>& members() const { return members_; }
  int generation() const { return generation_; }
  // Whether this rank is the current group's rank 0 (it evaluates and records the run's events).
  bool leads() const { return members_.front() == originalRank_; }

  int rank() const override { return current_->rank(); }
  int size() const override { return current_->size(); }
  bool deviceMemory() const override { return current_->deviceMemory(); }
  // Kept, and given to every later group too.
  void setComputeStream(void* stream) override;
  void prepareFences(int fenceCount) override;
  void markComputeFence(int slot) override { current_->markComputeFence(slot); }
  void allReduceAfterFence(float* data, int64_t count, bool average, int slot) override {
    current_->allReduceAfterFence(data, count, average, slot);
  }
  void allReduceAverage(float* data, int64_t count) override {
    current_->allReduceAverage(data, count);
  }
  void allReduceSum(float* data, int64_t count) override { current_->allReduceSum(data, count); }
  void allReduceSum16(uint16_t* data, int64_t count, HalfFormat format) override {
    current_->allReduceSum16(data, count, format);
  }
  void broadcast(float* data, int64_t count, int root) override {
    current_->broadcast(data, count, root);
  }
  void allGather(const float* in, int64_t count, float* out) override {
    current_->allGather(in, count, out);
  }
  void barrier() override { current_->barrier(); }
  int64_t bytesSent() const override { return retiredSent_ + current_->bytesSent(); }
  int64_t bytesReceived() const override { return retiredReceived_ + current_->bytesReceived(); }

 private:
  // Joins the survivors after `cause` and agrees on where to go on; returns whether this
  // rank's pending collective (number seq_) runs again.
  bool recover(const CommError& cause);

  Communicator* current_;
  std::unique_ptr<Communicator> owned_;  // a re-formed group; the first one is the caller's
  GroupRecovery& recovery_;
  const int originalRank_;
  std::vector<int> members_;
  int generation_ = 0;
  int64_t seq_ = 0;        // collective() calls so far
  int64_t skipUntil_ = 0;  // calls numbered below it are skipped
  int64_t retiredSent_ = 0;
  int64_t retiredReceived_ = 0;
  void* stream_ = nullptr;  // setComputeStream's, for the groups to come
  int fences_ = 0;          // prepareFences's
};

}  // namespace dtlab::core
