#pragma once
// The kinds of model this build can train, each described once by a ModelKindDescriptor that
// its own file defines (name, summary, its settings as a schema, its parameter count and shape
// for a config, how to build it). The spec's parser and writer, the worker, the parameter
// server's layout, the simulator and the spec's description read this list; no code outside a
// kind's own files names that kind. Adding one: core/nn/README.md.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/backend.h"
#include "core/data/dataset_kinds.h"
#include "core/nn/model.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/settings.h"

namespace dtlab::core {

struct ModelKindDescriptor {
  std::string name;     // the spec's model "kind"
  std::string summary;  // one line: what the model is (GUI tooltips, docs)
  // The kind's own settings, in the order specs and forms show them (ModelConfig::parameters).
  std::vector<SettingSchema> parameters;
  // Parameters of the model `config` describes for `samples` (core/data/dataset_kinds.h: their
  // features, layout and outputs), without building it (the parameter server's layout, the
  // spec's size limit).
  std::function<int64_t(const ModelConfig& config, const SampleShape& samples)> parameterCount;
  // Whether the kind reads ModelConfig::hidden (dense layers' widths); the GUI hides the field
  // for one that does not.
  bool readsHidden = true;
  // The setting a model over the parameter limit is refused on: the one that most sets its size.
  std::string sizeSetting = "hidden";
  // Multiply-adds of one forward pass per sample, likewise (how many threads a step is worth).
  std::function<int64_t(const ModelConfig& config, const SampleShape& samples)> forwardMacs;
  // Floats a replica keeps per sample from forward for backward (every layer's output, the
  // pre-activations GELU needs): the memory a batch takes. Optional: unknown.
  std::function<int64_t(const ModelConfig& config, const SampleShape& samples)> activationFloats;
  // The shape in a few words: "MLP 32-128-128-10".
  std::function<std::string(const ModelConfig& config, const SampleShape& samples)> shape;
  // Checks the schema cannot express, for such samples (a convolution needs images); throws
  // SpecError under `path` ("model"). Optional.
  std::function<void(const ModelConfig& config, const SampleShape& samples,
                     const std::string& path)>
      check;
  // Builds the model on `backend`, its weights not yet initialised.
  std::function<std::unique_ptr<Model>(Backend& backend, const ModelConfig& config,
                                       const SampleShape& samples, int64_t controlSlots)>
      make;

  SettingsView view(const ModelConfig& config) const { return {parameters, config.parameters}; }
};

// Every registered kind, in registration order (the built-in ones first). The first is the
// default of a model that names none. References stay valid for the life of the process.
std::vector<const ModelKindDescriptor*> modelKinds();
// The descriptor named `name` (empty: the default), or nullptr.
const ModelKindDescriptor* findModelKind(std::string_view name);
// The descriptor of a config's kind; throws Error naming an unknown one.
const ModelKindDescriptor& modelKindOf(const ModelConfig& config);
// Adds a kind (a plug-in, or a test's own). Throws Error when the name is taken or the
// descriptor is incomplete. Register before any spec that names it is parsed.
void registerModelKind(ModelKindDescriptor descriptor);
std::vector<std::string> modelKindNames();
// The config as its kind reads it, as canonicalDataset (core/data/dataset_kinds.h).
ModelConfig canonicalModel(const ModelConfig& config);

// The model `config` describes for `samples`, built on `backend` by its kind, its weights not
// yet initialised.
std::unique_ptr<Model> makeModel(Backend& backend, const ModelConfig& config,
                                 const SampleShape& samples,
                                 int64_t controlSlots = Model::kControlSlots);
// The parameter count of the spec's model, its outputs the dataset's classes (every node
// computes the parameter server's layout from the spec alone; the worker checks it against the
// model it built).
int64_t modelParameterCount(const ExperimentSpec& spec);

// What one replica of the spec's model holds and costs, known before anything runs (the
// experiment page shows it as the user edits).
struct ReplicaFootprint {
  int64_t parameters = 0;
  int64_t forwardMacsPerSample = 0;
  int64_t optimizerVectors = 0;  // floats of optimizer state per parameter (momentum: 1)
  std::optional<int64_t> activationFloatsPerSample;  // unknown for a kind that does not say
  int64_t localBatch = 0;  // the largest share of the global batch a node takes (equal split)
  // Parameters, gradients and optimizer state.
  int64_t stateBytes() const { return 4 * parameters * (2 + optimizerVectors); }
  // What forward keeps for backward at the local batch; 0 when unknown.
  int64_t activationBytes() const { return 4 * activationFloatsPerSample.value_or(0) * localBatch; }
};
ReplicaFootprint replicaFootprint(const ExperimentSpec& spec);

// The kinds this build comes with, first the default (core/nn/builtin_models.cc, which includes
// each kind: the registry itself includes none, since they include it).
std::vector<ModelKindDescriptor> builtinModelKinds();

}  // namespace dtlab::core
