#include "core/spec/spec_json.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <set>
#include <span>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/data/dataset_kinds.h"
#include "core/nn/model_kinds.h"
#include "core/spec/data_partition_checks.h"
#include "core/spec/dataset_section.h"
#include "core/spec/section_fields.h"
#include "core/spec/setting_json.h"
#include "core/spec/spec_names.h"
#include "core/spec/spec_reader.h"
#include "core/spec/variants.h"
#include "core/train/strategy_registry.h"

namespace dtlab::core {

namespace {

using detail::concat;
using nlohmann::json;
using namespace spec_detail;

// ---------------------------------------------------------------------------------------------
// Limits that are not in the header because only the parser needs them; the fields' bounds are
// the schema's (core/spec/spec_fields.h, read through SectionFields).

// Weights of the trained model: 1 GiB of float32, so weights plus optimizer state stay within a
// node's memory.
constexpr double kMaxModelParameters = double{1 << 28};

// The fields each JSON object accepts are its section's in the schema (core/spec/spec_fields.h),
// in the order toJson() writes them; ObjectReader enforces that the parse functions read them.

// ---------------------------------------------------------------------------------------------
// Sections.

std::vector<std::string_view> modelFields() {
  const std::span<const std::string_view> common = specSectionKeys("model");
  std::vector<std::string_view> fields(common.begin(), common.end());
  for (const ModelKindDescriptor* k : modelKinds())
    for (const SettingSchema& s : k->parameters)
      if (std::find(fields.begin(), fields.end(), s.key) == fields.end()) fields.push_back(s.key);
  return fields;
}

// The kind's own settings; one only other kinds declare is refused, as it would be ignored.
void readModelParameters(ObjectReader& r, std::span<const std::string_view> fields,
                         const ModelKindDescriptor& kind, ModelConfig& m) {
  const std::span<const std::string_view> common = specSectionKeys("model");
  for (std::string_view key : fields) {
    if (std::find(common.begin(), common.end(), key) != common.end()) continue;
    const json* value = r.find(key);
    if (value == nullptr) continue;
    const SettingSchema* own = findSetting(kind.parameters, key);
    if (own == nullptr) {
      std::vector<std::string> owners;
      for (const ModelKindDescriptor* k : modelKinds())
        if (findSetting(k->parameters, key) != nullptr) owners.push_back(k->name);
      throw SpecError(r.pathOf(key), concat("only used by ", listText(owners), ", not by ",
                                            kind.name, "; remove it (got ", describe(*value), ")"));
    }
    m.parameters.set(own->key, readSetting(*value, r.pathOf(key), *own));
  }
  completeSettings(kind.parameters, m.parameters, r);
}

ModelConfig parseModel(ObjectReader& r, std::span<const std::string_view> fields,
                       const DatasetConfig& data) {
  ModelConfig m;
  const ModelKindDescriptor* kind = findModelKind({});
  if (const json* name = r.find("kind"))
    kind = findModelKind(toChoiceName(*name, r.pathOf("kind"), modelKindNames()));
  m.kind = kind->name;
  if (const json* hidden = r.find("hidden")) {
    const SectionFields f(r, "model");
    const std::string path = r.pathOf("hidden");
    if (!hidden->is_array())
      throw SpecError(
          path, "must be an array of hidden layer widths (may be empty), got " + describe(*hidden));
    const IntegerBounds layers = f.size("hidden");
    const IntegerBounds width = f.integerBounds("hidden");
    if (static_cast<int64_t>(hidden->size()) > layers.max)
      throw SpecError(path,
                      concat("must have at most ", layers.max, " layers, got ", hidden->size()));
    m.hidden.clear();
    for (size_t i = 0; i < hidden->size(); ++i)
      m.hidden.push_back(toInteger((*hidden)[i], concat(path, "[", i, "]"), width.min, width.max));
  }
  readModelParameters(r, fields, *kind, m);
  if (auto v = r.choice("activation", kActivationNames)) m.activation = *v;
  if (auto v = r.choice("init", kInitNames)) m.init = *v;
  const bool classification = datasetKindOf(data).task == TaskKind::kClassification;
  m.loss = classification ? LossKind::kCrossEntropy : LossKind::kMse;
  if (auto v = r.choice("loss", kLossNames)) m.loss = *v;
  if (m.loss == LossKind::kCrossEntropy && !classification)
    throw SpecError(r.pathOf("loss"), concat("cross_entropy needs a classification dataset, and ",
                                             data.kind, " is a regression dataset; use mse"));
  // Its targets are values, one per output; a classification's labels are classes.
  if (m.loss == LossKind::kMse && classification)
    throw SpecError(r.pathOf("loss"), concat("mse needs a regression dataset's target values, and ",
                                             data.kind, " gives classes; use cross_entropy"));
  const SampleShape samples = sampleShapeOf(data);
  if (kind->check) kind->check(m, samples, r.path());
  const auto parameters = static_cast<double>(kind->parameterCount(m, samples));
  if (parameters > kMaxModelParameters)
    throw SpecError(r.pathOf(kind->sizeSetting),
                    concat("the model would have ", formatNumber(parameters),
                           " parameters, above the limit of ", formatNumber(kMaxModelParameters),
                           "; use fewer or narrower layers"));
  r.finish();
  return m;
}

ScheduleConfig parseSchedule(ObjectReader& r, float lr) {
  ScheduleConfig s;
  const ScheduleConfig defaults;
  if (auto v = r.choice("kind", kScheduleNames)) s.kind = *v;
  const char* kindName = toString(s.kind);
  SectionFields f(r, "optimizer.schedule");
  if (auto v = f.integer("warmup_steps")) s.warmupSteps = *v;
  if (auto v = f.integer("step_size")) s.stepSize = *v;
  if (auto v = f.real32("gamma")) s.gamma = *v;
  if (auto v = f.real32("min_lr")) s.minLr = *v;
  const bool step = s.kind == ScheduleKind::kStep;
  const bool cosine = s.kind == ScheduleKind::kCosine;
  // Cosine reads step_size as its length when the run has no step or epoch limit to span.
  rejectIfChanged(r, "step_size", s.stepSize, defaults.stepSize, step || cosine,
                  "the step and cosine schedules", kindName);
  rejectIfChanged(r, "gamma", s.gamma, defaults.gamma, step, "the step schedule", kindName);
  rejectIfChanged(r, "min_lr", s.minLr, defaults.minLr, cosine, "the cosine schedule", kindName);
  if (cosine && s.minLr > lr)
    throw SpecError(r.pathOf("min_lr"), concat("must not exceed optimizer.lr (", formatFloat(lr),
                                               "), got ", formatFloat(s.minLr)));
  r.finish();
  return s;
}

OptimizerConfig parseOptimizer(ObjectReader& r) {
  OptimizerConfig o;
  const OptimizerConfig defaults;
  if (auto v = r.choice("kind", kOptimizerNames)) o.kind = *v;
  const char* kindName = toString(o.kind);
  const bool sgd = o.kind == OptimizerKind::kSgd;
  const bool adamFamily = o.kind == OptimizerKind::kAdam || o.kind == OptimizerKind::kAdamW;
  const bool adadelta = o.kind == OptimizerKind::kAdadelta;
  // Adadelta's rate multiplies an already unit-scaled step; PyTorch's defaults are lr 1, eps 1e-6.
  if (adadelta) {
    o.lr = 1.0f;
    o.eps = 1e-6f;
  }
  SectionFields f(r, "optimizer");
  if (auto v = f.real32("lr")) o.lr = *v;
  if (auto v = f.real32("momentum")) o.momentum = *v;
  if (auto v = r.boolean("nesterov")) o.nesterov = *v;
  if (auto v = f.real32("weight_decay")) o.weightDecay = *v;
  if (auto v = f.real32("beta1")) o.beta1 = *v;
  if (auto v = f.real32("beta2")) o.beta2 = *v;
  if (auto v = f.real32("eps")) o.eps = *v;
  if (auto v = f.real32("rho")) o.rho = *v;
  if (r.isSet("scale_lr_base_batch")) o.scaleLrBaseBatch = f.integer("scale_lr_base_batch");

  rejectIfChanged(r, "momentum", o.momentum, defaults.momentum, sgd, "sgd", kindName);
  rejectIfChanged(r, "nesterov", o.nesterov, defaults.nesterov, sgd, "sgd", kindName);
  rejectIfChanged(r, "beta1", o.beta1, defaults.beta1, adamFamily, "adam and adamw", kindName);
  rejectIfChanged(r, "beta2", o.beta2, defaults.beta2, adamFamily, "adam and adamw", kindName);
  rejectIfChanged(r, "eps", o.eps, defaults.eps, !sgd, "adam, adamw and adadelta", kindName);
  rejectIfChanged(r, "rho", o.rho, defaults.rho, adadelta, "adadelta", kindName);
  if (sgd && o.nesterov && o.momentum == 0.0f)
    throw SpecError(r.pathOf("nesterov"), "needs momentum > 0, and optimizer.momentum is 0");

  ObjectReader schedule = r.child("schedule", specSectionKeys("optimizer.schedule"));
  o.schedule = parseSchedule(schedule, o.lr);
  r.finish();
  return o;
}

TrainingConfig parseTraining(ObjectReader& r, const DatasetConfig& data) {
  TrainingConfig t;
  SectionFields f(r, "training");
  if (auto v = f.integer("batch_size")) t.batchSize = *v;
  if (auto v = f.integer("epochs")) t.epochs = *v;
  if (auto v = f.integer("max_steps")) t.maxSteps = *v;
  if (auto v = f.real("max_seconds")) t.maxSeconds = *v;
  if (r.isSet("target_accuracy")) t.targetAccuracy = f.real("target_accuracy");
  if (auto v = f.integer("eval_interval")) t.evalInterval = *v;
  if (auto v = f.integer("threads")) t.threads = static_cast<int>(*v);
  if (auto v = r.choice("precision", kPrecisionNames)) t.precision = *v;
  if (auto v = f.integer("checkpoint_every")) t.checkpointEvery = *v;
  if (auto v = f.real("checkpoint_seconds")) t.checkpointSeconds = *v;
  if (auto v = f.integer("checkpoints_kept")) t.checkpointsKept = *v;
  ObjectReader partition = r.child("data_partition", specSectionKeys("training.data_partition"));
  SectionFields p(partition, "training.data_partition");
  if (auto v = partition.choice("kind", kDataPartitionNames)) t.dataPartition.kind = *v;
  if (partition.has("alpha") && t.dataPartition.kind != DataPartitionKind::kDirichlet)
    throw SpecError(partition.pathOf("alpha"), "applies only to \"kind\": \"dirichlet\"");
  if (auto v = p.real("alpha")) t.dataPartition.alpha = *v;
  partition.finish();
  checkDataPartition(t.dataPartition, data, partition.path());
  if (t.batchSize > data.trainSize)
    throw SpecError(r.pathOf("batch_size"), concat("must not exceed dataset.train_size (",
                                                   data.trainSize, "), got ", t.batchSize));
  if (t.epochs == 0 && t.maxSteps == 0 && t.maxSeconds == 0.0)
    throw SpecError(r.path(),
                    "no stopping condition: epochs, max_steps and max_seconds are all 0; set at "
                    "least one (target_accuracy alone may never be reached)");
  r.finish();
  return t;
}

ClusterConfig parseCluster(ObjectReader& r) {
  ClusterConfig c;
  SectionFields f(r, "cluster");
  const std::optional<int64_t> localNodes = f.integer("local_nodes");
  if (localNodes) c.localNodes = *localNodes;
  if (auto v = f.integer("threads_per_node")) c.threadsPerNode = static_cast<int>(*v);
  if (auto v = r.text("device")) {
    const std::vector<std::string>& devices = f.field("device").choices;
    if (std::find(devices.begin(), devices.end(), *v) == devices.end())
      throw SpecError(r.pathOf("device"),
                      "must be \"cpu\" or \"cuda\" (the node daemons choose the GPU: dtlab-node "
                      "--devices cuda:N), got " +
                          r.describeField("device"));
    c.device = *v;
  }
  if (auto v = f.integer("wait_seconds")) c.waitSeconds = *v;
  if (const json* nodes = r.find("nodes")) {
    const std::string path = r.pathOf("nodes");
    if (!nodes->is_array())
      throw SpecError(path, "must be a list of node objects, got " + describe(*nodes));
    const int64_t maxNodes = f.size("nodes").max;
    if (nodes->size() > static_cast<size_t>(maxNodes))
      throw SpecError(path, concat("at most ", maxNodes, " nodes, got ", nodes->size()));
    for (size_t i = 0; i < nodes->size(); ++i) {
      ObjectReader n((*nodes)[i], concat(path, "[", i, "]"), specSectionKeys("cluster.nodes[i]"));
      SectionFields nf(n, "cluster.nodes[i]");
      NodeConfig node;
      if (auto v = n.text("address")) {
        const std::string problem = nodeAddressProblem(*v);
        if (!problem.empty()) throw SpecError(n.pathOf("address"), problem);
        node.address = *v;
      }
      if (auto v = nf.real("speed")) node.speed = *v;
      if (auto v = nf.real("bandwidth_mbps")) node.bandwidthMbps = *v;
      if (auto v = nf.real("latency_ms")) node.latencyMs = *v;
      if (const json* schedule = n.find("speed_schedule")) {
        const std::string at = n.pathOf("speed_schedule");
        if (!schedule->is_array())
          throw SpecError(
              at, "must be a list of {\"at_step\": N, \"speed\": F}, got " + describe(*schedule));
        const int64_t maxChanges = nf.size("speed_schedule").max;
        if (schedule->size() > static_cast<size_t>(maxChanges))
          throw SpecError(at, concat("at most ", maxChanges, " changes, got ", schedule->size()));
        for (size_t k = 0; k < schedule->size(); ++k) {
          ObjectReader change((*schedule)[k], concat(at, "[", k, "]"),
                              specSectionKeys("cluster.nodes[i].speed_schedule[k]"));
          SectionFields cf(change, "cluster.nodes[i].speed_schedule[k]");
          const auto step = cf.integer("at_step");
          const auto speed = cf.real("speed");
          change.finish();
          if (!step)
            throw SpecError(change.pathOf("at_step"), "missing: the step the speed applies from");
          if (!speed) throw SpecError(change.pathOf("speed"), "missing: the speed from at_step on");
          if (!node.speedSchedule.empty() && *step <= node.speedSchedule.back().atStep)
            throw SpecError(change.pathOf("at_step"),
                            concat("must come after the previous change's step ",
                                   node.speedSchedule.back().atStep, ", got ", *step));
          node.speedSchedule.push_back({*step, *speed});
        }
      }
      if (n.find("straggler") != nullptr) {
        ObjectReader straggler =
            n.child("straggler", specSectionKeys("cluster.nodes[i].straggler"));
        SectionFields sf(straggler, "cluster.nodes[i].straggler");
        if (auto v = sf.real("probability")) node.straggler.probability = *v;
        if (auto v = sf.real("pause_ms")) node.straggler.pauseMs = *v;
        straggler.finish();
      }
      n.finish();
      // All nodes are running daemons at their addresses, or none is: a run either starts
      // its local cluster or uses the given one, never half of each.
      if (i > 0 && node.address.empty() != c.nodes.front().address.empty())
        throw SpecError(n.pathOf("address"),
                        node.address.empty()
                            ? "missing, and cluster.nodes[0] has one; either every node has "
                              "an address (running dtlab-node daemons) or none does (local "
                              "nodes)"
                            : "cluster.nodes[0] has no address; either every node has an "
                              "address (running dtlab-node daemons) or none does (local "
                              "nodes)");
      for (size_t j = 0; j < c.nodes.size() && !node.address.empty(); ++j)
        if (c.nodes[j].address == node.address)
          throw SpecError(n.pathOf("address"),
                          concat("'", node.address, "' is also cluster.nodes[", j,
                                 "]; a daemon runs one job at a time, so each node needs its "
                                 "own address"));
      c.nodes.push_back(node);
    }
    const int64_t count = static_cast<int64_t>(c.nodes.size());
    if (c.remote()) {
      if (localNodes && *localNodes != count)
        throw SpecError(r.pathOf("local_nodes"),
                        concat("must be left out or equal the number of nodes (", count,
                               ") when the nodes have addresses, got ", *localNodes));
      c.localNodes = count;
    } else if (count > 1 && count != c.localNodes) {
      throw SpecError(path, concat("must have one entry (for every node) or local_nodes (",
                                   c.localNodes, ") entries, got ", count));
    }
  }
  r.finish();
  return c;
}

// ---------------------------------------------------------------------------------------------
// Writing.

// Rejects repeated keys, which nlohmann would resolve silently to the last one: a spec with
// "lr" twice almost always means an edit went into the wrong copy. Tracks the path of the
// current value so the error can name it.
class DuplicateKeyDetector {
 public:
  bool onEvent(json::parse_event_t event, const json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        beginValue();
        frames_.push_back(Frame{true, {}, {}, -1});
        break;
      case json::parse_event_t::array_start:
        beginValue();
        frames_.push_back(Frame{false, {}, {}, -1});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames_.empty()) frames_.pop_back();
        break;
      case json::parse_event_t::key: {
        if (frames_.empty() || !frames_.back().isObject || !parsed.is_string()) break;
        Frame& frame = frames_.back();
        frame.key = parsed.get<std::string>();
        if (!frame.keys.insert(frame.key).second)
          throw SpecError(path(), "duplicate key; each field may appear only once");
        break;
      }
      case json::parse_event_t::value:
        beginValue();
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool isObject;
    std::set<std::string> keys;
    std::string key;
    int64_t index;
  };

