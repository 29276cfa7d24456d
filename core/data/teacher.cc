#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/data/builtin_kinds.h"
#include "core/data/dataset_kinds.h"
#include "core/data/generators.h"

namespace dtlab::core::datagen {
namespace {

// Inputs the constructor pushes through the teacher to balance its classes: 32768, or
// fewer for thousands of classes so that their logits stay under 64 MiB.
constexpr int64_t kMaxProbeInputs = 32768;
constexpr int64_t kMinProbeInputs = 256;
constexpr int64_t kMaxProbeLogits = int64_t{1} << 24;
// Rounds of output-bias correction; each moves every class's bias by a decaying step
// towards its share of 1 / classes.
constexpr int kBalanceRounds = 60;
// Largest teacher accepted, in weights (a 1 GiB float32 network); the spec refuses a larger
// one by the kind's check, makeDataset by its own.
constexpr double kMaxTeacherParameters = double{1 << 28};
constexpr int64_t kMaxTeacherDepth = 16;

// Labels N(0, I) inputs by the argmax of a fixed random MLP: features -> teacherDepth
// hidden tanh layers of teacherWidth -> classes. Weights are N(0, 1/fan_in), which
// keeps every layer's pre-activations near unit scale so tanh bends the decision
// boundaries without saturating into a piecewise-constant function.
//
// A random network's argmax favours a few classes, so the output biases are tuned on
// probe inputs (their own stream of the seed) until every class wins about 1 / classes
// of them; the classes of generated samples are then balanced to within sampling error
// of the 32768 probes, under 2% relative for 10 classes.
//
// The network lives in the program's table: per layer, weights (in x out) then biases.
struct TeacherNetwork {
  std::vector<float> table;
  std::vector<int64_t> dims;
  int64_t maxWidth = 1;
};

// The teacher's hidden layers: `depth` layers of `width`.
struct TeacherShape {
  int64_t width = 0;
  int64_t depth = 0;
};

TeacherShape teacherShape(const DatasetConfig& config) {
  const SettingsView parameters = datasetKindOf(config).view(config);
  return {parameters.integer("teacher_width"), parameters.integer("teacher_depth")};
}

// Weights of the teacher network (biases aside), in a double: a product of unchecked sizes.
double teacherWeights(const DatasetConfig& config, const TeacherShape& shape) {
  const double width = static_cast<double>(shape.width);
  const double features = static_cast<double>(config.features);
  const double classes = static_cast<double>(config.classes);
  return shape.depth == 0
             ? features * classes
             : features * width + static_cast<double>(shape.depth - 1) * width * width +
                   width * classes;
}

TeacherNetwork drawTeacher(const DatasetConfig& config, const TeacherShape& shape) {
  TeacherNetwork net;
  Rng rng(deriveSeed(config.seed, kParameterStream));
  int64_t size = 0;
  for (int64_t l = 0, in = config.features; l <= shape.depth; ++l) {
    const int64_t out = l == shape.depth ? config.classes : shape.width;
    size += (in + 1) * out;
    in = out;
  }
  net.table.reserve(static_cast<std::size_t>(size));
  net.dims.push_back(config.features);
  for (int64_t l = 0; l <= shape.depth; ++l) {
    const int64_t in = net.dims.back();
    const int64_t out = l == shape.depth ? config.classes : shape.width;
    const float scale = 1.0f / std::sqrt(static_cast<float>(in));
    for (int64_t k = 0; k < in * out; ++k) net.table.push_back(scale * rng.normal());
    // Small hidden biases move the boundaries off the origin; output biases are set by
    // balanceClasses().
    for (int64_t o = 0; o < out; ++o)
      net.table.push_back(l < shape.depth ? 0.1f * rng.normal() : 0.0f);
    net.maxWidth = std::max(net.maxWidth, out);
    net.dims.push_back(out);
  }
  return net;
}

// Sets the output biases (the table's last `classes` floats) so that each class wins about
// 1 / classes of the probe inputs.
void balanceClasses(SampleProgram& program, std::vector<float>& table) {
  const int64_t classes = program.classes;
  const int64_t probes =
      std::max(kMinProbeInputs, std::min(kMaxProbeInputs, kMaxProbeLogits / classes));
  std::vector<float> logits(static_cast<std::size_t>(probes * classes));
  std::vector<float> x(static_cast<std::size_t>(program.features));
  std::vector<float> scratch(static_cast<std::size_t>(scratchFloats(program)));
  for (int64_t p = 0; p < probes; ++p) {
    Rng rng(deriveSeed(program.seed, kProbeStream, static_cast<uint64_t>(p)));
    for (float& v : x) v = rng.normal();
    const float* out = detail::teacherForward(program, x.data(), scratch.data());
    std::copy(out, out + classes, logits.begin() + p * classes);
  }
  // Centre each class's logit first: that alone removes most of the imbalance.
  std::vector<double> bias(static_cast<std::size_t>(classes), 0.0);
  double spread = 0.0;
  for (int64_t c = 0; c < classes; ++c) {
    double sum = 0.0;
    double sq = 0.0;
    for (int64_t p = 0; p < probes; ++p) {
      const double v = logits[p * classes + c];
      sum += v;
      sq += v * v;
    }
    const double mean = sum / probes;
    bias[c] = -mean;
    spread += sq / static_cast<double>(probes) - mean * mean;
  }
  spread = std::sqrt(std::max(spread / static_cast<double>(classes), 1e-12));
  // Then nudge each bias by the log ratio of its target share to its current share,
  // in units of the logits' spread, with a step that decays so the shares settle.
  const double target = static_cast<double>(probes) / static_cast<double>(classes);
  std::vector<int64_t> wins(static_cast<std::size_t>(classes));
  for (int round = 0; round < kBalanceRounds; ++round) {
    std::fill(wins.begin(), wins.end(), 0);
    for (int64_t p = 0; p < probes; ++p) {
      const float* row = logits.data() + p * classes;
      int64_t best = 0;
      double bestValue = row[0] + bias[0];
      for (int64_t c = 1; c < classes; ++c) {
        const double v = row[c] + bias[c];
        if (v > bestValue) {
          bestValue = v;
          best = c;
        }
      }
      ++wins[best];
    }
    const double step = 0.3 * spread / (1.0 + round / 10.0);
    for (int64_t c = 0; c < classes; ++c) {
      bias[c] += step * std::log(target / (static_cast<double>(wins[c]) + 0.5));
    }
  }
  float* outputBias = table.data() + table.size() - classes;
  for (int64_t c = 0; c < classes; ++c) outputBias[c] = static_cast<float>(bias[c]);
}

std::unique_ptr<Dataset> makeTeacher(const DatasetConfig& config) {
  requireConfig(config.classes >= 2, "classes", "teacher needs at least 2 (got ", config.classes,
                ")");
  requireConfig(config.features >= 1, "features", "teacher needs at least 1 (got ", config.features,
                ")");
  const TeacherShape shape = teacherShape(config);
  requireConfig(shape.width >= 1, "teacher_width", "must be at least 1 (got ", shape.width, ")");
  requireConfig(shape.depth >= 0, "teacher_depth", "must not be negative (got ", shape.depth, ")");
  const float labelNoise =
      realParameter(datasetKindOf(config).view(config), "label_noise", 0.0f, 1.0f);
  const double weights = teacherWeights(config, shape);
  requireConfig(weights <= kMaxTeacherParameters, "teacher_width", "the teacher would have ",
                weights, " parameters; the limit is ", kMaxTeacherParameters);
  TeacherNetwork net = drawTeacher(config, shape);
  SampleProgram program = programOf(SampleKind::kTeacher, config, config.features, config.classes);
  program.noise = labelNoise;
  program.table = net.table.data();
  program.tableSize = static_cast<int64_t>(net.table.size());
  program.dims = net.dims.data();
  program.layers = static_cast<int>(shape.depth + 1);
  program.maxWidth = net.maxWidth;
  balanceClasses(program, net.table);
  return std::make_unique<ProgramDataset>(TaskKind::kClassification, config.trainSize,
                                          config.testSize, program, std::move(net.table),
                                          std::move(net.dims));
}

}  // namespace

DatasetKindDescriptor teacherKind() {
  DatasetKindDescriptor d;
  d.name = "teacher";
  d.summary = "Gaussian inputs labelled by a fixed random network (a student-teacher task)";
  d.classes = {.defaultValue = 10, .minimum = 2, .maximum = kMaxWidth};
  d.features = {.defaultValue = 32, .fixed = false};
  const SettingSchema width{.key = "teacher_width",
                            .label = "Teacher width",
                            .help = "Width of each hidden layer of the teacher network",
                            .defaultValue = int64_t{64},
                            .min = 1,
                            .max = kMaxWidth};
  const SettingSchema depth{.key = "teacher_depth",
                            .label = "Teacher depth",
                            .help = "Hidden layers of the teacher (0: a linear teacher)",
                            .defaultValue = int64_t{2},
                            .min = 0,
                            .max = kMaxTeacherDepth};
  const SettingSchema labelNoise{.key = "label_noise",
                                 .type = SettingType::kReal,
                                 .label = "Label noise",
                                 .help = "Probability that a label is replaced by a random class",
                                 .defaultValue = 0.0,
                                 .min = 0.0,
                                 .max = 1.0,
                                 .singlePrecision = true};
  d.parameters = {width, depth, labelNoise};
  d.check = [](const DatasetConfig& config, const std::string& path) {
    const double weights = teacherWeights(config, teacherShape(config));
    if (weights > kMaxTeacherParameters)
      throw SpecError(
          path + ".teacher_width",
          ::dtlab::detail::concat("the teacher network would have ", static_cast<int64_t>(weights),
                                  " weights, above the limit of ",
                                  static_cast<int64_t>(kMaxTeacherParameters),
                                  "; reduce teacher_width or teacher_depth"));
  };
  d.make = makeTeacher;
  return d;
}

}  // namespace dtlab::core::datagen
