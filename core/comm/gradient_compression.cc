#include "core/comm/gradient_compression.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "core/comm/communicator.h"
#include "core/common/check.h"
#include "core/common/random.h"

namespace dtlab::core {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Top-k's ordering key: a NaN counts as the largest, so that it is sent and the run's
// divergence check sees it (and the selection's ordering stays strict).
float magnitude(float x) {
  return std::isnan(x) ? std::numeric_limits<float>::infinity() : std::abs(x);
}

// Whether PowerSGD sends a tensor as P and Q: a matrix whose factors are smaller than it.
bool lowRank(const CompressedTensor& t, int64_t rank) {
  return !t.exact && t.rows > 1 && rank < std::min(t.rows, t.cols) &&
         rank * (t.rows + t.cols) < t.rows * t.cols;
}

// Gram-Schmidt on the `rank` columns of the row-major rows x rank matrix p: orthonormal columns
// (a column that vanishes stays zero rather than dividing by nothing).
void orthonormalizeColumns(float* p, int64_t rows, int64_t rank) {
  for (int64_t k = 0; k < rank; ++k) {
    for (int64_t j = 0; j < k; ++j) {
      double dot = 0.0;
      for (int64_t i = 0; i < rows; ++i) dot += double{p[i * rank + j]} * p[i * rank + k];
      const auto d = static_cast<float>(dot);
      for (int64_t i = 0; i < rows; ++i) p[i * rank + k] -= d * p[i * rank + j];
    }
    double norm = 0.0;
    for (int64_t i = 0; i < rows; ++i) norm += double{p[i * rank + k]} * p[i * rank + k];
    const auto scale = static_cast<float>(1.0 / (std::sqrt(norm) + 1e-8));
    for (int64_t i = 0; i < rows; ++i) p[i * rank + k] *= scale;
  }
}

}  // namespace

int64_t topKCount(double ratio, int64_t n) {
  if (n <= 0) return 0;
  return std::clamp<int64_t>(static_cast<int64_t>(std::ceil(ratio * static_cast<double>(n))), 1, n);
}

void selectTopK(const float* values, int64_t n, int64_t k, std::vector<float>& scratch,
                std::vector<uint32_t>& chosen) {
  chosen.clear();
  if (k <= 0) return;
  scratch.resize(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) scratch[static_cast<std::size_t>(i)] = magnitude(values[i]);
  const auto kth = scratch.begin() + (k - 1);
  std::nth_element(scratch.begin(), kth, scratch.end(), std::greater<float>());
  const float threshold = *kth;
  // Those above the threshold, then as many equal to it as k leaves room for.
  int64_t ties = k;
  for (float m : scratch) ties -= m > threshold;
  for (int64_t i = 0; i < n && static_cast<int64_t>(chosen.size()) < k; ++i) {
    const float m = magnitude(values[i]);
    if (m > threshold || (m == threshold && ties-- > 0)) chosen.push_back(static_cast<uint32_t>(i));
  }
  DTLAB_ENFORCE_EQ(static_cast<int64_t>(chosen.size()), k, "top-k selection");
}

std::vector<CompressionKind> compressionKinds() {
  return {CompressionKind::kNone, CompressionKind::kFp16, CompressionKind::kBf16,
          CompressionKind::kTopK, CompressionKind::kPowerSgd};
}

const char* summaryOf(CompressionKind kind) {
  switch (kind) {
    case CompressionKind::kNone:
      return "The values as float32: nothing is lost, nothing is saved.";
    case CompressionKind::kFp16:
      return "The values as IEEE half floats: half the bytes (a collective sums them by a ring "
             "of 16-bit values; a parameter server's pushes and pulls carry them so). fp16's "
             "range is small (65504 at most, 6e-5 the smallest normal), so a collective's ranks "
             "agree on the largest magnitude first and scale by the power of two that puts the "
             "sum just inside it: nothing overflows and small gradients keep their digits.";
    case CompressionKind::kBf16:
      return "The values as bfloat16 (float32's range, 8 bits of mantissa): half the bytes, no "
             "scaling needed, fewer digits kept than fp16.";
    case CompressionKind::kTopK:
      return "Each rank sends the `topk_ratio` share of its values largest in magnitude, with "
             "the error it kept from earlier steps added (error feedback), as (index, value) "
             "pairs every rank gathers and adds up in rank order (Stich et al. 2018, "
             "\"Sparsified SGD with memory\"). The gather grows with the group: n ranks receive "
             "n-1 ranks' pairs. To a parameter server, pushes go as their largest values and "
             "pulls as float32 (a sparse pull would need the server to keep every worker's "
             "replica).";
    case CompressionKind::kPowerSgd:
      return "Each matrix as a rank-`powersgd_rank` product P Q^T from one power iteration on "
             "the sum over ranks, warm-started from the last step's Q, with error feedback "
             "(Vogels et al. 2019, as PyTorch DDP's PowerSGD hook): two all-reduces of r(rows + "
             "cols) floats per matrix instead of rows x cols. Vectors and matrices too small to "
             "gain go as float32. Collectives only: a parameter server has no sum to factor.";
  }
  return "";
}

