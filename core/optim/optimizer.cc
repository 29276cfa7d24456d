#include "core/optim/optimizer.h"

#include <cmath>
#include <cstring>
#include <sstream>
#include <string>

#include "core/common/check.h"
#include "core/common/simd_lanes.h"
#include "core/optim/decimal_value.h"
#include "core/tensor/tensor.h"

namespace dtlab::core {
namespace {

// ---------------------------------------------------------------------------------
// Lane groups
//
// Every kernel writes its element math once, on a group of lanes (GCC/Clang vector
// extension: arithmetic is elementwise and a scalar operand is broadcast), and
// forEachLaneGroup runs it over a range. Two reasons not to leave this to plain loops:
//
// * GCC does not vectorize std::sqrt without -fno-math-errno (sqrtf may set errno, so
//   the loop keeps a library call), and the build does not pass that flag; sqrt here
//   goes through an intrinsic instead.
// * Bitwise reproducibility across range splits. An auto-vectorized loop runs the
//   vector body on most elements and a scalar epilogue on the rest, and the compiler may
//   contract a*b+c into an FMA in one and not the other (it did for AdamW). Then an
//   element's result would depend on where a bucket or thread boundary falls, and
//   replicas whose threads split the buffer differently would drift apart. Instead the
//   tail is copied into a zero-padded lane group and runs the very same code.

// Runs body(param, grad, stateA, stateB) on each lane group of [begin, end): param and
// the first kStates state vectors are read and written back, grad is read. Unused state
// pointers may be null.
template <int kStates, typename Body>
inline void forEachLaneGroup(float* __restrict params, const float* __restrict grads,
                             float* __restrict stateA, float* __restrict stateB, int64_t begin,
                             int64_t end, Body&& body) {
  auto group = [&](float* p, const float* g, float* a, float* b) {
    Lanes param = loadLanes(p);
    Lanes a0{}, b0{};
    if constexpr (kStates >= 1) a0 = loadLanes(a);
    if constexpr (kStates >= 2) b0 = loadLanes(b);
    body(param, loadLanes(g), a0, b0);
    storeLanes(p, param);
    if constexpr (kStates >= 1) storeLanes(a, a0);
    if constexpr (kStates >= 2) storeLanes(b, b0);
  };
  int64_t i = begin;
  for (; i + kLaneCount <= end; i += kLaneCount)
    group(params + i, grads + i, kStates >= 1 ? stateA + i : nullptr,
          kStates >= 2 ? stateB + i : nullptr);
  const int64_t rest = end - i;
  if (rest > 0) {
    // Padding lanes hold zeros, which every kernel maps to finite values.
    float p[kLaneCount] = {}, g[kLaneCount] = {}, a[kLaneCount] = {}, b[kLaneCount] = {};
    const std::size_t bytes = static_cast<std::size_t>(rest) * sizeof(float);
    std::memcpy(p, params + i, bytes);
    std::memcpy(g, grads + i, bytes);
    if constexpr (kStates >= 1) std::memcpy(a, stateA + i, bytes);
    if constexpr (kStates >= 2) std::memcpy(b, stateB + i, bytes);
    group(p, g, a, b);
    std::memcpy(params + i, p, bytes);
    if constexpr (kStates >= 1) std::memcpy(stateA + i, a, bytes);
    if constexpr (kStates >= 2) std::memcpy(stateB + i, b, bytes);
  }
}

// ---------------------------------------------------------------------------------
// State

class FlatState {
 public:
  void reset(int count, int64_t n) {
    DTLAB_ENFORCE(n >= 0, "optimizer init: negative parameter count ", n);
    n_ = n;
    buffers_.clear();
    for (int k = 0; k < count; ++k) buffers_.emplace_back(1, n);  // zero-filled, 64B-aligned
  }
  int64_t size() const { return n_; }
  float* data(int k) { return buffers_[k].data(); }
  void checkRange(int64_t begin, int64_t end, int64_t step) const {
    checkUpdateRange(n_, begin, end, step);
  }
  std::vector<std::span<const float>> spans() const {
    std::vector<std::span<const float>> out;
    for (const Tensor& t : buffers_) out.push_back(t.span());
    return out;
  }
  std::vector<std::span<float>> mutableSpans() {
    std::vector<std::span<float>> out;
    for (Tensor& t : buffers_) out.push_back(t.span());
    return out;
  }

