#pragma once

// The per-step scalars of the optimizers' elementwise updates, derived once on the host
// (core/optim/optimizer.cc: updateScalars) and used by the CPU kernels and the CUDA kernels
// alike. Plain structs: nvcc compiles the kernels that read them.

namespace dtlab::core {

// Adam / AdamW (torch.optim's single-tensor path):
//   adamw: p = p * decayFactor            adam: g = g + weightDecay * p
//   m = lerp(m, g, w1)                    (PyTorch's lerp: two forms, split at w1 = 0.5)
//   v = v * beta2 + w2 * g * g
//   p = p + negStepSize * m / (sqrt(v) / bc2Sqrt + eps)
struct AdamScalars {
  float w1;          // 1 - beta1, the lerp weight
  float oneMinusW1;  // 1 - w1, used by lerp's second form
  float beta2;
  float w2;       // 1 - beta2
  float bc2Sqrt;  // sqrt(1 - beta2^step)
  float eps;
  float negStepSize;   // -lr / (1 - beta1^step)
  float decayFactor;   // adamw: 1 - lr * wd
  float weightDecay;   // adam: the L2 coefficient; adamw: wd
  bool decoupled;      // adamw
  bool lowLerpWeight;  // w1 < 0.5: m = m + w1 * (g - m); else m = g - (g - m) * (1 - w1)
};

// Adadelta (torch.optim.Adadelta):
//   g = g + weightDecay * p;  sq = sq * rho + w * g * g
//   delta = sqrt(acc + eps) / sqrt(sq + eps) * g;  acc = acc * rho + w * delta * delta
//   p = p + negLr * delta
struct AdadeltaScalars {
  float rho;
  float w;  // 1 - rho
  float eps;
  float weightDecay;
  float negLr;
};

}  // namespace dtlab::core
