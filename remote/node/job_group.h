#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/comm/abort_signal.h"
#include "core/comm/elastic_group.h"

namespace dtlab::remote {

struct JobSettings;
class RendezvousStore;

// Who goes on after a lost node (RegroupJob): the job's original ranks in the new group's
// order, meeting at `rendezvous`.
struct GroupNotice {
  uint32_t generation = 0;
  std::vector<int> members;
  std::string rendezvous;
};

// The collective group of one rank of a job: built over the rendezvous StartJob named (Gloo on
// the CPU, NCCL on a GPU, behind the link emulation when the node has one), and, for a variant
// that continues after a lost node, built again from the survivors the coordinator names.
//
// Each group has its own abort signal, fired by the job's abort and by a newer notice: a rank
// blocked on a stopped peer leaves the collective when the coordinator says who goes on, and
// a rendezvous that waits for a peer lost meanwhile gives up for the next notice.
class JobGroup final : public core::GroupRecovery {
 public:
  // `settings`, `jobAbort` and `cancel` must outlive the group.
  JobGroup(const JobSettings& settings, const core::AbortSignal& jobAbort,
           const std::atomic<bool>& cancel);
  ~JobGroup() override;
  JobGroup(const JobGroup&) = delete;
  JobGroup& operator=(const JobGroup&) = delete;

  static constexpr std::chrono::milliseconds kAbortPoll{100};

  // Whether the job's variant goes on without a lost node (on_node_loss "continue"): only
  // then is the group re-formed.
  bool continues() const { return continues_; }

  // The job's first group (every rank of StartJob). Throws what building it threw.
  std::unique_ptr<core::Communicator> first();
  // Records the coordinator's notice and ends the current group's pending collective. Returns
  // why it is refused ("" when taken): a variant that does not continue, a generation not
  // above the last, this rank not among the members.
  std::string notify(const GroupNotice& notice);
  // GroupRecovery: waits (up to the connect timeout) for a notice newer than the group in use
  // and joins it; the job's abort ends the wait with `cause` (within kAbortPoll).
  core::Regroup regroup(const core::CommError& cause) override;

 private:
  struct Generation;
  // A group of `world` ranks at `rendezvous`, this rank `rank` in it, its store and abort
  // kept in `g`.
  std::unique_ptr<core::Communicator> build(const std::string& rendezvous, int rank, int world,
                                            Generation& g);
  // With mutex_ held: a new generation, aborted with the job.
  Generation& addGeneration(uint32_t number);

  const JobSettings& settings_;
  const core::AbortSignal& jobAbort_;
  const std::atomic<bool>& cancel_;  // the job's: ends the first group's rendezvous
  const bool continues_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::unique_ptr<Generation>> generations_;
  GroupNotice latest_;   // the newest notice (generation 0: none yet)
  uint32_t joined_ = 0;  // the generation of the group in use
};

}  // namespace dtlab::remote