 private:
  int64_t n_ = -1;
  std::vector<Tensor> buffers_;
};

// ---------------------------------------------------------------------------------
// SGD (torch.optim.SGD, dampening 0):
//   d = g + wd*p;  buf = buf*momentum + d;  d = nesterov ? d + momentum*buf : buf;
//   p = p + (-lr)*d

template <bool kMomentum, bool kNesterov, bool kWeightDecay>
void sgdKernel(float* params, const float* grads, float* momentumBuffer, int64_t begin, int64_t end,
               float momentum, float weightDecay, float negLr) {
  auto body = [=](Lanes& p, Lanes g, Lanes& buf, Lanes&) {
    Lanes d = g;
    if constexpr (kWeightDecay) d = d + weightDecay * p;
    if constexpr (kMomentum) {
      buf = buf * momentum + d;
      if constexpr (kNesterov) {
        d = d + momentum * buf;
      } else {
        d = buf;
      }
    }
    p = p + negLr * d;
  };
  forEachLaneGroup<kMomentum ? 1 : 0>(params, grads, momentumBuffer, nullptr, begin, end, body);
}

class Sgd final : public Optimizer {
 public:
  explicit Sgd(const OptimizerConfig& config)
      : momentum_(config.momentum), nesterov_(config.nesterov), weightDecay_(config.weightDecay) {}

  void init(int64_t n) override { state_.reset(momentum_ != 0.0f ? 1 : 0, n); }

  void update(float* params, const float* grads, int64_t begin, int64_t end, int64_t step,
              float lr) override {
    state_.checkRange(begin, end, step);
    using Kernel = void (*)(float*, const float*, float*, int64_t, int64_t, float, float, float);
    // [momentum, nesterov][weight decay]; nesterov without momentum is rejected at validation.
    static constexpr Kernel kKernels[3][2] = {
        {sgdKernel<false, false, false>, sgdKernel<false, false, true>},
        {sgdKernel<true, false, false>, sgdKernel<true, false, true>},
        {sgdKernel<true, true, false>, sgdKernel<true, true, true>}};
    const int variant = momentum_ == 0.0f ? 0 : (nesterov_ ? 2 : 1);
    float* buf = variant == 0 ? nullptr : state_.data(0);
    kKernels[variant][weightDecay_ != 0.0f](params, grads, buf, begin, end, momentum_, weightDecay_,
                                            -lr);
  }

  const char* name() const override { return "sgd"; }
  int64_t size() const override { return state_.size(); }
  std::vector<std::span<const float>> state() const override { return state_.spans(); }
  std::vector<std::span<float>> mutableState() override { return state_.mutableSpans(); }

 private:
  float momentum_;
  bool nesterov_;
  float weightDecay_;
  FlatState state_;
};

// ---------------------------------------------------------------------------------
// Adam / AdamW (torch.optim.Adam, torch.optim.AdamW, single-tensor path):
//   adamw: p = p * (1 - lr*wd)            adam: g = g + wd*p
//   m = lerp(m, g, 1 - beta1)             (PyTorch's lerp: two forms, split at 0.5)
//   v = v*beta2 + (1 - beta2)*g*g
//   p = p + (-lr/bc1) * m / (sqrt(v)/sqrt(bc2) + eps),   bc_k = 1 - beta_k^step

template <bool kDecoupled, bool kWeightDecay, bool kLowLerpWeight>
void adamKernel(float* params, const float* grads, float* expAvg, float* expAvgSq, int64_t begin,
                int64_t end, const AdamScalars& s) {
  auto body = [&s](Lanes& p, Lanes g, Lanes& m, Lanes& v) {
    if constexpr (kDecoupled) {
      if constexpr (kWeightDecay) p = p * s.decayFactor;
    } else if constexpr (kWeightDecay) {
      g = g + s.weightDecay * p;
    }
    if constexpr (kLowLerpWeight) {
      m = m + s.w1 * (g - m);
    } else {
      m = g - (g - m) * s.oneMinusW1;
    }
    v = v * s.beta2 + s.w2 * g * g;
    const Lanes denom = sqrtOf(v) / s.bc2Sqrt + s.eps;
    p = p + s.negStepSize * m / denom;
  };
  forEachLaneGroup<2>(params, grads, expAvg, expAvgSq, begin, end, body);
}

class Adam final : public Optimizer {
 public:
  Adam(const OptimizerConfig& config, bool decoupled)
      : decoupled_(decoupled),
        beta1_(decimalValue(config.beta1)),
        beta2_(decimalValue(config.beta2)),
        eps_(config.eps),
        weightDecay_(decimalValue(config.weightDecay)) {}

  void init(int64_t n) override { state_.reset(2, n); }

