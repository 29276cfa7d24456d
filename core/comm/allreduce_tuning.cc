#include "core/comm/allreduce_tuning.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/common/check.h"
#include "core/common/statistics.h"

namespace dtlab::core {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kSmallestTuned = int64_t{64} << 10;
constexpr int64_t kLargestTuned = int64_t{64} << 20;
// Rounds over all candidates; each candidate's figure is its median over them. Five, not
// three: on a shared 2-core VM a candidate's figure moved by 1.5x between passes.
constexpr int kRounds = 5;
// Each timing runs back-to-back calls between two barriers (so whatever a call leaves to finish
// counts, as in `bench allreduce`), as many as take about this long by an untimed call (at
// least one, at most kMaxCalls): a small message's timing is then not mostly barrier, and the
// pass stays short for large ones (64 MiB at 1 GB/s is 64 ms a call). One call of 4 MiB with
// no closing barrier ranked 3-rank TCP candidates nearly in reverse of their steady rates; a
// closing barrier after a fixed 2 MiB of calls made a 20 us shared-memory call look like
// 0.3 ms. The closing barrier stays in each timing (a few percent of it, alike for every
// candidate at a size): a barrier timed alone is no better known than that.
constexpr double kTimingSeconds = 0.003;
constexpr int kMaxCalls = 1024;  // 3 ms of 64 KiB shared-memory calls is about 300
constexpr int kSizingCalls = 3;
constexpr int64_t kOneSizingCallBytes = int64_t{16} << 20;
// Where describe() states each size's time per call, and readTimedCalls finds it.
constexpr std::string_view kPerCall = "; per call";

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

std::size_t AllReduceTuning::sizeIndexFor(int64_t bytes) const {
  DTLAB_ENFORCE(!sizes.empty(), "no all-reduce size was measured");
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    const double boundary =
        std::sqrt(static_cast<double>(sizes[i].bytes) * static_cast<double>(sizes[i + 1].bytes));
    if (static_cast<double>(bytes) <= boundary) return i;
  }
  return sizes.size() - 1;
}

std::string AllReduceTuning::algorithmFor(int64_t bytes) const {
  return sizes.empty() ? std::string() : sizes[sizeIndexFor(bytes)].best().algorithm;
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
  char head[96];
  std::snprintf(head, sizeof head,
                reused ? "all-reduce as an earlier group on these hosts measured it (in %.2f s):"
                       : "all-reduce measured in %.2f s:",
                seconds);
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
  out += kPerCall;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    char time[48];
    std::snprintf(time, sizeof time, " %.3g ms at ", sizes[i].best().seconds * 1e3);
    out += i == 0 ? "" : ",";
    out += ' ';
    out += sizes[i].best().algorithm;
    out += time;
    out += byteSizeText(sizes[i].bytes);
  }
  return out;
}

AllReduceTuning readTimedCalls(std::string_view text) {
  AllReduceTuning out;
  const std::size_t at = text.find(kPerCall);
  if (at == std::string_view::npos) return out;
  std::string_view rest = text.substr(at + kPerCall.size());
  // " ALGORITHM T ms at SIZE", comma separated.
  while (rest.size() > 1 && rest.front() == ' ') {
    rest.remove_prefix(1);
    const std::size_t space = rest.find(' ');
    if (space == std::string_view::npos || space == 0) return {};
    std::string algorithm(rest.substr(0, space));
    rest.remove_prefix(space + 1);
    double ms = 0.0;
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), ms);
    if (error != std::errc() || !(ms >= 0.0)) return {};
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
    constexpr std::string_view kAt = " ms at ";
    if (rest.substr(0, kAt.size()) != kAt) return {};
    rest.remove_prefix(kAt.size());
    const std::optional<int64_t> bytes = parseByteSizeText(rest);
    if (!bytes || *bytes <= 0) return {};
    out.sizes.push_back({*bytes, {{std::move(algorithm), ms * 1e-3}}, 0});
    const std::size_t comma = rest.find(',');
    const std::size_t stop = rest.find_first_of(";)");
    if (comma == std::string_view::npos || (stop != std::string_view::npos && stop < comma)) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

