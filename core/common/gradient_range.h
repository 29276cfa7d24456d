#pragma once

#include <cstdint>

namespace dtlab::core {

// A half-open range [begin, end) of elements of a flat gradient buffer: what backward hands
// over as final (Model::handOffs) and what a bucket of the all-reduce reduces.
struct GradientRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const GradientRange&) const = default;
};

}  // namespace dtlab::core
