#include "core/comm/comm_bench.h"

#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <climits>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "core/comm/gloo_mesh.h"
#include "core/common/check.h"
#include "core/common/statistics.h"

namespace dtlab::core {
namespace {

using Clock = std::chrono::steady_clock;

struct Side {
  std::string name;
  std::function<void()> allReduce;  // one in-place all-reduce of the benchmark's buffer
  std::vector<double> perCall;      // seconds, one entry per timed repetition
  int64_t wrong = 0;
};

// Largest number of back-to-back calls (at most kMaxCalls) whose final values
// n^(c-1) * (n(n-1)/2 + 6n) stay exact in float like every partial sum on the way: below
// 2^24 in general; for n a power of two every call only shifts the exponent of values that
// were exact after the first call (the partial sums v, 2v, 3v of a call are small integer
// multiples of that power of two), so far below float's range is enough. The more calls a
// repetition has, the less a few delayed wake-ups in it move its median: at 64 KiB on a
// shared 2-core VM, 8 calls gave per-call medians 10x their minima.
int callsPerRepetition(int n) {
  constexpr int kMaxCalls = 64;
  if (n == 1) return kMaxCalls;  // a single rank's values never change
  const bool powerOfTwo = (n & (n - 1)) == 0;
  const double exactLimit = powerOfTwo ? 0x1p100 : 0x1p24;
  const double largestSum = n * (n - 1) / 2.0 + 6.0 * n;
  int calls = 1;
  double growth = 1.0;
  while (calls < kMaxCalls && growth * n * largestSum < exactLimit) {
    growth *= n;
    ++calls;
  }
  return calls;
}

}  // namespace

AllReduceBenchResult benchAllReduce(Communicator& dtlab, gloo::rendezvous::Store& store,
                                    const AllReduceBenchConfig& config) {
  const int64_t count = config.bytes / static_cast<int64_t>(sizeof(float));
  DTLAB_ENFORCE(count >= 1 && config.warmup >= 0 && config.repetitions >= 1, "bytes ", config.bytes,
                ", warm-up ", config.warmup, ", repetitions ", config.repetitions);
  DTLAB_ENFORCE(count <= INT_MAX, "Gloo's classic algorithms count elements in an int: ", count);
  const int n = dtlab.size();
  const int rank = dtlab.rank();
  // Large messages need fewer calls for a repetition to outlast the barriers around it, and a
  // sweep up to 64 MiB on 4 ranks stays within minutes.
  const int calls = static_cast<int>(std::min<int64_t>(
      callsPerRepetition(n), std::max<int64_t>(1, (int64_t{64} << 20) / config.bytes)));

  // Declaration order is teardown order in reverse: the algorithms (whose buffers are
  // registered on the context's pairs) go before the context, the context before its device.
  std::vector<float> data(static_cast<size_t>(count));
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::vector<std::unique_ptr<gloo::Algorithm>> classic;
  std::unique_ptr<gloo::AllreduceOptions> unbound;

  std::vector<Side> sides;
  sides.push_back({config.dtlabName, [&] { dtlab.allReduceSum(data.data(), count); }, {}, 0});
  if (n > 1) {
    gloo::transport::tcp::attr attr;
    attr.hostname = config.interfaceAddress;
    device = gloo::transport::tcp::CreateDevice(attr);
    context = std::make_shared<gloo::rendezvous::Context>(rank, n);
    context->setTimeout(config.timeout);
    gloo::rendezvous::PrefixStore prefixed(config.keyPrefix, store);
    context->connectFullMesh(prefixed, device);
    // The sockets sized as DTLab's own group sizes them (a reference left to Gloo's first
    // messages would measure delayed ACKs, not its algorithms).
    warmUpSocketBuffers(context, config.timeout);

    // Constructed in the same order on every rank: each takes its slots from the context.
    const std::vector<float*> ptrs{data.data()};
    const int elements = static_cast<int>(count);
    const std::shared_ptr<gloo::Context> base = context;
    auto addClassic = [&](std::string name, std::unique_ptr<gloo::Algorithm> algorithm) {
      gloo::Algorithm* raw = algorithm.get();
      classic.push_back(std::move(algorithm));
      sides.push_back({std::move(name), [raw] { raw->run(); }, {}, 0});
    };
    addClassic("gloo ring", std::make_unique<gloo::AllreduceRing<float>>(base, ptrs, elements));
    addClassic("gloo ring_chunked",
               std::make_unique<gloo::AllreduceRingChunked<float>>(base, ptrs, elements));
    addClassic("gloo halving_doubling",
               std::make_unique<gloo::AllreduceHalvingDoubling<float>>(base, ptrs, elements));
    unbound = std::make_unique<gloo::AllreduceOptions>(context);
    unbound->setOutput(data.data(), static_cast<size_t>(count));
    unbound->setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    unbound->setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    unbound->setTimeout(config.timeout);
    sides.push_back({"gloo allreduce (ring)", [&] { gloo::allreduce(*unbound); }, {}, 0});
  }
  auto barrier = [&] {
    if (!context) return;
    gloo::BarrierOptions opts(context);
    opts.setTimeout(config.timeout);
    gloo::barrier(opts);
  };

  // After `calls` calls: n^(calls-1) * (n(n-1)/2 + n * (i % 7)).
  float scale = 1.0f;
  for (int c = 1; c < calls; ++c) scale *= static_cast<float>(n);
  const float base = static_cast<float>(n * (n - 1) / 2);
  const float self = static_cast<float>(rank);

  const int rounds = config.warmup + config.repetitions;
  const size_t sideCount = sides.size();
  for (int round = 0; round < rounds; ++round) {
    for (size_t k = 0; k < sideCount; ++k) {
      Side& side = sides[(static_cast<size_t>(round) + k) % sideCount];
      for (int64_t i = 0, j = 0; i < count; ++i, j = j == 6 ? 0 : j + 1)
        data[static_cast<size_t>(i)] = self + static_cast<float>(j);
      barrier();
      const Clock::time_point start = Clock::now();
      for (int c = 0; c < calls; ++c) side.allReduce();
      barrier();
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (round >= config.warmup) side.perCall.push_back(seconds / calls);
      for (int64_t i = 0, j = 0; i < count; ++i, j = j == 6 ? 0 : j + 1) {
        const float want = scale * (base + static_cast<float>(n) * static_cast<float>(j));
        if (data[static_cast<size_t>(i)] != want) ++side.wrong;
      }
    }
  }
  // A peer may still be reading the last barrier's message from us; closing our connections
  // now could fail it. One more barrier, whose own failure (a peer that closed first after
  // it) changes nothing measured.
  try {
    barrier();
  } catch (const std::exception&) {
  }

  AllReduceBenchResult result;
  result.bytes = count * static_cast<int64_t>(sizeof(float));
  result.ranks = n;
  result.repetitions = config.repetitions;
  result.callsPerRepetition = calls;
  for (const Side& side : sides) {
    AllReduceSideResult r;
    r.name = side.name;
    r.medianSeconds = median(side.perCall);
    r.minSeconds = *std::min_element(side.perCall.begin(), side.perCall.end());
    r.wrong = side.wrong;
    if (r.medianSeconds > 0.0) {
      r.algbwGBps = static_cast<double>(result.bytes) / r.medianSeconds / 1e9;
      r.busbwGBps = busBandwidthGBps(result.bytes, r.medianSeconds, n);
    }
    result.sides.push_back(std::move(r));
  }
  return result;
}

}  // namespace dtlab::core