std::vector<int64_t> tuningSizes(int64_t maxBytes) {
  std::vector<int64_t> out;
  for (int64_t b = kSmallestTuned; b <= std::min(maxBytes, kLargestTuned); b *= 4) out.push_back(b);
  if (out.empty()) out.push_back(kSmallestTuned);
  return out;
}

AllReduceTuning measureAllReduce(const AllReduceProbe& probe, float* scratch, int64_t count) {
  DTLAB_ENFORCE(!probe.candidates.empty(), "no all-reduce algorithm to measure");
  const Clock::time_point begin = Clock::now();
  const std::vector<int64_t> sizes = tuningSizes(count * static_cast<int64_t>(sizeof(float)));
  const int n = static_cast<int>(probe.candidates.size());
  const auto largest = static_cast<int64_t>(sizes.back() / sizeof(float));
  std::vector<float> own;
  if (scratch == nullptr || count < largest) {
    own.assign(static_cast<std::size_t>(largest), 0.0f);
    scratch = own.data();
  }
  // seconds[size][candidate][round] per call, this rank's, then the slowest rank's.
  std::vector<float> seconds(sizes.size() * static_cast<std::size_t>(n * kRounds), 0.0f);
  auto at = [&](std::size_t size, int candidate, int round) -> float& {
    return seconds[(size * static_cast<std::size_t>(n) + static_cast<std::size_t>(candidate)) *
                       kRounds +
                   static_cast<std::size_t>(round)];
  };
  auto since = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    const int64_t floats = sizes[s] / static_cast<int64_t>(sizeof(float));
    // Untimed calls (connections, registrations and instances are made in the first); the
    // fastest of the next kSizingCalls, the slowest rank's, sets the candidate's calls per
    // timing (one call alone, slowed by a wake-up, once left shm at 64 KiB 3 calls a timing,
    // mostly barrier, and it lost to TCP).
    // From 16 MiB a call takes about a timing or more on any transport measured (shm 8 GB/s
    // is 2 ms), so it is one call a timing whatever the others take: one sizing call, not
    // three (64 MiB over TCP is 60 ms a call). Decided by size, alike on every rank, since
    // every call is collective.
    const int sizingCalls = sizes[s] >= kOneSizingCallBytes ? 1 : kSizingCalls;
    std::vector<float> once(static_cast<std::size_t>(n));
    for (int c = 0; c < n; ++c) {
      probe.run(c, scratch, floats);
      double fastest = std::numeric_limits<double>::infinity();
      for (int k = 0; k < sizingCalls; ++k) {
        const Clock::time_point t0 = Clock::now();
        probe.run(c, scratch, floats);
        fastest = std::min(fastest, since(t0));
      }
      once[static_cast<std::size_t>(c)] = static_cast<float>(fastest);
    }
    const std::vector<float> everyOnce = probe.gather(once);
    std::vector<double> slowest(static_cast<std::size_t>(n), 1e-9);
    for (std::size_t i = 0; i < everyOnce.size(); ++i) {
      double& c = slowest[i % static_cast<std::size_t>(n)];
      c = std::max<double>(c, everyOnce[i]);
    }
    std::vector<int> calls;
    for (double one : slowest)
      calls.push_back(
          static_cast<int>(std::clamp(kTimingSeconds / one, 1.0, static_cast<double>(kMaxCalls))));
    for (int round = 0; round < kRounds; ++round) {
      for (int k = 0; k < n; ++k) {
        const int c = (k + round) % n;
        const int timed = calls[static_cast<std::size_t>(c)];
        probe.barrier();
        const Clock::time_point t0 = Clock::now();
        for (int call = 0; call < timed; ++call) probe.run(c, scratch, floats);
        probe.barrier();  // the slowest rank's last call is over
        at(s, c, round) = static_cast<float>(since(t0) / timed);
      }
    }
    if (probe.release) {
      probe.barrier();  // nobody is still in a call of this size
      probe.release();
    }
  }
  // The slowest rank's figures, so every rank decides alike.
  const std::vector<float> all = probe.gather(seconds);
  for (std::size_t i = 0; i < all.size(); ++i)
    seconds[i % seconds.size()] = std::max(seconds[i % seconds.size()], all[i]);

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