const char* toString(CompressionKind kind) {
  switch (kind) {
    case CompressionKind::kNone:
      return "none";
    case CompressionKind::kFp16:
      return "fp16";
    case CompressionKind::kBf16:
      return "bf16";
    case CompressionKind::kTopK:
      return "topk";
    case CompressionKind::kPowerSgd:
      return "powersgd";
  }
  return "none";
}

std::string describe(const CompressionConfig& c) {
  std::string text;
  switch (c.kind) {
    case CompressionKind::kNone:
      return "uncompressed";
    case CompressionKind::kFp16:
      text = "fp16 (scaled to the group's largest value)";
      break;
    case CompressionKind::kBf16:
      text = "bf16";
      break;
    case CompressionKind::kTopK: {
      char share[32];
      std::snprintf(share, sizeof(share), "%g%%", c.ratio * 100.0);
      text = std::string("topk ") + share + " with error feedback";
      break;
    }
    case CompressionKind::kPowerSgd:
      text = "powersgd rank " + std::to_string(c.rank) + " with error feedback";
      break;
  }
  if (c.startStep > 0) text += ", from step " + std::to_string(c.startStep + 1);
  return text;
}

std::vector<CompressedTensor> cutTensors(const std::vector<CompressedTensor>& shapes,
                                         const std::vector<int64_t>& cuts, int64_t exactTail) {
  std::vector<int64_t> sorted = cuts;
  std::sort(sorted.begin(), sorted.end());
  std::vector<CompressedTensor> out;
  int64_t end = 0;
  for (const CompressedTensor& shape : shapes) {
    DTLAB_ENFORCE_EQ(shape.range.begin, end, "tensors must tile the buffer");
    DTLAB_ENFORCE_EQ(shape.rows * shape.cols, shape.range.size(), "a tensor's shape and range");
    end = shape.range.end;
    int64_t from = shape.range.begin;
    auto cut = std::upper_bound(sorted.begin(), sorted.end(), from);
    for (;; ++cut) {
      const int64_t to = cut != sorted.end() && *cut < shape.range.end ? *cut : shape.range.end;
      CompressedTensor piece = shape;
      piece.range = {from, to};
      if (shape.rows > 1) {
        DTLAB_ENFORCE((from - shape.range.begin) % shape.cols == 0 &&
                          (to - shape.range.begin) % shape.cols == 0,
                      "a cut inside a matrix must fall between its rows");
        piece.rows = (to - from) / shape.cols;
      } else {
        piece.cols = to - from;
      }
      out.push_back(piece);
      if (to == shape.range.end) break;
      from = to;
    }
  }
  if (exactTail > 0) out.push_back({{end, end + exactTail}, 1, exactTail, true});
  return out;
}

CompressedReducer::CompressedReducer(const CompressionConfig& config,
                                     std::vector<CompressedTensor> tensors, int64_t count,
                                     uint64_t seed)
    : config_(config), tensors_(std::move(tensors)), count_(count), seed_(seed) {
  int64_t end = 0;
  for (const CompressedTensor& t : tensors_) {
    DTLAB_ENFORCE_EQ(t.range.begin, end, "compressed tensors must tile the buffer");
    end = t.range.end;
  }
  DTLAB_ENFORCE_EQ(end, count_, "compressed tensors must tile the buffer");
  if (config_.kind == CompressionKind::kTopK || config_.kind == CompressionKind::kPowerSgd)
    error_.assign(static_cast<std::size_t>(count_), 0.0f);
  if (config_.kind == CompressionKind::kPowerSgd) q_.resize(tensors_.size());
}

