#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtlab::core {

// Heterogeneity-aware scheduling (the speed_proportional partition): every worker's share of
// the global batch follows its *measured* speed, never a configured one (a real cluster has
// none to read). Each rank smooths its own speed; every `rebalance_every` steps the ranks
// exchange their estimates and all compute the same new slices from the same numbers.

// Integer slice sizes proportional to `speeds` that sum to `global`, each at least 1 (largest
// remainder; ties go to the lower rank, so every rank computes the same answer).
std::vector<int64_t> proportionalCounts(const std::vector<double>& speeds, int64_t global);

// Whether `proposed` differs from `current` by more than the dead band: some rank's slice moves
// by more than `deadBand` of the global batch. Below it, measurement noise would only shuffle
// samples between ranks for nothing.
bool outsideDeadBand(const std::vector<int64_t>& current, const std::vector<int64_t>& proposed,
                     double deadBand);

// "0.50,0.50" for the rebalance event.
std::string formatShares(const std::vector<int64_t>& counts);

// One rank's speed in samples per second of compute, as an exponential moving average of its
// steps (the first step sets it).
class SpeedEstimate {
 public:
  explicit SpeedEstimate(double weight = 0.3) : weight_(weight) {}
  void add(int64_t samples, double computeMs);
  double samplesPerS() const { return value_; }
  // Continues from an earlier estimate (a resumed run).
  void restart(double samplesPerS) { value_ = samplesPerS; }

 private:
  double weight_;
  double value_ = 0.0;
};

// The first rebalance comes after this warm-up (or at rebalance_every, if that is sooner),
// the later ones every rebalance_every steps; the first step is left out of the speed
// estimate (it pays first-touch costs: allocations, kernel selection).
inline constexpr int64_t kWarmupSteps = 2;

// The dead band the scheduler uses: 2% of the global batch.
inline constexpr double kShareDeadBand = 0.02;

}  // namespace dtlab::core
