#include "core/comm/gloo_communicator.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/buffer.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include <signal.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/comm/gloo_group_state.h"
#include "core/comm/gloo_mesh.h"
#include "core/comm/shm_allreduce.h"
#include "core/common/check.h"

namespace dtlab::core {

namespace {

// Longest the destructor waits for the peers to reach theirs (see ~GlooCommunicator).
constexpr std::chrono::milliseconds kShutdownTimeout{10000};

constexpr size_t kMaxClassicInstances = 16;  // per (count, algorithm); see runClassic()

}  // namespace

void GlooGroupState::runClassic(AllReduceAlgorithm algorithm, float* data, int64_t count) {
  DTLAB_ENFORCE(count <= INT_MAX / static_cast<int64_t>(sizeof(float)),
                "Gloo's classic algorithms address at most 2 GiB: ", count, " floats");
  ClassicInstance* entry = nullptr;
  for (auto& candidate : classic) {
    if (candidate.algorithm == algorithm && candidate.count == count) entry = &candidate;
  }
  if (entry == nullptr) {
    if (classic.size() >= kMaxClassicInstances) {
      auto oldest = std::min_element(
          classic.begin(), classic.end(),
          [](const ClassicInstance& a, const ClassicInstance& b) { return a.lastUse < b.lastUse; });
      classic.erase(oldest);
    }
    ClassicInstance created;
    created.algorithm = algorithm;
    created.count = count;
    created.staging.assign(static_cast<size_t>(count), 0.0f);
    const std::vector<float*> ptrs{created.staging.data()};
    const int elements = static_cast<int>(count);
    std::shared_ptr<gloo::Context> base = context;
    switch (algorithm) {
      case AllReduceAlgorithm::kRing:
        created.instance = std::make_unique<gloo::AllreduceRing<float>>(base, ptrs, elements);
        break;
      case AllReduceAlgorithm::kRingChunked:
        created.instance =
            std::make_unique<gloo::AllreduceRingChunked<float>>(base, ptrs, elements);
        break;
      case AllReduceAlgorithm::kHalvingDoubling:
        created.instance =
            std::make_unique<gloo::AllreduceHalvingDoubling<float>>(base, ptrs, elements);
        break;
      default:
        DTLAB_ENFORCE(false, "not a classic Gloo algorithm: ", allReduceAlgorithmName(algorithm));
    }
    classic.push_back(std::move(created));
    entry = &classic.back();
  }
  entry->lastUse = ++useClock;
  std::memcpy(entry->staging.data(), data, static_cast<size_t>(count) * sizeof(float));
  entry->instance->run();
  std::memcpy(data, entry->staging.data(), static_cast<size_t>(count) * sizeof(float));
  // The ring variants send 2(n-1)/n of the buffer per rank; halving-doubling the same for
  // power-of-two groups. Good enough for the metric; the exact figure is Gloo's business.
  const int64_t bytes = count * static_cast<int64_t>(sizeof(float));
  bytesSent.fetch_add(2 * (size - 1) * bytes / size, std::memory_order_relaxed);
  bytesReceived.fetch_add(2 * (size - 1) * bytes / size, std::memory_order_relaxed);
}

void GlooGroupState::runGlooAllreduce(float* data, int64_t count) {
  gloo::AllreduceOptions opts(context);
  opts.setOutput(data, static_cast<size_t>(count));
  opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  opts.setReduceFunction(
      static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
  opts.setTimeout(options.opTimeout);
  gloo::allreduce(opts);
  const int64_t bytes = count * static_cast<int64_t>(sizeof(float));
  bytesSent.fetch_add(2 * (size - 1) * bytes / size, std::memory_order_relaxed);
  bytesReceived.fetch_add(2 * (size - 1) * bytes / size, std::memory_order_relaxed);
}

void GlooGroupState::runShared(float* data, int64_t count) {
  DTLAB_ENFORCE(shm != nullptr, "no shared memory for this group (", shmWhyNot, ")");
  shm->allReduceSum(data, count);
  // No byte leaves the host; counted as what a ring would exchange with the peers, so that a
  // run's bytes do not depend on where its ranks happen to be.
  const int64_t bytes = count * static_cast<int64_t>(sizeof(float));
  bytesSent.fetch_add(2 * (size - 1) * bytes / size, std::memory_order_relaxed);
  bytesReceived.fetch_add(2 * (size - 1) * bytes / size, std::memory_order_relaxed);
}

namespace {

// Gloo's TCP pairs write with writev, which raises SIGPIPE on a connection the peer closed (an
// aborted or lost rank): the default action would end the whole process where the write should
// fail as a CommError. So a process that forms a group ignores SIGPIPE, unless it chose a
// handler of its own (dtlab-node ignores it at start for the same reason).
void ignoreSigpipeUnlessHandled() {
  static const bool done = [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
      std::signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  static_cast<void>(done);
}

}  // namespace

GlooCommunicator::GlooCommunicator(gloo::rendezvous::Store& store, int rank, int size,
                                   const GlooOptions& options)
    : impl_(std::make_unique<GlooGroupState>()) {
  ignoreSigpipeUnlessHandled();
  DTLAB_ENFORCE(size >= 1, "group size must be positive: ", size);
  DTLAB_ENFORCE(rank >= 0 && rank < size, "rank ", rank, " outside a group of ", size);
  DTLAB_ENFORCE(options.connectTimeout.count() > 0 && options.opTimeout.count() > 0,
                "timeouts must be positive");
  GlooGroupState& impl = *impl_;
  impl.rank = rank;
  impl.size = size;
  impl.options = options;
  if (size == 1) return;  // nothing to connect; every collective is local

  if (options.abort != nullptr) {
    impl.registration = options.abort->onAbort([&impl](const std::string& reason) {
      impl.mesh.abort(reason);
      if (SharedMemoryAllReduce* shm = impl.shmForAbort.load()) shm->abort(reason);
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + options.connectTimeout;
  gloo::rendezvous::PrefixStore prefixed(options.keyPrefix, store);
  joinRendezvous(prefixed, rank, size, options.keyPrefix, options.connectTimeout, deadline);
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.interfaceAddress;
    impl.device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw Error(detail::concat("cannot bind the collective transport to '",
                               options.interfaceAddress, "' on rank ", rank,
                               " (is it an address of this host?): ", e.what()));
  }
  impl.context = std::make_shared<MeshContext>(rank, size);
  // Pairs take this as their timeout when created: every wait on a bound buffer (ours and
  // Gloo's classic algorithms') uses it. The unbound collectives get opTimeout explicitly.
  impl.context->setTimeout(options.opTimeout);
  impl.context->adopt(
      impl.device, impl.mesh.connect(prefixed, impl.device, rank, size, options.opTimeout,
                                     options.connectTimeout, deadline, options.interfaceAddress));
  impl.guarded([] { return std::string("warming up the connections"); }, [&] { impl.setUpOwn(); });
  if (!options.sharedMemory) {
    impl.shmWhyNot = "turned off";
    return;
  }
  impl.guarded([] { return std::string("setting up the shared-memory all-reduce"); },
               [&] {
                 impl.shm = SharedMemoryAllReduce::create(prefixed, rank, size, deadline,
                                                          options.opTimeout, &impl.shmWhyNot);
               });
  impl.shmForAbort.store(impl.shm.get());
  if (!impl.shm && options.allReduceAlgorithm == AllReduceAlgorithm::kSharedMemory)
    throw Error(detail::concat("all-reduce algorithm 'shm' on rank ", rank,
                               ": no shared memory for this group (", impl.shmWhyNot, ")"));
  // An abort that fired while the segment was being set up found no segment to mark.
  if (impl.shm && impl.mesh.aborted()) impl.shm->abort(impl.mesh.abortReason());
}

GlooCommunicator::~GlooCommunicator() {
  GlooGroupState& impl = *impl_;
  if (impl.size == 1 || impl.context == nullptr || !impl.brokenBy.empty() || impl.mesh.aborted())
    return;
  // A peer may still be collecting the last collective's data from us, and Gloo fails even
  // a wait whose data has already arrived once the pair has seen the other side close. So
  // nobody closes before everybody is done: a barrier, bounded so that a peer that is gone
  // or slow to shut down costs at most kShutdownTimeout. Its failure changes nothing.
  try {
    gloo::BarrierOptions opts(impl.context);
    opts.setTimeout(std::min(impl.options.opTimeout, kShutdownTimeout));
    gloo::barrier(opts);
  } catch (const std::exception&) {
    // Shutting down anyway.
  }
}

int GlooCommunicator::rank() const {
  return impl_->rank;
}
int GlooCommunicator::size() const {
  return impl_->size;
}

int GlooCommunicator::collectivesUnderWay() const {
  return impl_->underWay.load();
}

int64_t GlooCommunicator::bytesSent() const {
  return impl_->bytesSent.load(std::memory_order_relaxed);
}

int64_t GlooCommunicator::bytesReceived() const {
  return impl_->bytesReceived.load(std::memory_order_relaxed);
}

// Auto selection follows tuneAllReduce once it ran. Before (groups nobody tuned: tests, small
// collectives) a rule from busbw on loopback on the 2-core machine (2026-11): ours ahead with 2
// ranks; from 4 MiB with 3+ ranks Gloo's segmented ring (neighbour-only traffic contends less
// on few cores). The winner between 256 KiB and 4 MiB moved with the day and load: runs tune.
AllReduceAlgorithm GlooCommunicator::algorithmFor(int64_t count) const {
  if (impl_->options.allReduceAlgorithm != AllReduceAlgorithm::kAuto) {
    return impl_->options.allReduceAlgorithm;
  }
  if (!impl_->tuning.empty())
    return impl_->tunedAlgorithms[impl_->tuning.sizeIndexFor(count * int64_t{sizeof(float)})];
  constexpr int64_t kRingFromBytes = int64_t{4} << 20;
  if (impl_->size >= 3 && count * static_cast<int64_t>(sizeof(float)) >= kRingFromBytes) {
    return AllReduceAlgorithm::kGlooAllreduce;
  }
  return AllReduceAlgorithm::kOwn;
}

void GlooCommunicator::allReduceSum(float* data, int64_t count) {
  DTLAB_ENFORCE(count >= 0, "negative element count: ", count);
  DTLAB_ENFORCE(count == 0 || data != nullptr, "null buffer for ", count, " floats");
  if (impl_->size == 1 || count == 0) return;
  allReduceWith(algorithmFor(count), data, count);
}

void GlooCommunicator::allReduceSum16(uint16_t* data, int64_t count, HalfFormat format) {
  DTLAB_ENFORCE(count >= 0, "negative element count: ", count);
  DTLAB_ENFORCE(count == 0 || data != nullptr, "null buffer for ", count, " halves");
  GlooGroupState& impl = *impl_;
  if (impl.size == 1 || count == 0) return;
  using Reduce = void (*)(void*, const void*, const void*, size_t);
  const Reduce reduce =
      format == HalfFormat::kFp16
          ? static_cast<Reduce>([](void* c, const void* a, const void* b, size_t n) {
              addHalves(HalfFormat::kFp16, static_cast<const uint16_t*>(a),
                        static_cast<const uint16_t*>(b), static_cast<uint16_t*>(c),
                        static_cast<int64_t>(n));
            })
          : static_cast<Reduce>([](void* c, const void* a, const void* b, size_t n) {
              addHalves(HalfFormat::kBf16, static_cast<const uint16_t*>(a),
                        static_cast<const uint16_t*>(b), static_cast<uint16_t*>(c),
                        static_cast<int64_t>(n));
            });
  impl.guarded(
      [&] {
        return detail::concat("all-reduce (ring) of ", count, " ", toString(format), " values");
      },
      [&] {
        gloo::AllreduceOptions opts(impl.context);
        opts.setOutput(data, static_cast<size_t>(count));
        opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
        opts.setReduceFunction(reduce);
        opts.setTimeout(impl.options.opTimeout);
        gloo::allreduce(opts);
      });
  const int64_t bytes = count * static_cast<int64_t>(sizeof(uint16_t));
  impl.bytesSent.fetch_add(2 * (impl.size - 1) * bytes / impl.size, std::memory_order_relaxed);
  impl.bytesReceived.fetch_add(2 * (impl.size - 1) * bytes / impl.size, std::memory_order_relaxed);
}

void GlooCommunicator::allReduceWith(AllReduceAlgorithm algorithm, float* data, int64_t count) {
  GlooGroupState& impl = *impl_;
  impl.guarded(
      [&] {
        return detail::concat("all-reduce (", allReduceAlgorithmName(algorithm), ") of ", count,
                              " floats");
      },
      [&] {
        switch (algorithm) {
          case AllReduceAlgorithm::kOwn:
          case AllReduceAlgorithm::kAuto:
            impl.runOwn(data, count);
            break;
          case AllReduceAlgorithm::kGlooAllreduce:
            impl.runGlooAllreduce(data, count);
            break;
          case AllReduceAlgorithm::kSharedMemory:
            impl.runShared(data, count);
            break;
          default:
            impl.runClassic(algorithm, data, count);
        }
      });
}

std::vector<AllReduceAlgorithm> GlooCommunicator::bitIdenticalAlgorithms() {
  return {AllReduceAlgorithm::kOwn, AllReduceAlgorithm::kGlooAllreduce,
          AllReduceAlgorithm::kHalvingDoubling, AllReduceAlgorithm::kSharedMemory};
}

std::vector<AllReduceAlgorithm> GlooCommunicator::tunedCandidates() const {
  std::vector<AllReduceAlgorithm> candidates = bitIdenticalAlgorithms();
  if (!impl_->shm) std::erase(candidates, AllReduceAlgorithm::kSharedMemory);
  return candidates;
}

bool GlooCommunicator::hasSharedMemory() const {
  return impl_->shm != nullptr;
}

const std::string& GlooCommunicator::sharedMemoryWhyNot() const {
  return impl_->shmWhyNot;
}

AllReduceTuning GlooCommunicator::tuneAllReduce(float* scratch, int64_t count) {
  GlooGroupState& impl = *impl_;
  if (impl.size == 1 || impl.options.allReduceAlgorithm != AllReduceAlgorithm::kAuto) return {};
  const std::vector<AllReduceAlgorithm> candidates = tunedCandidates();
  AllReduceProbe probe;
  for (AllReduceAlgorithm a : candidates) probe.candidates.emplace_back(allReduceAlgorithmName(a));
  probe.run = [&](int candidate, float* data, int64_t count) {
    allReduceWith(candidates[static_cast<std::size_t>(candidate)], data, count);
  };
  probe.barrier = [this] { barrier(); };
  // Each size's classic instances (staging buffers of that size) go before the next size;
  // every rank drops them at the same point, and their slots are never reused.
  probe.release = [&] { impl.classic.clear(); };
  probe.gather = [&](const std::vector<float>& values) {
    std::vector<float> all(values.size() * static_cast<std::size_t>(impl.size));
    allGather(values.data(), static_cast<int64_t>(values.size()), all.data());
    return all;
  };
  const int64_t sentBefore = impl.bytesSent.load();
  const int64_t receivedBefore = impl.bytesReceived.load();
  // A group with the shared-memory path measures other winners than one of the same hosts
  // without it (another network namespace on the same addresses, or the path turned off).
  impl.tuning =
      core::tuneAllReduce(probe, scratch, count, impl.options.tuningCache,
                          impl.options.interfaceAddress + (impl.shm ? " (shared memory)" : ""));
  impl.bytesSent.store(sentBefore);
  impl.bytesReceived.store(receivedBefore);
  impl.tunedAlgorithms.clear();  // names parsed once here, not on every all-reduce
  for (const AllReduceTuning::SizeClass& s : impl.tuning.sizes)
    impl.tunedAlgorithms.push_back(parseAllReduceAlgorithm(s.best().algorithm));
  return impl.tuning;
}

void GlooCommunicator::broadcast(float* data, int64_t count, int root) {
  DTLAB_ENFORCE(count >= 0, "negative element count: ", count);
  DTLAB_ENFORCE(root >= 0 && root < impl_->size, "broadcast root ", root, " outside a group of ",
                impl_->size);
  DTLAB_ENFORCE(count == 0 || data != nullptr, "null buffer for ", count, " floats");
  GlooGroupState& impl = *impl_;
  if (impl.size == 1 || count == 0) return;
  impl.guarded([&] { return detail::concat("broadcast of ", count, " floats from rank ", root); },
               [&] {
                 gloo::BroadcastOptions opts(impl.context);
                 opts.setOutput(data, static_cast<size_t>(count));
                 opts.setRoot(root);
                 opts.setTimeout(impl.options.opTimeout);
                 gloo::broadcast(opts);
               });
  // Gloo broadcasts along a binomial tree (gloo/broadcast.cc): count this rank's sends.
  const int n = impl.size;
  const int virtualRank = (impl.rank - root + n) % n;
  int children = 0;
  int dim = 0;
  while ((1 << dim) < n) ++dim;
  int mask = (1 << dim) - 1;
  for (int i = 0; i < dim; ++i) {
    mask ^= 1 << i;
    if ((virtualRank & mask) != 0) continue;
    const int virtualPeer = virtualRank ^ (1 << i);
    if (virtualPeer >= n) continue;
    if ((virtualRank & (1 << i)) == 0) ++children;
  }
  impl.bytesSent.fetch_add(children * count * static_cast<int64_t>(sizeof(float)),
                           std::memory_order_relaxed);
  if (virtualRank != 0)  // everyone but the root receives the buffer once, from its parent
    impl.bytesReceived.fetch_add(count * static_cast<int64_t>(sizeof(float)),
                                 std::memory_order_relaxed);
}

void GlooCommunicator::allGather(const float* in, int64_t count, float* out) {
  DTLAB_ENFORCE(count >= 0, "negative element count: ", count);
  DTLAB_ENFORCE(count == 0 || (in != nullptr && out != nullptr), "null buffer for ", count,
                " floats");
  GlooGroupState& impl = *impl_;
  const int64_t total = count * impl.size;
  DTLAB_ENFORCE(count == 0 || in + count <= out || out + total <= in,
                "all-gather input and output overlap");
  if (count == 0) return;
  if (impl.size == 1) {
    std::memcpy(out, in, static_cast<size_t>(count) * sizeof(float));
    return;
  }
  impl.guarded([&] { return detail::concat("all-gather of ", count, " floats per rank"); },
               [&] {
                 gloo::AllgatherOptions opts(impl.context);
                 opts.setInput(const_cast<float*>(in), static_cast<size_t>(count));
                 opts.setOutput(out, static_cast<size_t>(total));
                 opts.setTimeout(impl.options.opTimeout);
                 gloo::allgather(opts);
               });
  impl.bytesSent.fetch_add((impl.size - 1) * count * static_cast<int64_t>(sizeof(float)),
                           std::memory_order_relaxed);
  impl.bytesReceived.fetch_add((impl.size - 1) * count * static_cast<int64_t>(sizeof(float)),
                               std::memory_order_relaxed);
}

void GlooCommunicator::barrier() {
  GlooGroupState& impl = *impl_;
  if (impl.size == 1) return;
  impl.guarded([] { return std::string("barrier"); },
               [&] {
                 gloo::BarrierOptions opts(impl.context);
                 opts.setTimeout(impl.options.opTimeout);
                 gloo::barrier(opts);
               });
}

}  // namespace dtlab::core
