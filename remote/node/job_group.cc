#include "remote/node/job_group.h"

#include <gloo/rendezvous/prefix_store.h>

#include <algorithm>
#include <chrono>

#include "core/backend/cuda_plugin.h"
#include "core/comm/emulated_link_communicator.h"
#include "core/comm/gloo_communicator.h"
#include "core/comm/shm_allreduce.h"
#include "core/common/log.h"
#include "core/train/strategy_registry.h"
#include "remote/node/job_settings.h"
#include "remote/rendezvous_store.h"

namespace dtlab::remote {

struct JobGroup::Generation {
  uint32_t number = 0;
  core::AbortSignal abort;
  std::atomic<bool> stale{false};  // ends the rendezvous of this generation
  core::AbortSignal::Registration withJob;
  std::unique_ptr<RendezvousStore> store;
};

JobGroup::JobGroup(const JobSettings& settings, const core::AbortSignal& jobAbort,
                   const std::atomic<bool>& cancel)
    : settings_(settings),
      jobAbort_(jobAbort),
      cancel_(cancel),
      continues_(core::nodeLossPolicy(settings.work.spec.variants.at(static_cast<std::size_t>(
                     settings.work.variant))) == core::NodeLossPolicy::kContinue) {}

JobGroup::~JobGroup() = default;

JobGroup::Generation& JobGroup::addGeneration(uint32_t number) {
  auto g = std::make_unique<Generation>();
  g->number = number;
  Generation* raw = g.get();
  g->withJob = jobAbort_.onAbort([raw](const std::string& why) {
    raw->stale.store(true);
    raw->abort.abort(why);
  });
  generations_.push_back(std::move(g));
  return *raw;
}

std::unique_ptr<core::Communicator> JobGroup::build(const std::string& rendezvous, int rank,
                                                    int world, Generation& g) {
  const core::WorkerJob& work = settings_.work;
  RendezvousStoreOptions storeOptions;
  storeOptions.address = rendezvous;
  storeOptions.token = settings_.token;
  storeOptions.keyPrefix = settings_.jobId;
  storeOptions.timeout = settings_.connectTimeout;
  // A cancelled job stops waiting for the first group's peers; a later group's wait ends
  // when a newer notice (or the job's abort) makes it stale.
  storeOptions.cancel = g.number == 0 ? &cancel_ : &g.stale;
  g.store = std::make_unique<RendezvousStore>(storeOptions);
  // Each generation's keys apart: a later group never reads an earlier one's addresses.
  const std::string suffix = g.number == 0 ? "" : "-g" + std::to_string(g.number);
  std::unique_ptr<core::Communicator> comm;
  if (work.device != "cpu") {
    // GPU workers: NCCL, its id through the same rendezvous (one rank per GPU).
    core::NcclOptions ncclOptions;
    ncclOptions.device = core::cudaDeviceIndex(work.device);
    ncclOptions.interfaceAddress = settings_.collectiveAddress;
    ncclOptions.keyPrefix = "nccl" + suffix;
    ncclOptions.connectTimeout = settings_.connectTimeout;
    ncclOptions.abort = &g.abort;
    comm = core::makeNcclCommunicator(*g.store, rank, world, ncclOptions);
  } else {
    core::GlooOptions glooOptions;
    glooOptions.interfaceAddress = settings_.collectiveAddress;
    glooOptions.keyPrefix = "gloo" + suffix;
    glooOptions.connectTimeout = settings_.connectTimeout;
    glooOptions.abort = &g.abort;
    glooOptions.tuningCache = settings_.tuningCache;
    comm = std::make_unique<core::GlooCommunicator>(*g.store, rank, world, glooOptions);
  }
  if (settings_.linksEmulated || settings_.bandwidthMbps > 0.0 || settings_.latencyMs > 0.0) {
    // The exchange of arrivals in shared memory where every rank is on this machine, network
    // namespaces or not (otherwise, and for device buffers, it goes with the collectives).
    std::unique_ptr<core::SharedMemoryAllReduce> exchange;
    if (settings_.linksEmulated && world > 1 && !comm->deviceMemory()) {
      gloo::rendezvous::PrefixStore prefixed("links" + suffix, *g.store);
      std::string whyNot;
      exchange = core::SharedMemoryAllReduce::create(
          prefixed, rank, world, std::chrono::steady_clock::now() + settings_.connectTimeout,
          core::GlooOptions{}.opTimeout, &whyNot, /*acrossNetworkNamespaces=*/true);
      if (!exchange)
        logAt(LogLevel::kInfo, "job ", settings_.jobId,
              ": the link emulation's exchange goes over the group's transport (", whyNot, ")");
    }
    comm = std::make_unique<core::EmulatedLinkCommunicator>(
        std::move(comm), settings_.bandwidthMbps, settings_.latencyMs, &g.abort,
        settings_.linksEmulated, std::nullopt, std::move(exchange));
  }
  return comm;
}

std::unique_ptr<core::Communicator> JobGroup::first() {
  Generation* g = nullptr;
  {
    std::lock_guard lock(mutex_);
    g = &addGeneration(0);
  }
  return build(settings_.rendezvousAddress, settings_.work.rank, settings_.work.world, *g);
}

std::string JobGroup::notify(const GroupNotice& notice) {
  const int rank = settings_.work.rank;
  if (!continues_)
    return "job " + settings_.jobId +
           " does not go on after a lost node (its variant's "
           "on_node_loss is not \"continue\")";
  if (std::find(notice.members.begin(), notice.members.end(), rank) == notice.members.end())
    return "rank " + std::to_string(rank) + " of job " + settings_.jobId +
           " runs here and is not among the members";
  std::lock_guard lock(mutex_);
  if (notice.generation <= latest_.generation)
    return "generation " + std::to_string(notice.generation) + " is not above " +
           std::to_string(latest_.generation);
  latest_ = notice;
  // The group in use (and a rendezvous under way) ends now: its rank joins the new one.
  for (const std::unique_ptr<Generation>& g : generations_) {
    g->stale.store(true);
    g->abort.abort("the group re-forms without a lost node (generation " +
                   std::to_string(notice.generation) + ")");
  }
  changed_.notify_all();
  return {};
}

core::Regroup JobGroup::regroup(const core::CommError& cause) {
  for (;;) {
    GroupNotice notice;
    Generation* g = nullptr;
    {
      std::unique_lock lock(mutex_);
      // Notices wake the wait; the job's abort (a lost lease, the coordinator's abort: this
      // rank was the one left behind) is polled, as its handlers must not take mutex_.
      const auto deadline = std::chrono::steady_clock::now() + settings_.connectTimeout;
      bool heard = false;
      while (!jobAbort_.aborted() && !(heard = latest_.generation > joined_) &&
             std::chrono::steady_clock::now() < deadline)
        changed_.wait_for(lock, kAbortPoll);
      if (jobAbort_.aborted()) throw cause;  // the run ends: there is nothing to join
      if (!heard)
        throw Error(std::string(cause.what()) + "; the coordinator named no survivors within " +
                    std::to_string(settings_.connectTimeout.count()) + " ms");
      notice = latest_;
      joined_ = notice.generation;
      g = &addGeneration(notice.generation);
    }
    const int rank = static_cast<int>(
        std::find(notice.members.begin(), notice.members.end(), settings_.work.rank) -
        notice.members.begin());
    const int world = static_cast<int>(notice.members.size());
    logAt(LogLevel::kInfo, "job ", settings_.jobId, ": rank ", settings_.work.rank, " joins group ",
          notice.generation, " as rank ", rank, " of ", world, " at ", notice.rendezvous);
    try {
      return {build(notice.rendezvous, rank, world, *g), notice.members,
              static_cast<int>(notice.generation)};
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex_);
      // Another node lost while this group met: the newer notice is the one to join.
      if (jobAbort_.aborted() || latest_.generation <= joined_)
        throw Error("node " + settings_.nodeName + " (rank " + std::to_string(settings_.work.rank) +
                    ") could not join group " + std::to_string(notice.generation) + " at " +
                    notice.rendezvous + ": " + e.what());
    }
  }
}

}  // namespace dtlab::remote
