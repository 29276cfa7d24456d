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

// What one rank's step costs in the scheduler's model, in ms: a fixed part that does not
// shrink with the slice (the update, the step's own bookkeeping), the slice at the rank's
// speed, and the tail: the communication still to do after the rank's backward ends when it
// is the last to finish (what it needs to hand its last gradients over). The group's step is
// the slowest rank's fixed + count / speed + tail.
struct RankCost {
  double samplesPerS = 0.0;  // 0 (or not finite): not measured, counted as the slowest rank
  double fixedMs = 0.0;
  double tailMs = 0.0;
};

// The step `counts` are expected to take under `costs` (a rank with no samples still pays its
// fixed part and tail: it joins the all-reduce).
double expectedStepMs(const std::vector<RankCost>& costs, const std::vector<int64_t>& counts);

struct ShareProposal {
  std::vector<int64_t> counts;
  double stepMs = 0.0;  // expectedStepMs of counts
};

// The split of `global` samples with the shortest expected step: every rank with samples
// ends at the same time (fixed + count / speed + tail equal), a rank whose fixed part and tail
// alone reach that time gets none. Integer counts by largest remainder, ties to the lower
// rank, so every rank computes the same answer from the same costs. With no fixed parts and
// no tails this is the proportional split (where no share rounds to zero).
ShareProposal balancedCounts(const std::vector<RankCost>& costs, int64_t global);

// Whether the group would step faster without one rank: the rank whose leaving shortens the
// expected step the most, and that step (the others share the batch; a rank left alone has no
// tail). rank -1 when no rank's leaving is expected to save at least `minGain` (0.05: 5%).
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
};
// Number of control-block floats RankStepTimes takes per rank.
inline constexpr int64_t kRankStepTimeSlots = 3;

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
  // (ready minus compute) and tail (the steps it finished last; where it never did, the
  // window's median tail). Starts the next window.
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
// the later ones every rebalance_every steps. The first step is left out of the costs (it pays
// first-touch costs: allocations, kernel selection), and a step's times reach the other ranks
// with the next step's control block: the third step is the first that knows the second's.
inline constexpr int64_t kWarmupSteps = 3;

// The dead band the scheduler uses: 2% of the global batch.
inline constexpr double kShareDeadBand = 0.02;

}  // namespace dtlab::core