void CompressedReducer::reduce(Communicator& comm, float* data, GradientRange range) {
  const auto byBegin = [](const CompressedTensor& t, int64_t at) { return t.range.begin < at; };
  const auto first = std::lower_bound(tensors_.begin(), tensors_.end(), range.begin, byBegin);
  DTLAB_ENFORCE(first != tensors_.end() && first->range.begin == range.begin,
                "a compressed range must start at a tensor: ", range.begin);
  auto last = first;
  while (last->range.end < range.end) ++last;
  DTLAB_ENFORCE_EQ(last->range.end, range.end, "a compressed range must end at a tensor");
  const int a = static_cast<int>(first - tensors_.begin());
  const int b = static_cast<int>(last - tensors_.begin());
  const int64_t bytes = range.size() * static_cast<int64_t>(sizeof(float));
  if (comm.size() == 1 || range.size() == 0) return;
  if (!config_.enabled() || step_ <= config_.startStep) {
    comm.allReduceSum(data + range.begin, range.size());
    totals_.denseBytes += bytes;
    totals_.payloadBytes += bytes;
    return;
  }
  switch (config_.kind) {
    case CompressionKind::kFp16:
    case CompressionKind::kBf16:
      reduceHalves(comm, data, a, b);
      break;
    case CompressionKind::kTopK:
      reduceTopK(comm, data, a, b);
      break;
    case CompressionKind::kPowerSgd:
      reducePowerSgd(comm, data, a, b);
      break;
    case CompressionKind::kNone:
      break;
  }
  totals_.denseBytes += bytes;
}

void CompressedReducer::reduceHalves(Communicator& comm, float* data, int first, int last) {
  const HalfFormat format =
      config_.kind == CompressionKind::kFp16 ? HalfFormat::kFp16 : HalfFormat::kBf16;
  auto start = Clock::now();
  // The exact tensors go as float32, the others as 16-bit values, each kind packed.
  send_.clear();
  int64_t values = 0;
  float largest = 0.0f;
  for (int t = first; t <= last; ++t) {
    const CompressedTensor& tensor = tensors_[static_cast<std::size_t>(t)];
    const float* x = data + tensor.range.begin;
    if (tensor.exact) {
      send_.insert(send_.end(), x, x + tensor.range.size());
      continue;
    }
    values += tensor.range.size();
    for (int64_t i = 0; i < tensor.range.size(); ++i) largest = std::max(largest, std::abs(x[i]));
  }
  double seconds = secondsSince(start);
  float scale = 1.0f;
  int64_t payload = static_cast<int64_t>(send_.size()) * 4 + values * 2;
  if (format == HalfFormat::kFp16 && values > 0) {
    // The sum of every rank's largest magnitude bounds every partial sum of the ring: scaled by
    // the largest power of two that keeps it within fp16's range.
    gathered_.resize(static_cast<std::size_t>(comm.size()));
    comm.allGather(&largest, 1, gathered_.data());
    double bound = 0.0;
    for (float m : gathered_) bound += m;
    payload += 4;
    scale = fp16Scale(bound);
  }
  start = Clock::now();
  halves_.resize(static_cast<std::size_t>(values));
  int64_t at = 0;
  for (int t = first; t <= last; ++t) {
    const CompressedTensor& tensor = tensors_[static_cast<std::size_t>(t)];
    if (tensor.exact) continue;
    const int64_t n = tensor.range.size();
    float* x = data + tensor.range.begin;
    if (scale != 1.0f)
      for (int64_t i = 0; i < n; ++i) x[i] *= scale;  // exact: a power of two
    floatToHalf(format, x, halves_.data() + at, n);
    at += n;
  }
  seconds += secondsSince(start);
  if (!send_.empty()) comm.allReduceSum(send_.data(), static_cast<int64_t>(send_.size()));
  if (values > 0) comm.allReduceSum16(halves_.data(), values, format);
  start = Clock::now();
  at = 0;
  int64_t exact = 0;
  for (int t = first; t <= last; ++t) {
    const CompressedTensor& tensor = tensors_[static_cast<std::size_t>(t)];
    const int64_t n = tensor.range.size();
    float* x = data + tensor.range.begin;
    if (tensor.exact) {
      std::copy_n(send_.data() + exact, n, x);
      exact += n;
      continue;
    }
    halfToFloat(format, halves_.data() + at, x, n);
    if (scale != 1.0f)
      for (int64_t i = 0; i < n; ++i) x[i] /= scale;
    at += n;
  }
  totals_.seconds += seconds + secondsSince(start);
  totals_.payloadBytes += payload;
}