  void update(float* params, const float* grads, int64_t begin, int64_t end, int64_t step,
              float lr) override {
    state_.checkRange(begin, end, step);
    const AdamScalars s = adamScalars(beta1_, beta2_, eps_, weightDecay_, decoupled_, step, lr);
    const bool wd = weightDecay_ != 0.0;
    const bool low = s.lowLerpWeight;
    using Kernel =
        void (*)(float*, const float*, float*, float*, int64_t, int64_t, const AdamScalars&);
    // [decoupled][weight decay][low lerp weight]
    static constexpr Kernel kKernels[2][2][2] = {
        {{adamKernel<false, false, false>, adamKernel<false, false, true>},
         {adamKernel<false, true, false>, adamKernel<false, true, true>}},
        {{adamKernel<true, false, false>, adamKernel<true, false, true>},
         {adamKernel<true, true, false>, adamKernel<true, true, true>}}};
    kKernels[decoupled_][wd][low](params, grads, state_.data(0), state_.data(1), begin, end, s);
  }

  const char* name() const override { return decoupled_ ? "adamw" : "adam"; }
  int64_t size() const override { return state_.size(); }
  std::vector<std::span<const float>> state() const override { return state_.spans(); }
  std::vector<std::span<float>> mutableState() override { return state_.mutableSpans(); }

 private:
  bool decoupled_;
  double beta1_;
  double beta2_;
  float eps_;
  double weightDecay_;
  FlatState state_;
};

// ---------------------------------------------------------------------------------
// Adadelta (torch.optim.Adadelta):
//   g = g + wd*p;  sq = sq*rho + (1-rho)*g*g;
//   delta = sqrt(acc + eps) / sqrt(sq + eps) * g;  acc = acc*rho + (1-rho)*delta*delta;
//   p = p - lr*delta

template <bool kWeightDecay>
void adadeltaKernel(float* params, const float* grads, float* squareAvg, float* accDelta,
                    int64_t begin, int64_t end, const AdadeltaScalars& s) {
  auto body = [&s](Lanes& p, Lanes g, Lanes& sq, Lanes& acc) {
    if constexpr (kWeightDecay) g = g + s.weightDecay * p;
    sq = sq * s.rho + s.w * g * g;
    const Lanes rms = sqrtOf(sq + s.eps);
    const Lanes delta = sqrtOf(acc + s.eps) / rms * g;
    acc = acc * s.rho + s.w * delta * delta;
    p = p + s.negLr * delta;
  };
  forEachLaneGroup<2>(params, grads, squareAvg, accDelta, begin, end, body);
}

class Adadelta final : public Optimizer {
 public:
  explicit Adadelta(const OptimizerConfig& config)
      : rho_(decimalValue(config.rho)), eps_(config.eps), weightDecay_(config.weightDecay) {}

  void init(int64_t n) override { state_.reset(2, n); }

  void update(float* params, const float* grads, int64_t begin, int64_t end, int64_t step,
              float lr) override {
    state_.checkRange(begin, end, step);
    const AdadeltaScalars s = adadeltaScalars(rho_, eps_, weightDecay_, lr);
    (weightDecay_ != 0.0f
         ? adadeltaKernel<true>
         : adadeltaKernel<false>)(params, grads, state_.data(0), state_.data(1), begin, end, s);
  }

  const char* name() const override { return "adadelta"; }
  int64_t size() const override { return state_.size(); }
  std::vector<std::span<const float>> state() const override { return state_.spans(); }
  std::vector<std::span<float>> mutableState() override { return state_.mutableSpans(); }

