#pragma once

#include <cstdint>
#include <functional>

#include "core/nn/mlp.h"
#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// A node's emulated heterogeneity applied to one worker's compute (DESIGN.md: "compute is
// stretched to 1/speed of its real time"), shared by every strategy:
//   - speed (and a speed_schedule): before each layer's gradients are handed on, the compute
//     since the previous hand-off is stretched, so a slow node's gradients really arrive late.
//     When the backend computes on the calling thread, the compute is that thread's CPU time:
//     time the thread sat preempted (other workers or communication threads on the same
//     cores) is real delay, passed on once, not multiplied by 1/speed as if it were work.
//     With a thread team it is wall time, contention included;
//   - straggler pauses: at the start of a step, with the node's probability, drawn from the
//     run's seed, the rank and the step (reproducible), inside the compute window.
// Pass it as the GradientListener of Worker::computeGradients; `next` (the gradient buckets of
// an all-reduce, or nothing) hears every hand-off after the stretch.
class ComputeEmulation final : public GradientListener {
 public:
  // computesOnThisThread: the backend runs its kernels on the calling thread (one thread).
  ComputeEmulation(const NodeConfig& node, uint64_t seed, int rank, bool computesOnThisThread)
      : node_(node), seed_(seed), rank_(rank), threadCpuTime_(computesOnThisThread) {}

  void setNext(std::function<void(int64_t begin, int64_t end)> next) { next_ = std::move(next); }
  // Call right before forward: takes the step's speed, pauses if this step straggles, and
  // starts the clock the first hand-off is stretched from.
  void beginStep(int64_t step);
  void onGradientsReady(int64_t begin, int64_t end) override;

 private:
  const NodeConfig& node_;
  uint64_t seed_;
  int rank_;
  std::function<void(int64_t, int64_t)> next_;
  bool threadCpuTime_;
  double stretch_ = 0.0;
  double lastMs_ = 0.0;  // the clock at the last hand-off (or the step's start)

  double nowMs() const;
};

}  // namespace dtlab::core
