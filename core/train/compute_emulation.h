#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "core/common/punctual_sleep.h"
#include "core/nn/model.h"
#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// A node's emulated heterogeneity applied to one worker's compute (its compute stretched to
// 1/speed of its real time), shared by every strategy:
//   - speed (and a speed_schedule): each layer's gradients are handed on no sooner than the
//     step's work so far would take at the node's speed (work / speed after the step began),
//     so a slow node's gradients really arrive late. When the backend computes on the calling
//     thread, work is that thread's CPU time: time the thread sat preempted or waking up
//     (other workers and communication threads share the cores) is not work, and it shows
//     only where it exceeds the slack the slowdown leaves, as it would on a slower device of
//     its own. With a thread team, work is wall time, contention included;
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
  // starts the clock the first hand-off is stretched from. A replica's first step (not
  // `warm`) is not stretched: its first-touch costs (allocations, kernel selection and code
  // generation, tens of milliseconds on a CPU) are this machine's, not training compute, and
  // stretched at a speed of 0.02 they would hold the node back for seconds.
  void beginStep(int64_t step, bool warm);
  // The same for a measurement before the first step (a scheduler's speed probe): stretched
  // at the first step's speed, with no straggler pause (those are drawn for steps).
  void beginProbe();
  void onGradientsReady(int64_t begin, int64_t end) override;

 private:
  const NodeConfig& node_;
  uint64_t seed_;
  int rank_;
  std::function<void(int64_t, int64_t)> next_;
  bool threadCpuTime_;
  using Clock = std::chrono::steady_clock;
  double slowdown_ = 1.0;        // 1 / speed
  Clock::time_point stepStart_;  // after the straggler pause
  double lastWork_ = 0.0;        // the work clock at the last hand-off (or the step's start)
  double workMs_ = 0.0;          // this step's work so far
  PunctualSleep sleep_;          // the hand-offs' waits

  double workClockMs() const;
  void startClock();
};

}  // namespace dtlab::core
