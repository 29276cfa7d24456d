#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtlab::core {

// Heterogeneity-aware scheduling (the speed_proportional partition): every worker's share of
// the global batch follows its *measured* costs, never a configured speed (a real cluster has
// none to read). Every step each rank's times ride to all ranks in the gradient all-reduce's
// control block (StepCostWindow); every `rebalance_every` steps all ranks fit the same cost
// model to the same numbers and move to the same new slices (balancedCounts).

// What one rank's step costs in the scheduler's model, in ms. A rank first pays a fixed part
// that does not shrink with its slice (the update, the step's own bookkeeping), then computes
// its slice at its speed, handing its gradients over as backward goes (half of them once
// `halfFraction` of the compute is done). The step ends when the all-reduce does: when this
// rank is the last to finish, either `tailMs` after its backward (the last bucket's
// communication) or, when the communication cannot keep up, `commAfterHalfMs` after it handed
// over the first half (the second half's all-reduces). So with n samples at speed s the rank
// bounds the step at
//   fixed + max(n / s + tail, halfFraction * n / s + commAfterHalf)
// and the group's step is the largest bound over the ranks.
struct RankCost {
  double samplesPerS = 0.0;  // 0 (or not finite): not measured, counted as the slowest rank
  double fixedMs = 0.0;
  double tailMs = 0.0;
  double halfFraction = 1.0;     // in [0, 1]
  double commAfterHalfMs = 0.0;  // 0: the communication always keeps up
};

// The step `counts` are expected to take under `costs` (a rank with no samples still pays its
// fixed part and communication: it joins the all-reduce).
double expectedStepMs(const std::vector<RankCost>& costs, const std::vector<int64_t>& counts);

struct ShareProposal {
  std::vector<int64_t> counts;
  double stepMs = 0.0;  // expectedStepMs of counts
};

// The split of `global` samples with the shortest expected step: every rank with samples
// reaches the same bound, a rank whose bound with no samples already reaches it gets none.
// Integer counts by largest remainder, ties to the lower rank, so every rank computes the
// same answer from the same costs. With no fixed parts and no communication this is the
// proportional split (where no share rounds to zero).
ShareProposal balancedCounts(const std::vector<RankCost>& costs, int64_t global);

// Whether the group would step faster without one rank: the rank whose leaving shortens the
// expected step the most, and that step (the others share the batch; a rank left alone
// communicates nothing; fewer ranks move less each, as a ring all-reduce's 2(p-1)/p of the
// gradient). rank -1 when no rank's leaving is expected to save at least `minGain` (0.05: 5%).
struct LeaveOutProposal {
  int rank = -1;
  double stepMs = 0.0;
};
LeaveOutProposal leaveOutProposal(const std::vector<RankCost>& costs, int64_t global,
                                  double minGain = 0.05);

// One step's times on one rank (ms), as the control block carries them to every rank. Times
// count from the end of the previous step's all-reduce, which all ranks leave together.
struct RankStepTimes {
  double computeMs = 0.0;  // preparing the slice, forward and backward: scales with the slice
  double readyMs = 0.0;    // until the end of backward (the update and bookkeeping before)
  double stepMs = 0.0;     // until the end of this step's all-reduce
  double halfMs = 0.0;     // until backward had handed over half of the gradient
  // The all-reduces of the buckets from that half on, and of the last bucket, on this rank.
  double commAfterHalfMs = 0.0;
  double lastBucketMs = 0.0;
};
// Number of control-block floats RankStepTimes takes per rank.
inline constexpr int64_t kRankStepTimeSlots = 6;

// A rank's tail in one step: the part of its wait after the last rank's backward ended (the
// rest of its wait, if any, was for slower peers' compute).
double tailMs(const std::vector<RankStepTimes>& times, std::size_t rank);

// The costs of the steps since the last rebalance, from every rank's times: the same on every
// rank, so that all decide alike. Medians, so that an evaluation or a stall now and then does
// not move the model.
class StepCostWindow {
 public:
  explicit StepCostWindow(int world) : speeds_(static_cast<std::size_t>(world), 0.0) {}
  void add(const std::vector<int64_t>& counts, const std::vector<RankStepTimes>& times);
  bool empty() const { return steps_.empty(); }
  // Each rank's speed (the last window's where it had no samples in this one), fixed part
  // (ready minus compute), the fraction of its compute before half its gradient was handed
  // over, and its communication when it finished last (the last bucket's, the second half's:
  // medians of the steps it was last; where it never was, of the window's last ranks).
  // Starts the next window.
  std::vector<RankCost> takeCosts();
  // The median step the group measured in the window (before takeCosts).
  double measuredStepMs() const;

 private:
  struct Step {
    std::vector<int64_t> counts;
    std::vector<RankStepTimes> times;
  };
  std::vector<Step> steps_;
  std::vector<double> speeds_;
};

// Whether `proposed` differs from `current` by more than the dead band: some rank's slice moves
// by more than `deadBand` of the global batch. Below it, measurement noise would only shuffle
// samples between ranks for nothing.
bool outsideDeadBand(const std::vector<int64_t>& current, const std::vector<int64_t>& proposed,
                     double deadBand);

// "0.50,0.50" for the rebalance event.
std::string formatShares(const std::vector<int64_t>& counts);

// The first rebalance comes after this warm-up (or at rebalance_every, if that is sooner),
// the second as many steps later (the first rests on a single step's times), the later ones
// every rebalance_every steps. The first step is left out of the costs (it may pay first-touch
// costs: allocations, kernel selection), and a step's times reach the other ranks with the
// next step's control block: the third step is the first that knows the second's.
inline constexpr int64_t kWarmupSteps = 3;

// Before the first step every rank times a forward and backward pass of this many rows (of its
// slice at most), this many times after an untimed one at its slice's size (the first-touch
// costs the first step would pay); the fastest of each rank's gives the first shares.
inline constexpr int64_t kProbeRows = 64;
inline constexpr int kProbeRepeats = 2;

// The dead band the scheduler uses: 2% of the global batch.
inline constexpr double kShareDeadBand = 0.02;
// Nor does it move the shares when its model expects them to shorten the step by less than
// this (where the all-reduce bounds the step, balancing the compute gains nothing).
inline constexpr double kMinExpectedGain = 0.02;

}  // namespace dtlab::core
