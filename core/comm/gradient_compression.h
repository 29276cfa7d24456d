#pragma once
// Gradient compression for the collectives that move gradients or weights (the variant setting
// "compression"): a reducer that sums a range of a flat buffer over a group's ranks with fewer
// bytes on the wire than a float32 all-reduce, keeping what it did not send for later steps
// (error feedback) where the compression drops information.
//
//   fp16, bf16  the values as 16-bit floats, summed by a ring of 16-bit values. fp16's range is
//               small (65504 at most, 6e-5 the smallest normal): the ranks agree on the largest
//               magnitude first and scale by a power of two that puts the sum just inside the
//               range, so nothing overflows and small gradients keep their digits.
//   topk        each rank sends the `ratio` of its values largest in magnitude (with the error
//               it kept from earlier steps added), as (index, value) pairs that every rank
//               gathers and adds up in rank order (Stich et al. 2018, "Sparsified SGD with
//               memory"). The gather grows with the group: n ranks receive n-1 ranks' pairs.
//   powersgd    each matrix as a rank-r product P Q^T from one power iteration on the sum over
//               ranks, warm-started from the last step's Q (Vogels et al. 2019, as PyTorch DDP's
//               PowerSGD hook); two all-reduces of r(rows + cols) floats per matrix instead of
//               rows x cols. Vectors and matrices too small to gain go as float32.
//
// Every rank ends with the same values (the identical-replica strategies depend on it). A
// buffer's tensors marked exact (votes and step times riding with the gradients) are never
// compressed. The first `startStep` steps run uncompressed (PowerSGD's warm-up).
#include <cstdint>
#include <string>
#include <vector>

#include "core/comm/half_float.h"
#include "core/common/gradient_range.h"

namespace dtlab::core {

class Communicator;

enum class CompressionKind { kNone, kFp16, kBf16, kTopK, kPowerSgd };

struct CompressionConfig {
  CompressionKind kind = CompressionKind::kNone;
  double ratio = 0.01;    // topk: the share of values sent
  int64_t rank = 2;       // powersgd: the approximation's rank
  int64_t startStep = 0;  // steps 1..startStep run uncompressed

  bool enabled() const { return kind != CompressionKind::kNone; }
  bool operator==(const CompressionConfig&) const = default;
};

const char* toString(CompressionKind kind);
// Every kind, in the order the setting lists them ("none" first).
std::vector<CompressionKind> compressionKinds();
// What a kind sends instead of float32 values, in a few sentences (the generated reference).
const char* summaryOf(CompressionKind kind);
// "topk 1% with error feedback, from step 11": what a run's start event says.
std::string describe(const CompressionConfig& config);

// Top-k's choice, shared by the collectives' reducer and a parameter server's pushes: how many
// of n values `ratio` keeps (at least one of a non-empty set), and which (their indices in
// increasing order into `chosen`): the k largest in magnitude, a NaN counting as the largest
// (so that it is sent and the run's divergence check sees it), ties at the threshold taken in
// order. `scratch` is reused between calls.
int64_t topKCount(double ratio, int64_t n);
void selectTopK(const float* values, int64_t n, int64_t k, std::vector<float>& scratch,
                std::vector<uint32_t>& chosen);

// A tensor of the flat buffer a reducer sums: a matrix of rows x cols (row-major; a vector has
// one row), or an exact range that is never compressed.
struct CompressedTensor {
  GradientRange range;
  int64_t rows = 1;
  int64_t cols = 0;
  bool exact = false;
};
// The tensors of a buffer whose matrices (and vectors) are `shapes`, cut where `cuts` cut
// them (offsets; a cut inside a matrix must fall between rows), followed by `exactTail` exact
// floats.
std::vector<CompressedTensor> cutTensors(const std::vector<CompressedTensor>& shapes,
                                         const std::vector<int64_t>& cuts, int64_t exactTail);

// What a reducer did so far, for the run's summary: bytes of the values it was asked to sum,
// bytes of what it handed to the collectives instead (both per rank, before the collectives'
// own traffic), and seconds spent compressing and decompressing.
struct CompressionTotals {
  int64_t denseBytes = 0;
  int64_t payloadBytes = 0;
  double seconds = 0.0;

  void merge(const CompressionTotals& other) {
    denseBytes += other.denseBytes;
    payloadBytes += other.payloadBytes;
    seconds += other.seconds;
  }
};

// Sums ranges of one flat host buffer over a group, compressed as configured. Keeps the error
// feedback (one float per element of the buffer, topk and powersgd) and PowerSGD's Q per matrix,
// so each range must be reduced by the same reducer every step, on every rank in the same order
// (as gradient buckets do). Not thread safe: one thread reduces at a time.
class CompressedReducer {
 public:
  // `tensors` tile the buffer [0, count). seed: the run's (PowerSGD's first Q, the same on
  // every rank).
  CompressedReducer(const CompressionConfig& config, std::vector<CompressedTensor> tensors,
                    int64_t count, uint64_t seed);

  // The step whose ranges are reduced next (start_step counts these); set before the step's
  // first reduce.
  void setStep(int64_t step) { step_ = step; }
  // In place: data[range] = the sum over the group of every rank's data[range], compressed.
  // `range` must be made of whole tensors. Collective: every rank calls it with the same range.
  void reduce(Communicator& comm, float* data, GradientRange range);

  const CompressionConfig& config() const { return config_; }
  const CompressionTotals& totals() const { return totals_; }
  // What this rank holds back for later steps (topk and powersgd; empty for the others): with
  // what the reductions delivered, it adds up to everything the ranks put in.
  const std::vector<float>& keptError() const { return error_; }

 private:
  struct Matrix;
  void reduceHalves(Communicator& comm, float* data, int first, int last);
  void reduceTopK(Communicator& comm, float* data, int first, int last);
  void reducePowerSgd(Communicator& comm, float* data, int first, int last);

  CompressionConfig config_;
  std::vector<CompressedTensor> tensors_;
  int64_t count_;
  uint64_t seed_;
  int64_t step_ = 0;
  CompressionTotals totals_;
  std::vector<float> error_;           // error feedback, topk and powersgd
  std::vector<std::vector<float>> q_;  // powersgd: per tensor, Q^T (rank x cols); empty: none
  // Scratch, grown as needed.
  std::vector<float> send_;
  std::vector<float> gathered_;
  std::vector<uint16_t> halves_;
  std::vector<float> magnitudes_;
  std::vector<uint32_t> chosen_;
  std::vector<float> acc_;
  std::vector<float> summed_;
  std::vector<float> exactSum_;
  std::vector<float> p_;
};

}  // namespace dtlab::core
