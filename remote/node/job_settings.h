#pragma once
// What StartJob decided for one rank of a job (remote/node/job.h runs it, job_group.h builds its
// collective group from it).
#include <chrono>
#include <string>
#include <vector>

#include "core/comm/allreduce_tuning.h"
#include "core/train/strategy.h"

namespace dtlab::remote {

// Everything a node needs to run its rank of one job (decided and validated by StartJob).
struct JobSettings {
  std::string jobId;
  std::string nodeName;           // for messages
  core::WorkerJob work;           // spec, variant, rank, world, speed, threads
  std::string rendezvousAddress;  // host:port of the daemon hosting the job's Rendezvous
  std::string token;              // sent to that daemon
  std::string collectiveAddress;  // local address Gloo binds and advertises to the peers
  double bandwidthMbps = 0.0;     // link emulation; 0 = unlimited
  double latencyMs = 0.0;
  // Some rank of the job emulates its link: this one wraps its collectives too and counts their
  // emulated time from the last rank's arrival (StartJobRequest.links_emulated).
  bool linksEmulated = false;
  std::chrono::milliseconds heartbeat{1000};
  std::chrono::milliseconds connectTimeout{30000};
  // Parameter-server strategies: the shards' daemons (host:port) and names, in shard order.
  std::vector<std::string> psAddresses;
  std::vector<std::string> psNames;
  // The daemon's all-reduce tunings, reused by later groups of the same hosts; may be null.
  core::AllReduceTuningCache* tuningCache = nullptr;
};

}  // namespace dtlab::remote
