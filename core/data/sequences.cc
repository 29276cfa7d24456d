// Token sequences: a synthetic language whose next-token loss has a known floor, and the
// copy task. A sample's features are token ids (as floats) and it has one target per
// position, so a model is scored per token (core/data/dataset.h, targets()).
//
// `language`: tokens from an n-gram teacher. The token after a context of the previous
// n - 1 tokens (a start symbol before the first) is drawn from a Zipf law over the
// vocabulary, P(rank r) ~ 1 / (r + 1)^s, whose ranks the context maps to tokens by a
// bijection of its own (token = (a * r + b) mod V, a coprime to V, both from the context's
// hash). Every context's distribution is a permutation of the same law, so whatever the
// context, the next token's entropy is that law's entropy H: no causal model (one that sees
// the tokens up to a position, not after it) can reach a mean loss below H nats per token
// (lossFloor()), and one that has learnt every context's permutation reaches it. The features
// are tokens 0..T-1, the targets tokens 1..T: each target's context is in the features (or
// before the first, the start symbol, which the position tells), and so is the target itself,
// at the next position: the kind is `causal`, and models that see whole samples refuse it.
//
// `copy`: uniform random tokens; the targets are the same tokens, in the same order or
// reversed. The floor is 0; reversed, a model must see the whole sequence at every position
// (an MLP does; a transformer without the causal mask).
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/data/builtin_kinds.h"
#include "core/data/generators.h"

namespace dtlab::core::datagen {
namespace {

constexpr uint64_t kContextStream = 0x434F4E54'45585400ull;
constexpr int64_t kMaxVocabulary = 65536;
constexpr int64_t kMaxLength = 4096;
constexpr int64_t kMaxOrder = 6;

// The vocabulary and length rules both kinds share (a spec's "classes" and "features").
ClassRule vocabularyRule(int64_t defaultValue) {
  return {.defaultValue = defaultValue, .minimum = 2, .maximum = kMaxVocabulary};
}

bool lengthFits(const DatasetConfig& config) {
  return config.features >= 1 && config.features <= kMaxLength;
}

void checkLength(const DatasetConfig& config, const std::string& path) {
  if (!lengthFits(config))
    throw SpecError(path + ".features",
                    ::dtlab::detail::concat("the tokens of a sequence must be in [1, ", kMaxLength,
                                            "] (got ", config.features, ")"));
}

void requireLength(const DatasetConfig& config) {
  requireConfig(lengthFits(config), "features", "the tokens of a sequence must be in [1, ",
                kMaxLength, "] (got ", config.features, ")");
}

// A Zipf law over `vocabulary` ranks with exponent `s`: its cumulative probabilities (for
// sampling by inverse transform) and its entropy in nats.
struct ZipfLaw {
  std::vector<double> cumulative;
  double entropy = 0.0;
};

ZipfLaw zipfLaw(int64_t vocabulary, double s) {
  std::vector<double> weight(static_cast<std::size_t>(vocabulary));
  for (int64_t r = 0; r < vocabulary; ++r)
    weight[static_cast<std::size_t>(r)] = std::pow(static_cast<double>(r + 1), -s);
  const double total = std::accumulate(weight.begin(), weight.end(), 0.0);
  ZipfLaw law;
  law.cumulative.resize(weight.size());
  double sum = 0.0;
  for (std::size_t r = 0; r < weight.size(); ++r) {
    const double p = weight[r] / total;
    sum += p;
    law.cumulative[r] = sum;
    if (p > 0.0) law.entropy -= p * std::log(p);
  }
  law.cumulative.back() = 1.0;  // rounding must not leave a draw past the last rank
  return law;
}

// Uniform in [0, 1) with 53 random bits.
double uniform53(Rng& rng) {
  return static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
}

// A sequence kind's dataset: samples of features() tokens and as many targets, each made
// alone from its own key by sample().
class SequenceDataset : public Dataset {
 public:
  explicit SequenceDataset(const DatasetConfig& config)
      : Dataset(config.features, config.classes, TaskKind::kClassification, config.trainSize,
                config.testSize, config.seed, /*targets=*/config.features) {}

  void generate(Split split, int64_t begin, int64_t count, float* x, float* y) const override {
    checkRange(split, begin, count);
    for (int64_t k = 0; k < count; ++k)
      sample(split, begin + k, x + k * length(), y + k * length());
  }

  void generateIndices(Split split, std::span<const int64_t> indices, float* x,
                       float* y) const override {
    checkIndices(split, indices);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      const auto row = static_cast<int64_t>(k) * length();
      sample(split, indices[k], x + row, y + row);
    }
  }

 protected:
  int64_t length() const { return features(); }
  // Writes sample `index` of `split`: its tokens to x and its targets to y.
  virtual void sample(Split split, int64_t index, float* x, float* y) const = 0;
};

class LanguageDataset final : public SequenceDataset {
 public:
  LanguageDataset(const DatasetConfig& config, int64_t order, double zipf)
      : SequenceDataset(config), order_(order), law_(zipfLaw(config.classes, zipf)) {}

  std::optional<double> lossFloor() const override { return law_.entropy; }

