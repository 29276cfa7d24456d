#pragma once
// The all-reduce of a group, measured on the group itself: which algorithm is fastest at each
// message size, and what that implies for gradient buckets. The winner moves with the machine
// and its load (Gloo's ring beat our own algorithm at 256 KiB on one day's VM and lost on the
// next), so a communicator that has several algorithms times them when its user asks, on the
// very connections it will use, instead of trusting a table measured elsewhere.

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtlab::core {

struct AllReduceTuning {
  struct Candidate {
    std::string algorithm;
    double seconds = 0.0;  // median per call over the rounds, the slowest rank's
  };
  struct SizeClass {
    int64_t bytes = 0;
    std::vector<Candidate> candidates;  // in the order measured
    int chosen = 0;                     // index of the fastest
    const Candidate& best() const { return candidates.at(static_cast<std::size_t>(chosen)); }
    // Bytes per second of the chosen algorithm (algorithm bandwidth: bytes / time).
    double bandwidth() const;
  };
  std::vector<SizeClass> sizes;  // ascending bytes; empty: nothing was measured
  double seconds = 0.0;          // what the pass itself took
  // Taken from an earlier group of the same hosts (AllReduceTuningCache), not measured now.
  bool reused = false;

  bool empty() const { return sizes.empty(); }
  // The algorithm for a message of `bytes`: that of the measured size nearest on a log scale
  // (below the smallest, the smallest; above the largest, the largest). Empty when untuned.
  std::string algorithmFor(int64_t bytes) const;
  // The index in `sizes` of that nearest size; the tuning must not be empty.
  std::size_t sizeIndexFor(int64_t bytes) const;
  // A gradient bucket size for this group: the smallest measured size whose bandwidth reaches
  // kBucketBandwidthShare of the best measured, so a bucket pays little per-call cost while
  // the buckets stay as small as that allows (the last one decides the step's tail).
  // `fallback` when nothing was measured.
  static constexpr double kBucketBandwidthShare = 0.75;
  int64_t bucketBytes(int64_t fallback) const;
  // One line for the run's "start" event, e.g. "all-reduce measured in 0.12 s: own 64 KiB-256
  // KiB (0.87 GB/s), gloo_allreduce 1 MiB (1.05 GB/s); per call own 0.099 ms at 64 KiB, own
  // 0.301 ms at 256 KiB, gloo_allreduce 0.999 ms at 1 MiB": the winners by size, then each
  // size's winning time (readTimedCalls reads them back). Empty when untuned.
  std::string describe() const;
};

// The tuning a text holding describe()'s line states: each measured size with its winner as
// its one candidate, at its time per call (empty when the text holds no such line, or a line
// from before the times were written). Runs say it in their start event's facts; this reads it
// from the sentences of runs recorded before events had facts (core/store/legacy_events.h).
AllReduceTuning readTimedCalls(std::string_view text);

// The measured sizes for messages up to `maxBytes`: 64 KiB, 256 KiB, 1 MiB, ... up to the last
// at most maxBytes (64 KiB when maxBytes is smaller), at most 64 MiB. Larger messages are in
// the bandwidth regime, where the largest size's winner stands for them.
std::vector<int64_t> tuningSizes(int64_t maxBytes);

// What measureAllReduce needs from a communicator with several algorithms. Every callback is
// collective, and every rank must be given the same candidates.
struct AllReduceProbe {
  std::vector<std::string> candidates;
  // One all-reduce (sum) of `count` floats at `data` with candidates[candidate].
  std::function<void(int candidate, float* data, int64_t count)> run;
  // Returns once every rank has entered it.
  std::function<void()> barrier;
  // Frees what the candidates built for the size just measured (may be empty).
  std::function<void()> release;
  // Every rank's `values` (the same count on each), rank after rank.
  std::function<std::vector<float>(const std::vector<float>& values)> gather;
};

// Tunings a process keeps between groups (a node daemon keeps one for its life), by the hosts
// of the group in rank order. Thread-safe.
class AllReduceTuningCache {
 public:
  struct Entry {
    AllReduceTuning tuning;
    uint64_t pass = 0;  // which pass measured it: the same on every rank of that group
  };
  std::optional<Entry> find(const std::string& hosts) const;
  void store(const std::string& hosts, Entry entry);

 private:
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
};

// Times every candidate at every size of tuningSizes(count * 4 bytes) in interleaved rounds (the
// order rotates, so a burst of load elsewhere hits all alike), each timing between two
// barriers around a few back-to-back calls, the slowest rank's time kept; the fastest median
// wins. Collective; every rank returns the same tuning.
// On `scratch` (count floats, overwritten; a smaller one than the smallest size is replaced
// by a buffer of that size), sizes up to count floats.
AllReduceTuning measureAllReduce(const AllReduceProbe& probe, float* scratch, int64_t count);

// measureAllReduce, or the tuning an earlier group of the same hosts in the same order measured
// when every rank still has it in `cache` from that same pass and it covers the count (the
// issue's "cached per host pair and size class": a pass per cluster, not per run). `host` is
// this rank's address as its peers reach it. Two small gathers decide, alike on every rank;
// a fresh measurement is stored. A null cache always measures.
AllReduceTuning tuneAllReduce(const AllReduceProbe& probe, float* scratch, int64_t count,
                              AllReduceTuningCache* cache, const std::string& host);

// "64 KiB", "1.5 MiB", "512 B".
std::string byteSizeText(int64_t bytes);
// Reads the start of `text` as byteSizeText wrote it ("64 KiB", "1.5 MiB"); nullopt when it is
// not such a size. One decimal is all the text keeps, so a size it rounded reads back rounded.
std::optional<int64_t> parseByteSizeText(std::string_view text);

}  // namespace dtlab::core