  void beginValue() {
    if (!frames_.empty() && !frames_.back().isObject) ++frames_.back().index;
  }

  std::string path() const {
    std::string out;
    for (const Frame& frame : frames_) {
      if (frame.isObject)
        out = joinPath(out, frame.key);
      else
        out += concat("[", frame.index, "]");
    }
    return out;
  }

  std::vector<Frame> frames_;
};

// nlohmann prefixes messages with "[json.exception.parse_error.101] "; users need the rest.
std::string withoutExceptionId(const char* what) {
  std::string_view message(what);
  if (!message.empty() && message.front() == '[') {
    const size_t end = message.find("] ");
    if (end != std::string_view::npos) message.remove_prefix(end + 2);
  }
  return std::string(message);
}

}  // namespace

ExperimentSpec parseExperimentSpec(const json& document) {
  try {
    ExperimentSpec spec;
    ObjectReader r(document, "", specSectionKeys(""));
    SectionFields f(r, "");
    if (auto v = r.text("name")) {
      const IntegerBounds bytes = f.size("name");
      if (static_cast<int64_t>(v->size()) < bytes.min ||
          static_cast<int64_t>(v->size()) > bytes.max)
        throw SpecError(r.pathOf("name"),
                        concat("must be a non-empty string of at most ", bytes.max, " bytes, got ",
                               r.describeField("name")));
      // Text input is checked by the JSON parser; a document built in code is not, and an
      // invalid name would only fail later, when the spec is written out.
      try {
        static_cast<void>(json(*v).dump());
      } catch (const json::type_error&) {
        throw SpecError(r.pathOf("name"), "must be valid UTF-8");
      }
      spec.name = *v;
    }
    if (auto v = r.unsignedInteger("seed")) spec.seed = *v;
    if (auto v = f.integer("repeats")) spec.repeats = *v;
    const std::vector<std::string_view> datasetKeys = datasetFields();
    ObjectReader dataset = r.child("dataset", datasetKeys);
    spec.dataset = parseDataset(dataset, datasetKeys, spec.seed);
    const std::vector<std::string_view> modelKeys = modelFields();
    ObjectReader model = r.child("model", modelKeys);
    spec.model = parseModel(model, modelKeys, spec.dataset);
    ObjectReader optimizer = r.child("optimizer", specSectionKeys("optimizer"));
    spec.optimizer = parseOptimizer(optimizer);
    ObjectReader training = r.child("training", specSectionKeys("training"));
    spec.training = parseTraining(training, spec.dataset);
    ObjectReader cluster = r.child("cluster", specSectionKeys("cluster"));
    spec.cluster = parseCluster(cluster);
    if (spec.training.precision != Precision::kFp32 && spec.cluster.device != "cuda")
      throw SpecError(training.pathOf("precision"),
                      concat("\"", nameOf(kPrecisionNames, spec.training.precision),
                             "\" needs \"cluster\": {\"device\": \"cuda\"}; the CPU backend "
                             "computes in fp32 only"));
    spec.variants = parseVariants(r.find("variants"), r.pathOf("variants"), spec);
    r.finish();
    return spec;
  } catch (const json::exception& e) {
    // Every access above is type-checked first; this keeps the "only SpecError" promise should
    // one be missed. The tests fail on this message.
    throw SpecError("(json)", std::string("internal error reading the spec: ") + e.what());
  }
}