 private:
  // Tokens 0..T of sample `index`: x gets 0..T-1, y 1..T.
  void sample(Split split, int64_t index, float* x, float* y) const override {
    const int64_t vocabulary = outputs();
    const auto start = static_cast<uint64_t>(vocabulary);  // the start symbol, no token
    Rng rng(sampleKey(seed(), split, index));
    // The last order - 1 tokens, oldest first (the start symbol before the first).
    std::array<uint64_t, kMaxOrder - 1> context;
    const auto held = static_cast<std::size_t>(order_ - 1);
    std::fill_n(context.begin(), held, start);
    for (int64_t t = 0; t <= length(); ++t) {
      uint64_t key = deriveSeed(seed(), kContextStream);
      for (std::size_t c = 0; c < held; ++c) key = mix64(key ^ context[c]);
      const auto rank = static_cast<uint64_t>(
          std::upper_bound(law_.cumulative.begin(), law_.cumulative.end(), uniform53(rng)) -
          law_.cumulative.begin());
      const uint64_t token = (multiplier(key) * rank + mix64(key + 1)) % start;
      if (t < length()) x[t] = static_cast<float>(token);
      if (t > 0) y[t - 1] = static_cast<float>(token);
      if (held > 0) {
        std::rotate(context.begin(), context.begin() + 1, context.begin() + held);
        context[held - 1] = token;
      }
    }
  }

  // A multiplier coprime to the vocabulary, so that rank -> token is a bijection.
  uint64_t multiplier(uint64_t key) const {
    const auto vocabulary = static_cast<uint64_t>(outputs());
    uint64_t a = mix64(key) % vocabulary;
    while (std::gcd(a, vocabulary) != 1) a = (a + 1) % vocabulary;
    return a;
  }

  int64_t order_;
  ZipfLaw law_;
};

class CopyDataset final : public SequenceDataset {
 public:
  CopyDataset(const DatasetConfig& config, bool reversed)
      : SequenceDataset(config), reversed_(reversed) {}

  std::optional<double> lossFloor() const override { return 0.0; }

 private:
  void sample(Split split, int64_t index, float* x, float* y) const override {
    Rng rng(sampleKey(seed(), split, index));
    const int64_t n = length();
    for (int64_t t = 0; t < n; ++t)
      x[t] = static_cast<float>(rng.below(static_cast<uint64_t>(outputs())));
    for (int64_t t = 0; t < n; ++t) y[t] = x[reversed_ ? n - 1 - t : t];
  }

  bool reversed_;
};

int64_t sequenceTargets(const DatasetConfig& config) {
  return config.features;
}

}  // namespace

DatasetKindDescriptor languageKind() {
  DatasetKindDescriptor d;
  d.name = "language";
  d.summary =
      "token sequences from a Zipf-law n-gram teacher: predict each next token (known loss floor)";
  d.classes = vocabularyRule(64);
  d.features = {.defaultValue = 32, .fixed = false};
  d.parameters = {
      SettingSchema{.key = "ngram",
                    .type = SettingType::kInteger,
                    .label = "n-gram",
                    .help = "The teacher's n: each token depends on the n - 1 before it (1: on "
                            "none, a unigram law)",
                    .defaultValue = int64_t{2},
                    .min = 1,
                    .max = kMaxOrder},
      SettingSchema{.key = "zipf",
                    .type = SettingType::kReal,
                    .label = "Zipf exponent",
                    .help = "s of the law P(rank r) ~ 1 / (r + 1)^s each context draws its next "
                            "token from: 0 is uniform, larger is more predictable",
                    .defaultValue = 1.0,
                    .min = 0.0,
                    .max = 4.0,
                    .singlePrecision = true}};
  d.preview = DatasetPreviewKind::kTokens;
  d.tokens = true;
  d.targets = sequenceTargets;
  d.causal = true;
  d.check = checkLength;
  d.make = [](const DatasetConfig& config) -> std::unique_ptr<Dataset> {
    requireLength(config);
    const SettingsView view = datasetKindOf(config).view(config);
    const int64_t order = view.integer("ngram");
    requireConfig(order >= 1 && order <= kMaxOrder, "ngram", "must be in [1, ", kMaxOrder,
                  "] (got ", order, ")");
    return std::make_unique<LanguageDataset>(config, order, realParameter(view, "zipf", 0, 4));
  };
  return d;
}

DatasetKindDescriptor copyKind() {
  DatasetKindDescriptor d;
  d.name = "copy";
  d.summary =
      "uniform random token sequences whose targets are the same tokens, in order or "
      "reversed";
  d.classes = vocabularyRule(16);
  d.features = {.defaultValue = 16, .fixed = false};
  d.parameters = {SettingSchema{.key = "order",
                                .type = SettingType::kChoice,
                                .label = "Order",
                                .help = "The targets' order: the tokens as they came (same) or "
                                        "last first (reversed)",
                                .defaultValue = std::string("reversed"),
                                .choices = {"same", "reversed"}}};
  d.preview = DatasetPreviewKind::kTokens;
  d.tokens = true;
  d.targets = sequenceTargets;
  d.check = checkLength;
  d.make = [](const DatasetConfig& config) -> std::unique_ptr<Dataset> {
    requireLength(config);
    const SettingsView view = datasetKindOf(config).view(config);
    return std::make_unique<CopyDataset>(config, view.choice("order") == "reversed");
  };
  return d;
}

}  // namespace dtlab::core::datagen