std::optional<AllReduceTuningCache::Entry> AllReduceTuningCache::find(
    const std::string& hosts) const {
  std::lock_guard lock(mutex_);
  const auto it = entries_.find(hosts);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void AllReduceTuningCache::store(const std::string& hosts, Entry entry) {
  std::lock_guard lock(mutex_);
  entries_[hosts] = std::move(entry);
}

namespace {

// FNV-1a, 64 bits.
uint64_t hashOf(const void* data, std::size_t bytes, uint64_t h = 1469598103934665603ull) {
  for (std::size_t i = 0; i < bytes; ++i) {
    h ^= static_cast<const unsigned char*>(data)[i];
    h *= 1099511628211ull;
  }
  return h;
}

// 48 bits of `value` as three floats holding 16 bits each (exact in float).
void appendChunks(std::vector<float>& out, uint64_t value) {
  for (int i = 0; i < 3; ++i) out.push_back(static_cast<float>((value >> (16 * i)) & 0xFFFF));
}

uint64_t chunksValue(const float* chunks) {
  uint64_t value = 0;
  for (int i = 0; i < 3; ++i) value |= static_cast<uint64_t>(chunks[i]) << (16 * i);
  return value;
}

}  // namespace

AllReduceTuning tuneAllReduce(const AllReduceProbe& probe, float* scratch, int64_t count,
                              AllReduceTuningCache* cache, const std::string& host) {
  if (cache == nullptr) return measureAllReduce(probe, scratch, count);
  // The group's hosts in rank order, as a key every rank computes alike.
  std::vector<float> mine;
  appendChunks(mine, hashOf(host.data(), host.size()));
  const std::vector<float> hosts = probe.gather(mine);
  std::string key;
  for (std::size_t i = 0; i < hosts.size(); i += 3) {
    key += key.empty() ? "" : ",";
    key += std::to_string(chunksValue(&hosts[i]));
  }
  const std::vector<int64_t> sizes = tuningSizes(count * static_cast<int64_t>(sizeof(float)));
  const std::optional<AllReduceTuningCache::Entry> cached = cache->find(key);
  const bool covers = cached && cached->tuning.sizes.size() >= sizes.size();
  // [has it, its pass]: reused only when every rank has the same pass.
  std::vector<float> state = {covers ? 1.0f : 0.0f};
  appendChunks(state, covers ? cached->pass : 0);
  const std::vector<float> states = probe.gather(state);
  bool reuse = true;
  for (auto rank = states.begin(); rank != states.end(); rank += 4)
    reuse = reuse && rank[0] == 1.0f && std::equal(rank + 1, rank + 4, state.begin() + 1);
  if (reuse) {
    AllReduceTuning tuning = cached->tuning;
    tuning.sizes.resize(sizes.size());  // what a pass up to `count` would have measured
    tuning.reused = true;
    return tuning;
  }
  AllReduceTuning tuning = measureAllReduce(probe, scratch, count);
  // Every rank holds the same figures (the slowest rank's), so their hash names the pass alike.
  uint64_t pass = hashOf(key.data(), key.size());
  for (const AllReduceTuning::SizeClass& s : tuning.sizes)
    for (const AllReduceTuning::Candidate& c : s.candidates)
      pass = hashOf(&c.seconds, sizeof c.seconds, pass);
  cache->store(key, {tuning, pass & 0xFFFFFFFFFFFFull});
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

std::optional<int64_t> parseByteSizeText(std::string_view text) {
  constexpr std::string_view kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data() || value < 0.0) return std::nullopt;
  std::string_view rest = text.substr(static_cast<std::size_t>(end - text.data()));
  if (rest.empty() || rest.front() != ' ') return std::nullopt;
  rest.remove_prefix(1);
  double scale = 1.0;
  for (std::string_view unit : kUnits) {
    if (rest.substr(0, unit.size()) == unit &&
        (rest.size() == unit.size() ||
         !std::isalpha(static_cast<unsigned char>(rest[unit.size()]))))
      return static_cast<int64_t>(std::llround(value * scale));
    scale *= 1024.0;
  }
  return std::nullopt;
}

}  // namespace dtlab::core
