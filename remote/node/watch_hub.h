#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <grpcpp/support/server_callback.h>

#include "remote/node/job.h"
#include "remote/proto/dtlab.pb.h"

namespace dtlab::remote {

// Drives every open WatchJob stream from one thread, so no gRPC callback thread ever waits
// for metrics and the training thread never touches gRPC.
//
// Per stream, at most one write is in flight. Every 20 ms (and whenever a write completes)
// the hub thread visits each idle stream and
//   a. writes the points its cursor has not seen, at most kMaxPointsPerUpdate per message,
//   b. or, when there are none, an empty heartbeat once `heartbeat` has passed since the
//      last write,
//   c. once the job has finished and the cursor has drained, the final update (finished,
//      result), and after that write completes, Finish(OK).
// A failed write or OnCancel means the watcher went away: the stream finishes CANCELLED;
// the job itself is unaffected (the coordinator decides about cancelling). Streams are
// deleted by the hub thread after gRPC's OnDone.
class WatchHub {
 public:
  WatchHub();
  ~WatchHub();
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  // The reactor for one WatchJob call on `job`.
  grpc::ServerWriteReactor<proto::JobUpdate>* watch(std::shared_ptr<Job> job);
  // Streams not yet done (OnDone not yet called).
  std::size_t openStreams() const;
  // Waits until every stream is done, up to `timeout`; returns whether they all are.
  bool waitAllDone(std::chrono::milliseconds timeout) const;
  // Stops the hub thread; call after the server has shut down (no stream is left open).
  void stop();

 private:
  class Stream;
  void wake();
  void loop();

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  bool wake_ = false;
  bool stop_ = false;
  std::vector<Stream*> streams_;
  std::thread thread_;
};

}  // namespace dtlab::remote