 private:
  double rho_;
  float eps_;
  float weightDecay_;
  FlatState state_;
};

// ---------------------------------------------------------------------------------
// Validation

template <typename V>
[[noreturn]] void reject(const std::string& path, const char* requirement, V got) {
  std::ostringstream reason;
  reason << requirement << ", got " << got;
  throw SpecError(path, reason.str());
}

// NaN fails every comparison, so these reject it too; infinities are rejected explicitly.
void requireUnitInterval(const char* path, float value) {
  if (!(value >= 0.0f && value < 1.0f)) reject(path, "must be in [0, 1)", value);
}
void requirePositive(const char* path, float value) {
  if (!(value > 0.0f && std::isfinite(value))) reject(path, "must be > 0 and finite", value);
}
void requireNonNegative(const char* path, float value) {
  if (!(value >= 0.0f && std::isfinite(value))) reject(path, "must be >= 0 and finite", value);
}

}  // namespace

AdamScalars adamScalars(double beta1, double beta2, float eps, double weightDecay, bool decoupled,
                        int64_t step, float lr) {
  const double lrD = decimalValue(lr);
  const double t = static_cast<double>(step);
  const double bc1 = 1.0 - std::pow(beta1, t);
  const double bc2 = 1.0 - std::pow(beta2, t);
  AdamScalars s{};
  s.w1 = static_cast<float>(1.0 - beta1);
  s.oneMinusW1 = 1.0f - s.w1;
  s.beta2 = static_cast<float>(beta2);
  s.w2 = static_cast<float>(1.0 - beta2);
  s.bc2Sqrt = static_cast<float>(std::sqrt(bc2));
  s.eps = eps;
  s.negStepSize = static_cast<float>(-(lrD / bc1));
  s.decayFactor = static_cast<float>(1.0 - lrD * weightDecay);
  s.weightDecay = static_cast<float>(weightDecay);
  s.decoupled = decoupled;
  s.lowLerpWeight = s.w1 < 0.5f;
  return s;
}

AdadeltaScalars adadeltaScalars(double rho, float eps, float weightDecay, float lr) {
  AdadeltaScalars s{};
  s.rho = static_cast<float>(rho);
  s.w = static_cast<float>(1.0 - rho);
  s.eps = eps;
  s.weightDecay = weightDecay;
  s.negLr = -lr;
  return s;
}

void checkUpdateRange(int64_t size, int64_t begin, int64_t end, int64_t step) {
  DTLAB_ENFORCE(size >= 0, "optimizer update before init()");
  DTLAB_ENFORCE(0 <= begin && begin <= end && end <= size, "optimizer update range [", begin, ", ",
                end, ") outside [0, ", size, ")");
  DTLAB_ENFORCE(step >= 1, "optimizer step counts from 1, got ", step);
}

void validateOptimizerConfig(const OptimizerConfig& config) {
  requirePositive("optimizer.lr", config.lr);
  requireNonNegative("optimizer.weight_decay", config.weightDecay);
  switch (config.kind) {
    case OptimizerKind::kSgd:
      requireUnitInterval("optimizer.momentum", config.momentum);
      if (config.nesterov && !(config.momentum > 0.0f))
        throw SpecError("optimizer.nesterov",
                        detail::concat("requires momentum > 0, got momentum ", config.momentum));
      break;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      requireUnitInterval("optimizer.beta1", config.beta1);
      requireUnitInterval("optimizer.beta2", config.beta2);
      requirePositive("optimizer.eps", config.eps);
      break;
    case OptimizerKind::kAdadelta:
      requireUnitInterval("optimizer.rho", config.rho);
      requirePositive("optimizer.eps", config.eps);
      break;
  }

  const ScheduleConfig& schedule = config.schedule;
  if (schedule.warmupSteps < 0)
    reject("optimizer.schedule.warmup_steps", "must be >= 0", schedule.warmupSteps);
  switch (schedule.kind) {
    case ScheduleKind::kConstant:
      break;
    case ScheduleKind::kStep:
      if (schedule.stepSize < 1)
        reject("optimizer.schedule.step_size", "must be >= 1", schedule.stepSize);
      requirePositive("optimizer.schedule.gamma", schedule.gamma);
      break;
    case ScheduleKind::kCosine:
      // stepSize is the cosine length when the run's total steps are unknown.
      if (schedule.stepSize < 1)
        reject("optimizer.schedule.step_size", "must be >= 1", schedule.stepSize);
      requireNonNegative("optimizer.schedule.min_lr", schedule.minLr);
      break;
  }
  if (config.scaleLrBaseBatch && *config.scaleLrBaseBatch < 1)
    reject("optimizer.scale_lr_base_batch", "must be >= 1", *config.scaleLrBaseBatch);
}

std::unique_ptr<Optimizer> makeOptimizer(const OptimizerConfig& config) {
  validateOptimizerConfig(config);
  switch (config.kind) {
    case OptimizerKind::kSgd:
      return std::make_unique<Sgd>(config);
    case OptimizerKind::kAdam:
      return std::make_unique<Adam>(config, /*decoupled=*/false);
    case OptimizerKind::kAdamW:
      return std::make_unique<Adam>(config, /*decoupled=*/true);
    case OptimizerKind::kAdadelta:
      return std::make_unique<Adadelta>(config);
  }
  throw Error("optimizer.kind: unknown optimizer kind " +
              std::to_string(static_cast<int>(config.kind)));
}

}  // namespace dtlab::core
