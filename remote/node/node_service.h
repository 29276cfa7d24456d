#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/backend/backend.h"
#include "remote/node/job.h"
#include "remote/node/node_options.h"
#include "remote/node/parameter_service.h"
#include "remote/node/rendezvous_table.h"
#include "remote/node/reservation_queue.h"
#include "remote/node/staged_checkpoints.h"
#include "remote/node/watch_hub.h"
#include "remote/proto/dtlab.grpc.pb.h"

namespace dtlab::remote {

// The NodeService of one dtlab-node: runs at most one job at a time and streams its
// metrics.
//
// Every call is checked, in order: bearer token (UNAUTHENTICATED), protocol_version
// (FAILED_PRECONDITION naming both versions), then field sizes and ranges (INVALID_ARGUMENT
// naming the field). Then:
//   GetInfo   what the coordinator needs to plan: versions, devices, emulated speed and
//             link, load, busy/job id, capabilities {"gloo", "sync_allreduce"}, cores.
//   StartJob  parses the spec (a SpecError's message, which names the field path, becomes
//             INVALID_ARGUMENT), checks variant/rank/world_size/addresses, and refuses with
//             FAILED_PRECONDITION "node <name> is busy with job <id>" while a job runs
//             (FAILED_PRECONDITION rather than RESOURCE_EXHAUSTED: retrying does not help
//             until the caller cancels or waits for that job). A job id that already ran
//             here is ALREADY_EXISTS (ids are unique per run, and its rendezvous keys would
//             be stale). On success it clears other jobs' rendezvous keys and starts the
//             Job thread; the reply does not wait for the collective group. For a
//             parameter-server variant it needs ps_addresses (one per shard), and a node
//             whose rank is below their number installs its shard's blocks first.
//   StageCheckpoint  a checkpoint in parts for a job about to start from it (see
//             StagedCheckpoints); StartJob with resume_staged takes it, FAILED_PRECONDITION
//             when none was staged for that job id.
//   WatchJob  NOT_FOUND unless job_id is the current or last job; otherwise a stream (see
//             WatchHub) ending with one update that has finished = true and the result. The
//             last job's result stays watchable until the next StartJob.
//   CancelJob sets the job's cancel flag (it stops at the next step boundary with status
//             cancelled); was_running says whether it was still running. An unknown or
//             finished job id is not an error (was_running = false), so a coordinator can
//             cancel everywhere without tracking who already stopped.
//   RegroupJob tells every rank of the job here who goes on after a lost node (the job's
//             original ranks in the new group's order) and where the new group meets; a
//             rank that is not among them, or a generation not above the last, is
//             INVALID_ARGUMENT. An unknown or finished job is not an error (was_running =
//             false).
//   Ping      the node's wall clock in unix ms.
//   Reserve   a run's place in the node's queue (see ReserveRequest): the reservation that
//             holds the node committed may start jobs (StartJobRequest.reservation_id); a
//             StartJob without one is refused while any reservation holds or waits.
class NodeService final : public proto::NodeService::CallbackService {
 public:
  // listenHost: the host the node listens on (the default collective address).
  NodeService(const NodeOptions& options, std::string listenHost, RendezvousTable& rendezvous,
              WatchHub& hub, ParameterTable& parameters);
  ~NodeService() override;

  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context,
                                    const proto::GetInfoRequest* request,
                                    proto::NodeInfo* response) override;
  grpc::ServerUnaryReactor* StartJob(grpc::CallbackServerContext* context,
                                     const proto::StartJobRequest* request,
                                     proto::StartJobResponse* response) override;
  grpc::ServerReadReactor<proto::CheckpointPart>* StageCheckpoint(
      grpc::CallbackServerContext* context, proto::StageCheckpointResponse* response) override;
  grpc::ServerWriteReactor<proto::JobUpdate>* WatchJob(
      grpc::CallbackServerContext* context, const proto::WatchJobRequest* request) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* context,
                                      const proto::CancelJobRequest* request,
                                      proto::CancelJobResponse* response) override;
  grpc::ServerUnaryReactor* RegroupJob(grpc::CallbackServerContext* context,
                                       const proto::RegroupJobRequest* request,
                                       proto::RegroupJobResponse* response) override;
  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* context,
                                 const proto::PingRequest* request,
                                 proto::PingResponse* response) override;
  grpc::ServerUnaryReactor* Reserve(grpc::CallbackServerContext* context,
                                    const proto::ReserveRequest* request,
                                    proto::ReserveResponse* response) override;

  // Shutdown, step 1: refuse new jobs and cancel the running ones. Returns them (the ranks of
  // the current job on this node) so the caller can wait for them.
  std::vector<std::shared_ptr<Job>> beginShutdown();

  // How the node names itself in messages; set once the port is known.
  void setName(std::string name);
  std::string name() const;

 private:
  // StartJob in its steps: the request's fields, the spec against this node, the
  // parameter-server shards, the job's settings, and the job installed in its slot.
  grpc::Status startJob(const proto::StartJobRequest& request);
  grpc::Status checkStartRequest(const proto::StartJobRequest& request) const;
  grpc::Status parseStartSpec(const proto::StartJobRequest& request,
                              core::ExperimentSpec& spec) const;
  grpc::Status prepareShards(const proto::StartJobRequest& request,
                             const core::ExperimentSpec& spec, JobSettings& settings,
                             std::shared_ptr<core::ParameterHost>& shardHost) const;
  void fillJobSettings(const proto::StartJobRequest& request, core::ExperimentSpec spec,
                       JobSettings& settings) const;
  grpc::Status installJob(const proto::StartJobRequest& request, JobSettings settings,
                          std::shared_ptr<core::ParameterHost> shardHost);
  grpc::Status reserve(const proto::ReserveRequest& request, proto::ReserveResponse& response);
  // Whether `request` may start a job on this node as the reservations stand; under mutex_.
  grpc::Status checkReservationLocked(const proto::StartJobRequest& request);
  void fillInfo(proto::NodeInfo& info);
  // Worker slots for a spec's device: one per GPU for "cuda", --devices cpu:N for "cpu".
  int slotsFor(const core::ExperimentSpec& spec) const;
  // The rank of job `id` in `slot`, or null. Under mutex_.
  std::shared_ptr<Job> jobAt(const std::string& id, int slot) const;
  // Whether a rank of the current job still runs; under mutex_.
  bool anyRunning() const;

  const NodeOptions options_;
  // --advertise, else a specific --listen host, else "" (see NodeInfo.advertise_host).
  std::string advertiseHost() const;

  const std::string listenHost_;
  RendezvousTable& rendezvous_;
  ParameterTable& parameters_;
  WatchHub& hub_;
  // Every job's group measures its all-reduce once per set of hosts, for the daemon's life.
  core::AllReduceTuningCache tuningCache_;
  StagedCheckpoints staged_;

  mutable std::mutex mutex_;
  std::string name_;
  // The current job's ranks on this node by slot (null where it has none), running or the last
  // one's (their results stay readable).
  std::string jobId_;
  std::string jobOwner_;  // StartJobRequest.owner and run_name of jobId_
  std::string jobRun_;
  std::chrono::steady_clock::time_point jobStarted_;
  // "alice@lab's run 'exp/sync' (job J), running for 12 s" (or less where the coordinator
  // said less); under mutex_.
  std::string runningJobLocked() const;
  std::vector<std::shared_ptr<Job>> jobs_;
  ReservationQueue reservations_;
  bool shuttingDown_ = false;
};

}  // namespace dtlab::remote