void CompressedReducer::reduceTopK(Communicator& comm, float* data, int first, int last) {
  const auto start = Clock::now();
  // The values to choose from: this step's gradient plus what earlier steps kept. The kept
  // error changes only once the gather has succeeded, so a collective that fails (and a group
  // that re-forms and runs it again) leaves it as it was.
  int64_t exact = 0;
  acc_.clear();
  for (int t = first; t <= last; ++t) {
    const CompressedTensor& tensor = tensors_[static_cast<std::size_t>(t)];
    if (tensor.exact) {
      exact += tensor.range.size();
      continue;
    }
    const float* e = error_.data() + tensor.range.begin;
    const float* x = data + tensor.range.begin;
    for (int64_t i = 0; i < tensor.range.size(); ++i) acc_.push_back(x[i] + e[i]);
  }
  const auto values = static_cast<int64_t>(acc_.size());
  const int64_t k = topKCount(config_.ratio, values);
  selectTopK(acc_.data(), values, k, magnitudes_, chosen_);
  // What this rank sends: the exact values, then its k positions (in the compressible values,
  // as float bits) and its k values; every rank sends the same count, so one all-gather carries
  // them.
  const int64_t length = exact + 2 * k;
  send_.resize(static_cast<std::size_t>(length));
  int64_t exactAt = 0;
  for (int t = first; t <= last; ++t) {
    const CompressedTensor& tensor = tensors_[static_cast<std::size_t>(t)];
    if (!tensor.exact) continue;
    std::copy_n(data + tensor.range.begin, tensor.range.size(), send_.data() + exactAt);
    exactAt += tensor.range.size();
  }
  float* positions = send_.data() + exact;
  float* picked = positions + k;
  for (int64_t j = 0; j < k; ++j) {
    const uint32_t i = chosen_[static_cast<std::size_t>(j)];
    positions[j] = std::bit_cast<float>(i);
    picked[j] = acc_[i];
  }
  double seconds = secondsSince(start);

  const int n = comm.size();
  gathered_.resize(static_cast<std::size_t>(length * n));
  comm.allGather(send_.data(), length, gathered_.data());

  const auto sum = Clock::now();
  // Kept: everything not sent.
  for (int64_t j = 0; j < k; ++j) acc_[std::bit_cast<uint32_t>(positions[j])] = 0.0f;
  // The sums, in rank order on every rank: dense into acc_ (the compressible values, in order),
  // then scattered back to the tensors with the exact values.
  std::vector<float>& kept = acc_;
  summed_.assign(acc_.size(), 0.0f);
  exactSum_.assign(static_cast<std::size_t>(exact), 0.0f);
  for (int r = 0; r < n; ++r) {
    const float* from = gathered_.data() + static_cast<std::size_t>(length) * r;
    for (int64_t i = 0; i < exact; ++i) exactSum_[static_cast<std::size_t>(i)] += from[i];
    const float* at = from + exact;
    const float* val = at + k;
    for (int64_t j = 0; j < k; ++j) summed_[std::bit_cast<uint32_t>(at[j])] += val[j];
  }
  int64_t valueAt = 0;
  exactAt = 0;
  for (int t = first; t <= last; ++t) {
    const CompressedTensor& tensor = tensors_[static_cast<std::size_t>(t)];
    const int64_t size = tensor.range.size();
    float* x = data + tensor.range.begin;
    if (tensor.exact) {
      std::copy_n(exactSum_.data() + exactAt, size, x);
      exactAt += size;
      continue;
    }
    std::copy_n(summed_.data() + valueAt, size, x);
    std::copy_n(kept.data() + valueAt, size, error_.data() + tensor.range.begin);
    valueAt += size;
  }
  totals_.seconds += seconds + secondsSince(sum);
  totals_.payloadBytes += length * static_cast<int64_t>(sizeof(float));
}

