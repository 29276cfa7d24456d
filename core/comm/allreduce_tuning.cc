#include "core/comm/allreduce_tuning.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/common/check.h"
#include "core/common/statistics.h"

namespace dtlab::core {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kSmallestTuned = int64_t{64} << 10;
constexpr int64_t kLargestTuned = int64_t{64} << 20;
// Rounds over all candidates; each candidate's figure is its median over them.
constexpr int kRounds = 3;
// Calls per timing: enough that a small message's timing is not all barrier exit, few enough
// that the pass stays short for large ones (64 MiB at 1 GB/s is 64 ms a call).
int callsPerTiming(int64_t bytes) {
  return static_cast<int>(std::clamp<int64_t>((int64_t{2} << 20) / bytes, 1, 8));
}

std::string gbPerS(double bytesPerSecond) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GB/s", bytesPerSecond * 1e-9);
  return text;
}

}  // namespace

double AllReduceTuning::SizeClass::bandwidth() const {
  const double s = best().seconds;
  return s > 0.0 ? static_cast<double>(bytes) / s : 0.0;
}

std::string AllReduceTuning::algorithmFor(int64_t bytes) const {
  if (sizes.empty()) return {};
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    const double boundary =
        std::sqrt(static_cast<double>(sizes[i].bytes) * static_cast<double>(sizes[i + 1].bytes));
    if (static_cast<double>(bytes) <= boundary) return sizes[i].best().algorithm;
  }
  return sizes.back().best().algorithm;
}

int64_t AllReduceTuning::bucketBytes(int64_t fallback) const {
  if (sizes.empty()) return fallback;
  double best = 0.0;
  for (const SizeClass& s : sizes) best = std::max(best, s.bandwidth());
  for (const SizeClass& s : sizes)
    if (s.bandwidth() >= kBucketBandwidthShare * best) return s.bytes;
  return sizes.back().bytes;
}

std::string AllReduceTuning::describe() const {
  if (sizes.empty()) return {};
  char head[64];
  std::snprintf(head, sizeof head, "all-reduce measured in %.2f s:", seconds);
  std::string out = head;
  // Runs of sizes with the same winner, each with the bandwidth at its largest size.
  for (std::size_t i = 0; i < sizes.size();) {
    std::size_t j = i;
    while (j + 1 < sizes.size() && sizes[j + 1].best().algorithm == sizes[i].best().algorithm) ++j;
    out += i == 0 ? " " : ", ";
    out += sizes[i].best().algorithm;
    out += ' ';
    out += byteSizeText(sizes[i].bytes);
    if (j > i) {
      out += '-';
      out += byteSizeText(sizes[j].bytes);
    }
    out += " (";
    out += gbPerS(sizes[j].bandwidth());
    out += ')';
    i = j + 1;
  }
  return out;
}

std::vector<int64_t> tuningSizes(int64_t maxBytes) {
  std::vector<int64_t> out;
  for (int64_t b = kSmallestTuned; b <= std::min(maxBytes, kLargestTuned); b *= 4) out.push_back(b);
  if (out.empty()) out.push_back(kSmallestTuned);
  return out;
}

AllReduceTuning measureAllReduce(const AllReduceProbe& probe, int64_t maxBytes) {
  DTLAB_ENFORCE(!probe.candidates.empty(), "no all-reduce algorithm to measure");
  const Clock::time_point begin = Clock::now();
  const std::vector<int64_t> sizes = tuningSizes(maxBytes);
  const int n = static_cast<int>(probe.candidates.size());
  std::vector<float> buffer(static_cast<std::size_t>(sizes.back() / sizeof(float)), 0.0f);
  // seconds[size][candidate][round], this rank's, then the slowest rank's.
  std::vector<float> seconds(sizes.size() * static_cast<std::size_t>(n * kRounds), 0.0f);
  auto at = [&](std::size_t size, int candidate, int round) -> float& {
    return seconds[(size * static_cast<std::size_t>(n) + static_cast<std::size_t>(candidate)) *
                       kRounds +
                   static_cast<std::size_t>(round)];
  };
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    const int64_t count = sizes[s] / static_cast<int64_t>(sizeof(float));
    const int calls = callsPerTiming(sizes[s]);
    // One untimed call each: connections, registrations and instances made before timing.
    for (int c = 0; c < n; ++c) probe.run(c, buffer.data(), count);
    for (int round = 0; round < kRounds; ++round) {
      for (int k = 0; k < n; ++k) {
        const int c = (k + round) % n;
        probe.barrier();
        const Clock::time_point t0 = Clock::now();
        for (int call = 0; call < calls; ++call) probe.run(c, buffer.data(), count);
        at(s, c, round) =
            static_cast<float>(std::chrono::duration<double>(Clock::now() - t0).count() / calls);
      }
    }
  }
  probe.maxOverRanks(seconds);

  AllReduceTuning tuning;
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    AllReduceTuning::SizeClass size;
    size.bytes = sizes[s];
    for (int c = 0; c < n; ++c) {
      std::vector<double> rounds;
      for (int round = 0; round < kRounds; ++round) rounds.push_back(at(s, c, round));
      size.candidates.push_back({probe.candidates[static_cast<std::size_t>(c)], median(rounds)});
      if (size.candidates.back().seconds < size.best().seconds) size.chosen = c;
    }
    tuning.sizes.push_back(std::move(size));
  }
  tuning.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  return tuning;
}

std::string byteSizeText(int64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (std::abs(value) >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (value == std::floor(value))
    std::snprintf(text, sizeof text, "%.0f %s", value, kUnits[unit]);
  else
    std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

}  // namespace dtlab::core
