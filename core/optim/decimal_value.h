#pragma once

#include <charconv>

namespace dtlab::core {

// The double a config float stands for. The spec stores 0.999 as the float
// 0.99900001...; PyTorch computes 1 - beta2, beta2**t, lr * gamma**k in double from
// 0.999 itself. The shortest decimal that round-trips the float recovers what the user
// wrote, so the scalars derived from it round to the same floats PyTorch uses.
inline double decimalValue(float x) {
  char text[64];
  const auto printed = std::to_chars(text, text + sizeof text, x);
  double value = static_cast<double>(x);
  std::from_chars(text, printed.ptr, value);
  return value;
}

}  // namespace dtlab::core