void CompressedReducer::reducePowerSgd(Communicator& comm, float* data, int first, int last) {
  const int64_t r = config_.rank;
  auto start = Clock::now();
  // Phase 1: the tensors sent as they are (exact ones, vectors, small matrices), then each
  // low-rank matrix's P = M Q, M being the gradient with the kept error added.
  send_.clear();
  for (int t = first; t <= last; ++t) {
    const CompressedTensor& tensor = tensors_[static_cast<std::size_t>(t)];
    const float* x = data + tensor.range.begin;
    if (!lowRank(tensor, r)) send_.insert(send_.end(), x, x + tensor.range.size());
  }
  const int64_t plain = static_cast<int64_t>(send_.size());
  for (int t = first; t <= last; ++t) {
    const CompressedTensor& tensor = tensors_[static_cast<std::size_t>(t)];
    if (!lowRank(tensor, r)) continue;
    const int64_t rows = tensor.rows;
    const int64_t cols = tensor.cols;
    float* m = data + tensor.range.begin;
    const float* e = error_.data() + tensor.range.begin;
    for (int64_t i = 0; i < rows * cols; ++i) m[i] += e[i];
    std::vector<float>& qt = q_[static_cast<std::size_t>(t)];
    if (qt.empty()) {
      // The same first Q on every rank, from the run's seed and the tensor's place.
      qt.resize(static_cast<std::size_t>(r * cols));
      Rng rng(deriveSeed(seed_, 0x5057u, static_cast<uint64_t>(tensor.range.begin)));
      for (float& v : qt) v = rng.normal();
    }
    const std::size_t at = send_.size();
    send_.resize(at + static_cast<std::size_t>(rows * r));
    float* p = send_.data() + at;
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = m + i * cols;
      for (int64_t k = 0; k < r; ++k) {
        const float* q = qt.data() + k * cols;
        float dot = 0.0f;
        for (int64_t j = 0; j < cols; ++j) dot += row[j] * q[j];
        p[i * r + k] = dot;
      }
    }
  }
  double seconds = secondsSince(start);
  int64_t payload = static_cast<int64_t>(send_.size());
  comm.allReduceSum(send_.data(), static_cast<int64_t>(send_.size()));

  // Phase 2: the plain tensors are done; orthonormalise each summed P and send Q = M^T P.
  start = Clock::now();
  int64_t at = 0;
  for (int t = first; t <= last; ++t) {
    const CompressedTensor& tensor = tensors_[static_cast<std::size_t>(t)];
    if (lowRank(tensor, r)) continue;
    std::copy_n(send_.data() + at, tensor.range.size(), data + tensor.range.begin);
    at += tensor.range.size();
  }
  p_.assign(send_.begin() + plain, send_.end());
  send_.clear();
  int64_t pAt = 0;
  for (int t = first; t <= last; ++t) {
    const CompressedTensor& tensor = tensors_[static_cast<std::size_t>(t)];
    if (!lowRank(tensor, r)) continue;
    const int64_t rows = tensor.rows;
    const int64_t cols = tensor.cols;
    float* p = p_.data() + pAt;
    orthonormalizeColumns(p, rows, r);
    const float* m = data + tensor.range.begin;
    const std::size_t qAt = send_.size();
    send_.resize(qAt + static_cast<std::size_t>(r * cols), 0.0f);
    float* qt = send_.data() + qAt;
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = m + i * cols;
      for (int64_t k = 0; k < r; ++k) {
        const float pik = p[i * r + k];
        float* q = qt + k * cols;
        for (int64_t j = 0; j < cols; ++j) q[j] += row[j] * pik;
      }
    }
    pAt += rows * r;
  }
  seconds += secondsSince(start);
  payload += static_cast<int64_t>(send_.size());
  comm.allReduceSum(send_.data(), static_cast<int64_t>(send_.size()));

  // The sum's approximation P Q^T, and what this rank's share of it left out, kept.
  start = Clock::now();
  const auto n = static_cast<float>(comm.size());
  pAt = 0;
  int64_t qAt = 0;
  for (int t = first; t <= last; ++t) {
    const CompressedTensor& tensor = tensors_[static_cast<std::size_t>(t)];
    if (!lowRank(tensor, r)) continue;
    const int64_t rows = tensor.rows;
    const int64_t cols = tensor.cols;
    const float* p = p_.data() + pAt;
    std::vector<float>& qt = q_[static_cast<std::size_t>(t)];
    std::copy_n(send_.data() + qAt, r * cols, qt.data());  // the next step's warm start
    float* m = data + tensor.range.begin;
    float* e = error_.data() + tensor.range.begin;
    for (int64_t i = 0; i < rows; ++i) {
      float* row = m + i * cols;
      float* kept = e + i * cols;
      std::copy_n(row, cols, kept);
      std::fill_n(row, cols, 0.0f);
      for (int64_t k = 0; k < r; ++k) {
        const float pik = p[i * r + k];
        const float* q = qt.data() + k * cols;
        for (int64_t j = 0; j < cols; ++j) row[j] += pik * q[j];
      }
      for (int64_t j = 0; j < cols; ++j) kept[j] -= row[j] / n;
    }
    pAt += rows * r;
    qAt += r * cols;
  }
  totals_.seconds += seconds + secondsSince(start);
  totals_.payloadBytes += payload * static_cast<int64_t>(sizeof(float));
}

}  // namespace dtlab::core
