#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "core/data/sample_program.h"
#include "core/spec/experiment_spec.h"
#include "core/tensor/tensor.h"

namespace dtlab::core {

enum class TaskKind { kClassification, kRegression };

// A synthetic dataset that is never stored: samples are computed on demand.
//
// Generation is counter-based. Sample i of a split is a pure function of (seed, split,
// i), so each worker generates exactly the rows it owns, in any order and in any
// chunking, and gets the same bytes whatever the number of workers. Train and test are
// disjoint streams drawn from the same distribution. Parameters shared by all samples
// (blob centres, the teacher network, regression weights) are derived from the seed
// once, in the constructor.
//
// Class balance: blobs, spirals, checkerboard and shapes assign class i % classes to
// sample i, so every split and every contiguous range is balanced to within one
// sample. The teacher labels by the argmax of a random network whose output biases are
// tuned on probe inputs, so its classes are balanced only approximately (a few percent).
//
// The built-in kinds' samples are defined by a datagen::SampleProgram (program()), which a
// GPU backend runs on the device to generate the same samples there; a kind without one
// (a plug-in's, a test's) is generated on the host and copied.
//
// Implementations are immutable after construction; every method is safe to call from
// several threads at once.
class Dataset {
 public:
  virtual ~Dataset() = default;
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  int64_t features() const { return features_; }
  // Number of classes, or 1 for regression.
  int64_t outputs() const { return outputs_; }
  // Labels per sample: 1, or one per position of a sequence (token kinds: the next token, the
  // copied one), each of them one of outputs() classes. A model computes outputs() x targets()
  // values per sample and is scored per label.
  int64_t targets() const { return targets_; }
  // The lowest mean loss per label that any model can reach on this data, in nats, where the
  // kind knows it (a sequence teacher's conditional entropy); empty otherwise.
  virtual std::optional<double> lossFloor() const { return std::nullopt; }
  TaskKind task() const { return task_; }
  int64_t size(Split split) const { return split == Split::kTrain ? trainSize_ : testSize_; }
  uint64_t seed() const { return seed_; }
  // What defines the samples, for backends that generate them in their own memory; its tables
  // live as long as the dataset. Null for a kind that is generated only by generate().
  virtual const datagen::SampleProgram* program() const { return nullptr; }

  // Writes samples [begin, begin+count) of `split`: x is count x features row-major, y
  // count x targets (each a class index as a float, or the regression target).
  virtual void generate(Split split, int64_t begin, int64_t count, float* x, float* y) const = 0;
  // Writes the listed samples, row k holding sample indices[k]. The default calls
  // generate() once per index; generators with per-call setup override it.
  virtual void generateIndices(Split split, std::span<const int64_t> indices, float* x,
                               float* y) const;
  // generateIndices() into tensors: x becomes n x features, y n x targets.
  void gather(Split split, std::span<const int64_t> indices, Tensor& x, Tensor& y) const;

  // Class of one sample without materialising the split (classification only); a sequence's
  // first target.
  virtual int64_t label(Split split, int64_t index) const;
  // Classes of samples [begin, begin+count) into out, as label() gives them; what partitioners
  // use.
  virtual void labels(Split split, int64_t begin, int64_t count, int64_t* out) const;

 protected:
  Dataset(int64_t features, int64_t outputs, TaskKind task, int64_t trainSize, int64_t testSize,
          uint64_t seed, int64_t targets = 1);

  // Throws unless [begin, begin+count) lies inside the split.
  void checkRange(Split split, int64_t begin, int64_t count) const;
  void checkIndices(Split split, std::span<const int64_t> indices) const;
  void checkClassification() const;

 private:
  int64_t features_;
  int64_t outputs_;
  int64_t targets_;
  TaskKind task_;
  int64_t trainSize_;
  int64_t testSize_;
  uint64_t seed_;
};

const char* toString(Split split);

}  // namespace dtlab::core
