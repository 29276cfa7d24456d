#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/comm/abort_signal.h"
#include "core/train/strategy.h"
#include "remote/node/job_buffer.h"
#include "remote/node/job_group.h"
#include "remote/node/job_settings.h"

namespace dtlab::remote {

// One job on this node: a thread that builds the collective group and calls runWorker, and
// a sampler thread that records the process's CPU and memory use every 500 ms.
//
// The job thread's steps:
//   1. world > 1 and a strategy with a collective group: its JobGroup's first group (a
//      RendezvousStore with keys "<job id>/..." on rendezvousAddress, a GlooCommunicator over
//      it that waits up to connectTimeout for every rank, wrapped in an
//      EmulatedLinkCommunicator when some rank's link is emulated; the JobGroup re-forms
//      it after a lost node when the variant continues); a parameter-server strategy's
//      client of the shards,
//   2. core::runWorker(work, comm, buffer, cancel flag),
//   3. stop the sampler, destroy the communicator (closes the TCP mesh),
//   4. buffer().finish(result) -- only now is the node free for the next job, so a
//      coordinator that saw the final WatchJob message can start the next one at once.
// Cancelling is polite first: the ranks stop together at the next step boundary. A rank
// blocked on a silent peer cannot get there, so an abort follows if the job has not ended
// within kCancelGrace, or at once when asked (the coordinator lost a node): it fails the
// pending collective (and with it the peers' collectives) and every wait of the group.
// Errors anywhere become a "failed" result with the message; nothing escapes the thread.
//
// The coordinator holds the job on a lease: its WatchJob streams. A job left without any
// stream for kLeaseGrace (its coordinator was killed, or its connection was closed by the
// server's keepalive when the coordinator's host or network went silent), or never watched
// within its connect timeout plus that grace, is aborted by the sampler thread, so an orphaned
// job frees its node within seconds. A coordinator that reconnects within the grace keeps it.
class Job {
 public:
  explicit Job(JobSettings settings);
  ~Job();  // cancels and waits for the threads
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  const std::string& id() const { return settings_.jobId; }
  const JobSettings& settings() const { return settings_; }
  JobBuffer& buffer() { return buffer_; }
  bool running() const { return !buffer_.finished(); }

  // How long a polite cancel may take before the job aborts its communication.
  static constexpr std::chrono::milliseconds kCancelGrace{2000};

  // Asks the job to stop at the next step boundary, or with abortNow to end its
  // communication at once; returns whether it was still running.
  bool cancel(bool abortNow = false, const std::string& why = "cancelled");
  bool cancelRequested() const { return cancel_.load(); }
  // The coordinator's word of who goes on after a lost node (RegroupJob); returns why it is
  // refused, "" when taken (JobGroup::notify).
  std::string regroup(const GroupNotice& notice);
  // Waits until the job thread has ended; false when it is still running after `timeout`
  // (e.g. stuck connecting to peers that never come).
  bool waitEnded(std::chrono::milliseconds timeout);

  // How long a job may go without a watcher (see the class comment).
  static constexpr std::chrono::milliseconds kLeaseGrace{5000};
  // A WatchJob stream began or ended (the WatchHub's streams call these).
  void watcherAttached();
  void watcherDetached();

 private:
  void run();
  void sampleLoop();
  // With mutex_ held: why the lease has lapsed ("" while it holds).
  std::string leaseLapsed(std::chrono::steady_clock::time_point now) const;
  core::WorkerResult runWithCommunicator();

  const JobSettings settings_;
  JobBuffer buffer_;
  std::atomic<bool> cancel_{false};
  core::AbortSignal abort_;
  // The collective group, for a strategy with one and more than one rank (else null).
  std::unique_ptr<JobGroup> group_;
  const std::chrono::steady_clock::time_point started_;

  std::mutex mutex_;
  std::condition_variable changed_;
  bool samplerStop_ = false;
  bool ended_ = false;
  std::optional<std::chrono::steady_clock::time_point> cancelledAt_;
  std::string cancelReason_;
  int watchers_ = 0;
  // When the last watcher left (empty: never watched yet).
  std::optional<std::chrono::steady_clock::time_point> unwatchedSince_;

  std::thread sampler_;
  std::thread thread_;
};

}  // namespace dtlab::remote
