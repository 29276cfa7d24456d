#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/optim/update_scalars.h"
#include "core/spec/experiment_spec.h"

namespace dtlab::core {

// A first-order optimizer over ONE flat parameter buffer.
//
// Why flat: every parameter of a model lives in one contiguous float buffer and its
// gradient in another, so an update is a single fused elementwise pass (one read of
// params, grads and state, one write) instead of a loop over small per-layer tensors.
// The optimizer state (momentum, moments) is flat too and indexed exactly like the
// parameters, which is what makes updates on ranges possible: the distributed runtime
// updates bucket [begin, end) as soon as that all-reduced gradient bucket arrives, and
// threads split a range between them, with no bookkeeping about which layer a range
// belongs to. The same flatness makes checkpoints a plain copy of state().
//
// Semantics are those of torch.optim (SGD, Adam, AdamW, Adadelta) with dampening 0, no
// amsgrad and no maximize. Every config value is used as given; in particular Adadelta
// uses config.eps, whose struct default (1e-8) is Adam's: PyTorch's Adadelta defaults
// (lr 1, eps 1e-6) are filled in by the spec parser, so a config built in code for
// Adadelta must set them itself. Each kernel performs PyTorch's CPU operations in PyTorch's
// order (lerp for Adam's first moment, sqrt(v)/sqrt(bc2)+eps, addcdiv, ...) and derives
// the per-step scalars (1-beta, bias corrections, lr/bc1, 1-lr*wd) in double from the
// decimal value the config float stands for, as Python does, so results agree with
// PyTorch to float rounding (not bitwise: FMA contraction may differ).
//
// Every element's result depends only on that element, never on where a range starts
// or ends: updating [0,k) then [k,n) is bitwise identical to updating [0,n) once.
class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // Allocates zeroed state for n parameters. Called once before the first update;
  // calling it again resets the state (a fresh optimizer).
  virtual void init(int64_t n) = 0;

  // Applies one update to params[begin, end) from grads[begin, end). Indices are into
  // the flat buffers; state is indexed the same way. `step` counts from 1 and must be
  // the same for every range of one optimizer step (Adam's bias correction uses it);
  // `lr` is this step's learning rate, already scheduled (see LrSchedule). Disjoint
  // ranges may be updated concurrently from different threads: update() writes only
  // params and state inside its range and never allocates.
  //
  // SGD momentum: PyTorch initialises the buffer to the first gradient (buf = g) rather
  // than applying buf = momentum*buf + g. With zeroed state and dampening 0 the two are
  // the same number, so no first-step special case is needed.
  virtual void update(float* params, const float* grads, int64_t begin, int64_t end, int64_t step,
                      float lr) = 0;

  // "sgd", "adam", "adamw" or "adadelta" (the JSON names of OptimizerKind).
  virtual const char* name() const = 0;

  // Number of parameters init() was called with; -1 before init().
  virtual int64_t size() const = 0;

  // Optimizer state as flat vectors of size() floats, in a fixed order per optimizer:
  //   sgd:      {momentum_buffer} (empty list when momentum == 0)
  //   adam(w):  {exp_avg, exp_avg_sq}
  //   adadelta: {square_avg, acc_delta}
  // The names are PyTorch's state keys, so a checkpoint maps one to one.
  virtual std::vector<std::span<const float>> state() const = 0;
  // The same buffers, writable: restoring a checkpoint or a parameter-server shard.
  virtual std::vector<std::span<float>> mutableState() = 0;
};

// The per-step scalars of an update (update_scalars.h), from the double each config float
// stands for, as PyTorch derives them; shared by the CPU and CUDA optimizers.
AdamScalars adamScalars(double beta1, double beta2, float eps, double weightDecay, bool decoupled,
                        int64_t step, float lr);
AdadeltaScalars adadeltaScalars(double rho, float eps, float weightDecay, float lr);
// Throws unless an optimizer of `size` parameters (-1: not initialised) may update [begin,
// end) at `step` (from 1).
void checkUpdateRange(int64_t size, int64_t begin, int64_t end, int64_t step);

// Validates config (see validateOptimizerConfig) and builds the optimizer of its kind.
std::unique_ptr<Optimizer> makeOptimizer(const OptimizerConfig& config);

// Throws SpecError naming the field ("optimizer.momentum: must be in [0, 1), got 1.5")
// for a value the chosen kind cannot use: lr and weight_decay for every kind, then
// sgd: momentum in [0, 1), nesterov needs momentum > 0; adam/adamw: beta1, beta2 in
// [0, 1), eps > 0; adadelta: rho in [0, 1), eps > 0; and the schedule (stepSize >= 1,
// gamma > 0, warmupSteps >= 0, minLr >= 0, scaleLrBaseBatch >= 1). Fields the kind does
// not use are not checked here. Paths use the JSON names (snake_case).
void validateOptimizerConfig(const OptimizerConfig& config);

}  // namespace dtlab::core
