#pragma once
// The kinds of synthetic dataset this build can generate, each described once by a
// DatasetKindDescriptor that its own generator file defines (name, task, the rules for classes
// and features, its parameters as a schema, how the GUI previews it, how to build it). The
// spec's parser and writer, makeDataset, the GUI's dataset page and `dtlab-cli bench data` read
// this list; no code outside a kind's own files names that kind. Adding one: core/data/README.md.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/dataset.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/settings.h"

namespace dtlab::core {

// What the GUI's dataset page draws of a kind's samples.
enum class DatasetPreviewKind {
  kScatter,  // the first two features (the data itself for 2-D kinds), coloured by class
  kImages,   // also a row of samples as grayscale images (the layout's {1, height, width})
  kTokens,   // a few samples as lines of token ids, inputs above their targets
};

// How many classes (outputs) a kind has. minimum == maximum: fixed by the kind, and a spec may
// give only that value.
struct ClassRule {
  int64_t defaultValue = 2;
  int64_t minimum = 2;
  int64_t maximum = 2;
  bool fixed() const { return minimum == maximum; }
};

// How many features a kind's samples have: any width from 1 (a spec's "features"), or fixed.
struct FeatureRule {
  int64_t defaultValue = 32;
  bool fixed = false;
};

struct DatasetKindDescriptor {
  std::string name;     // the spec's dataset "kind"
  std::string summary;  // one line: what the samples look like (GUI tooltips, docs)
  TaskKind task = TaskKind::kClassification;
  ClassRule classes;  // regression: {1, 1, 1}
  FeatureRule features;
  // The kind's own parameters, in the order specs and forms show them. A key several kinds
  // declare ("noise") means what each kind's help says.
  std::vector<SettingSchema> parameters;
  DatasetPreviewKind preview = DatasetPreviewKind::kScatter;
  // How a sample's features are laid out, outermost first ({channels, height, width} for
  // images; their product is the features), which models that see structure (a convolution)
  // read. Optional: a flat vector of the features.
  std::function<std::vector<int64_t>(const DatasetConfig&)> layout;
  // The features are token ids in [0, classes), as floats (sequence kinds): a model embeds them
  // rather than reading them as numbers.
  bool tokens = false;
  // Labels per sample (Dataset::targets()): a sequence kind's one per position. Optional: 1.
  std::function<int64_t(const DatasetConfig&)> targets;
  // The targets are the next tokens: position t's target is the input at t + 1, so a model
  // that sees a position's later tokens reads its answer (only a causal model may train on it).
  bool causal = false;
  // Checks the schema cannot express (a limit on a product of fields); throws SpecError under
  // `path` ("dataset"). Optional.
  std::function<void(const DatasetConfig&, const std::string& path)> check;
  // Builds the dataset; throws Error naming a field the config cannot work with.
  std::function<std::unique_ptr<Dataset>(const DatasetConfig&)> make;

  SettingsView view(const DatasetConfig& config) const { return {parameters, config.parameters}; }
};

// Every registered kind, in registration order (the built-in ones first). The first is the
// default of a dataset that names none. References stay valid for the life of the process.
std::vector<const DatasetKindDescriptor*> datasetKinds();
// The descriptor named `name` (empty: the default), or nullptr.
const DatasetKindDescriptor* findDatasetKind(std::string_view name);
// The descriptor of a config's kind; throws Error naming an unknown one.
const DatasetKindDescriptor& datasetKindOf(const DatasetConfig& config);
// Adds a kind (a plug-in, or a test's own). Throws Error when the name is taken or the
// descriptor is incomplete. Register before any spec that names it is parsed.
void registerDatasetKind(DatasetKindDescriptor descriptor);
std::vector<std::string> datasetKindNames();
// "two_spirals, checkerboard and shapes": the registered kinds for which `pick` holds.
std::string datasetKindList(const std::function<bool(const DatasetKindDescriptor&)>& pick);
// A dataset of `kind` (empty: the default) with that kind's classes, features and parameters
// at their defaults, sizes and seed at DatasetConfig's.
DatasetConfig defaultDataset(std::string_view kind = {});
// The config as its kind reads it (core/spec/settings.h's canonicalSettings), the kind named;
// an unknown kind's config as it is. Two configs are the same dataset when their canonical
// forms are equal.
DatasetConfig canonicalDataset(const DatasetConfig& config);

// What a model is given of a dataset's samples (core/nn's model kinds are described in its
// terms): the floats of a sample, how they are laid out, and how many outputs the model
// computes for it.
struct SampleShape {
  int64_t features = 0;
  std::vector<int64_t> dims;  // outermost first; their product is `features`
  // Values the model computes per sample: classes x targets (a class distribution per label),
  // or 1 for regression.
  int64_t outputs = 0;
  int64_t targets = 1;     // labels per sample (Dataset::targets())
  int64_t vocabulary = 0;  // token kinds: the features are ids in [0, vocabulary); else 0
  bool causal = false;     // next-token targets (DatasetKindDescriptor::causal)
  // {channels, height, width}: an image.
  bool image() const { return dims.size() == 3; }
  bool tokens() const { return vocabulary > 0; }
  int64_t classes() const { return outputs / targets; }  // per label
};
// The samples of the dataset `config` describes, by its kind's rules (a kind's fixed features
// and classes, one output for a regression, its layout).
SampleShape sampleShapeOf(const DatasetConfig& config);

// Builds the dataset the config describes, by its kind's descriptor.
// Throws dtlab::Error naming the field when the config cannot work (an unknown kind
// included). Fields a kind does not use are ignored, including features and classes
// where the kind fixes them.
std::unique_ptr<Dataset> makeDataset(const DatasetConfig& config);

// The kinds this build comes with, first the default (core/data/builtin_kinds.cc, which
// includes each kind's generator: the registry itself includes none, since they include it).
std::vector<DatasetKindDescriptor> builtinDatasetKinds();

}  // namespace dtlab::core