DatasetConfig parseDatasetSection(const json& dataset, uint64_t specSeed) {
  try {
    const json document = {{"dataset", dataset}};
    ObjectReader r(document, "", specSectionKeys(""));
    const std::vector<std::string_view> keys = datasetFields();
    ObjectReader reader = r.child("dataset", keys);
    return parseDataset(reader, keys, specSeed);
  } catch (const json::exception& e) {
    throw SpecError("(json)", std::string("internal error reading the dataset: ") + e.what());
  }
}

json toJson(const DatasetConfig& dataset) {
  return datasetJson(dataset);
}

ExperimentSpec parseExperimentSpecText(const std::string& text) {
  // The JSON parser reads a NUL as the end of its input: whatever follows would be dropped
  // without a word (a truncated edit, a binary file).
  if (const std::size_t nul = text.find('\0'); nul != std::string::npos)
    throw SpecError("(json)", concat("a NUL byte at offset ", nul, " (line ",
                                     1 + std::count(text.begin(), text.begin() + nul, '\n'),
                                     "): a spec is JSON text, which holds none"));
  json document;
  try {
    DuplicateKeyDetector duplicates;
    document = json::parse(text, [&duplicates](int, json::parse_event_t event, json& parsed) {
      return duplicates.onEvent(event, parsed);
    });
  } catch (const json::parse_error& e) {
    throw SpecError("(json)", "invalid JSON: " + withoutExceptionId(e.what()));
  } catch (const json::exception& e) {
    // out_of_range 406: a number too large for a double ("1e400").
    throw SpecError("(json)", "invalid JSON: " + withoutExceptionId(e.what()));
  }
  return parseExperimentSpec(document);
}

ExperimentSpec loadExperimentSpec(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error("cannot read spec file '" + path + "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open spec file '" + path + "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error("cannot read spec file '" + path + "'");
  try {
    return parseExperimentSpecText(text.str());
  } catch (const SpecError& e) {
    throw e.withContext(path);
  }
}

ExperimentSpec canonicalSpec(const ExperimentSpec& spec) {
  ExperimentSpec out = spec;
  out.dataset = canonicalDataset(spec.dataset);
  out.model = canonicalModel(spec.model);
  for (VariantConfig& v : out.variants) v = canonicalVariant(v);
  return out;
}

bool sameExperiment(const ExperimentSpec& a, const ExperimentSpec& b) {
  return canonicalSpec(a) == canonicalSpec(b);
}

}  // namespace dtlab::core
