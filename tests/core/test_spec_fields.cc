// The spec's schema (core/spec/spec_fields.h) against the parser, so that the schema, and
// docs/reference/spec.md made from it, cannot drift from what the parser does: each section
// accepts exactly the schema's keys, toJson() writes the schema's defaults for a spec that
// leaves them out, a value at each bound parses and one just outside is refused at the field's
// path, every choice parses and an unknown one is refused, and a value of another type, or a
// null where the field has no "not set", is refused.
#include <QtTest/QtTest>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/data/dataset_kinds.h"
#include "core/nn/model_kinds.h"
#include "core/spec/spec_fields.h"
#include "core/spec/spec_json.h"
#include "core/train/strategy_registry.h"

using namespace dtlab::core;
using dtlab::detail::concat;
using nlohmann::json;

namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
// A key no section has and none is close to (no "did you mean"), so the parser lists the keys
// the section accepts.
constexpr const char* kUnknownKey = "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq";
constexpr const char* kUnknownListed = "unknown field; known fields: ";

// A path of the schema ("cluster.nodes[i]") as the parser names its first element.
std::string concrete(std::string path) {
  for (const char* index : {"[i]", "[k]"})
    for (size_t at = path.find(index); at != std::string::npos; at = path.find(index))
      path.replace(at, 3, "[0]");
  return path;
}

std::string fieldPath(const SpecSection& s, const SpecField& f) {
  return s.path.empty() ? f.key : concat(concrete(s.path), ".", f.key);
}

// "cluster.nodes[0].speed" as a JSON pointer, "/cluster/nodes/0/speed".
json::json_pointer pointerOf(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '.' || c == '[')
      out += '/';
    else if (c != ']')
      out += c;
  }
  return json::json_pointer(path.empty() ? std::string() : concat("/", out));
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += concat(out.empty() ? "" : ", ", item);
  return out;
}

// The names a choice may take: its own, or those of the registry it names.
std::vector<std::string> choicesOf(const SpecField& f) {
  switch (f.registry) {
    case SpecRegistry::kNone:
      return f.choices;
    case SpecRegistry::kDatasetKinds:
      return datasetKindNames();
    case SpecRegistry::kModelKinds:
      return modelKindNames();
    case SpecRegistry::kStrategies:
      return strategyNames();
  }
  return {};
}

// The keys the registry's entries add to a section beside its fixed fields.
std::set<std::string> registryKeys(SpecRegistry registry) {
  std::set<std::string> keys;
  if (registry == SpecRegistry::kDatasetKinds)
    for (const DatasetKindDescriptor* d : datasetKinds())
      for (const SettingSchema& s : d->parameters) keys.insert(s.key);
  if (registry == SpecRegistry::kModelKinds)
    for (const ModelKindDescriptor* d : modelKinds())
      for (const SettingSchema& s : d->parameters) keys.insert(s.key);
  if (registry == SpecRegistry::kStrategies) {
    for (const StrategyDescriptor* d : strategies())
      for (const SettingSchema& s : d->settings) keys.insert(s.key);
    keys.insert({"partition", "bucket_kb"});  // old writers' keys (core/spec/variants.cc)
  }
  return keys;
}

std::optional<SpecError> errorOf(const json& document) {
  try {
    parseExperimentSpec(document);
  } catch (const SpecError& e) {
    return e;
  }
  return std::nullopt;
}

// What a probe of a field starts from, so that only the probed field is at issue: the kind that
// uses it, or what its bound needs of the rest of the spec. "PATH@min" and "PATH@max" are for
// the probes at and beyond one end of its bounds.
json contextOf(const std::string& path, const char* end = "") {
  static const std::map<std::string, json> contexts = {
      {"optimizer.beta1", {{"optimizer", {{"kind", "adam"}}}}},
      {"optimizer.beta2", {{"optimizer", {{"kind", "adam"}}}}},
      {"optimizer.eps", {{"optimizer", {{"kind", "adam"}}}}},
      {"optimizer.rho", {{"optimizer", {{"kind", "adadelta"}}}}},
      {"optimizer.schedule.step_size", {{"optimizer", {{"schedule", {{"kind", "step"}}}}}}},
      {"optimizer.schedule.gamma", {{"optimizer", {{"schedule", {{"kind", "step"}}}}}}},
      {"optimizer.schedule.min_lr", {{"optimizer", {{"schedule", {{"kind", "cosine"}}}}}}},
      // epochs 0 alone would leave the run without a stopping condition
      {"training.epochs", {{"training", {{"max_steps", 10}}}}},
      {"training.precision", {{"cluster", {{"device", "cuda"}}}}},
      {"training.data_partition.alpha",
       {{"training", {{"data_partition", {{"kind", "dirichlet"}}}}}}},
      // batch_size may not exceed train_size
      {"dataset.train_size", {{"training", {{"batch_size", 1}}}}},
      // a single class: a regression dataset; 65536 features: a small one, within the memory cap
      {"dataset.classes@min", {{"dataset", {{"kind", "linear_regression"}}}}},
      {"dataset.features", {{"dataset", {{"train_size", 1000}, {"test_size", 100}}}}},
      // the most nodes: as many workers as samples in a batch
      {"cluster.local_nodes", {{"training", {{"batch_size", 256}}}}},
      {"cluster.nodes", {{"cluster", {{"local_nodes", 256}}}, {"training", {{"batch_size", 256}}}}},
      {"variants[0].nodes",
       {{"cluster", {{"local_nodes", 256}}}, {"training", {{"batch_size", 256}}}}},
      {"variants[0].strategy", {{"cluster", {{"local_nodes", 2}}}}},
      // images, which every model kind takes (the cnn needs them)
      {"model.kind", {{"dataset", {{"kind", "shapes"}}}}},
      // token sequences, which the transformer needs
      {"model.kind=transformer", {{"dataset", {{"kind", "language"}}}}},
      // one token in, the next out: the default mlp may not see a next token in its input
      {"dataset.kind=language", {{"dataset", {{"features", 1}}}}},
      // mse's targets are a regression's values
      {"model.loss=mse", {{"dataset", {{"kind", "linear_regression"}}}}},
  };
  for (const std::string& key : {path + end, path})
    if (const auto it = contexts.find(key); it != contexts.end()) return it->second;
  // A speed change's fields are both required: a probe of one gives the other.
  if (path.starts_with("cluster.nodes[0].speed_schedule[0]."))
    return {{"cluster", {{"nodes", {{{"speed_schedule", {{{"at_step", 1}, {"speed", 1.0}}}}}}}}}};
  return json::object();
}

// An element of a list field, the k-th (for the probes of its length).
json elementOf(const std::string& path, size_t k) {
  if (path == "model.hidden") return 1;
  if (path == "cluster.nodes") return json::object();
  if (path == "cluster.nodes[0].speed_schedule") return {{"at_step", k + 1}, {"speed", 1.0}};
  if (path == "variants") return {{"name", concat("v", k)}};
  return nullptr;
}

// Collects every disagreement, so that one run names them all.
class Probes {
 public:
  // The spec `context` with `value` at `path` parses.
  void accepts(const std::string& path, const json& value, json context) {
    ++probes_;
    context[pointerOf(path)] = value;
    if (const auto e = errorOf(context)) fail(path, value, concat("refused: ", e->what()));
  }
  // ... and is refused with a SpecError at `errorPath`.
  void refuses(const std::string& path, const json& value, json context,
               const std::string& errorPath) {
    ++probes_;
    context[pointerOf(path)] = value;
    const auto e = errorOf(context);
    if (!e)
      fail(path, value, concat("parsed, expected an error at ", errorPath));
    else if (e->path() != errorPath)
      fail(path, value, concat("refused at ", e->path(), ", not ", errorPath, ": ", e->what()));
  }
  void fail(const std::string& path, const json& value, const std::string& what) {
    const std::string shown =
        value.is_array() && value.size() > 4     ? concat("a list of ", value.size())
        : value.is_string() && value.size() > 20 ? concat("a string of ", value.size(), " bytes")
                                                 : value.dump();
    failures_.push_back(concat(path, " = ", shown, ": ", what));
  }
  // Counts a probe made outside accepts() and refuses().
  void count() { ++probes_; }
  void check() const {
    qInfo("%d probes", probes_);
    QVERIFY(probes_ > 0);
    std::string all;
    for (const std::string& f : failures_) all += concat("\n  ", f);
    QVERIFY2(failures_.empty(), qPrintable(QString::number(failures_.size()) +
                                           " disagreement(s) of the schema with the parser:" +
                                           QString::fromStdString(all)));
  }

 private:
  std::vector<std::string> failures_;
  int probes_ = 0;
};

// The next value from `x` towards `to`, as the field stores it.
double nextValue(const SpecField& f, double x, double to) {
  if (f.singlePrecision)
    return static_cast<double>(std::nextafter(static_cast<float>(x), static_cast<float>(to)));
  return std::nextafter(x, to);
}

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

class TestSpecFields : public QObject {
  Q_OBJECT
 private slots:
  // Every section below the top is the section of exactly one field of its parent, its path
  // that field's path ("[i]" for a list's elements), after its parent; bounds and choices sit
  // on the types they apply to.
  void schemaIsWellFormed() {
    const std::vector<SpecSection>& sections = specSections();
    QVERIFY(!sections.empty());
    QCOMPARE(sections.front().path, std::string());
    std::map<std::string, int> named;
    std::set<std::string> seen;
    for (const SpecSection& s : sections) {
      QVERIFY2(seen.insert(s.path).second, s.path.c_str());
      std::set<std::string> keys;
      for (const SpecField& f : s.fields) {
        const std::string at = concat(s.path, ".", f.key);
        QVERIFY2(keys.insert(f.key).second, at.c_str());
        QVERIFY2(f.type != SpecFieldType::kObject || !f.section.empty(), at.c_str());
        QVERIFY2(
            f.section.empty() || f.type == SpecFieldType::kObject || f.type == SpecFieldType::kList,
            at.c_str());
        if (!f.section.empty()) {
          const char* element = f.type != SpecFieldType::kList            ? ""
                                : s.path.find("[i]") == std::string::npos ? "[i]"
                                                                          : "[k]";
          const std::string expected =
              s.path.empty() ? concat(f.key, element) : concat(s.path, ".", f.key, element);
          QCOMPARE(f.section, expected);
          QVERIFY2(!seen.count(f.section), at.c_str());  // the parent comes first
          ++named[f.section];
        }
        QVERIFY2(!f.integer || f.type == SpecFieldType::kInteger || f.type == SpecFieldType::kList,
                 at.c_str());
        QVERIFY2(!f.real || f.type == SpecFieldType::kReal, at.c_str());
        QVERIFY2(!f.size || f.type == SpecFieldType::kList || f.type == SpecFieldType::kString,
                 at.c_str());
        QVERIFY2((f.type == SpecFieldType::kChoice) ==
                     (!f.choices.empty() || f.registry != SpecRegistry::kNone),
                 at.c_str());
        QVERIFY2((f.defaultForm == SpecDefault::kValue) == !f.defaultJson.empty(), at.c_str());
        QVERIFY2(
            (f.defaultForm == SpecDefault::kFirstRegistered) == (f.registry != SpecRegistry::kNone),
            at.c_str());
        if (!f.defaultJson.empty()) QVERIFY2(json::accept(f.defaultJson), at.c_str());
      }
    }
    for (const SpecSection& s : sections)
      if (!s.path.empty()) QVERIFY2(named[s.path] == 1, s.path.c_str());
  }

  // (a) Each section accepts exactly the schema's keys, in its order: the parser's lists of
  // fields, read from its message for an unknown key. The dataset, the model and a variant
  // also take their registered kinds' or strategies' own settings, after the fixed fields.
  void keysAreTheParsers() {
    Probes probes;
    for (const SpecSection& s : specSections()) {
      const std::string path =
          s.path.empty() ? std::string(kUnknownKey) : concat(concrete(s.path), ".", kUnknownKey);
      json document = contextOf(path);
      document[pointerOf(path)] = 1;
      probes.count();
      const auto e = errorOf(document);
      if (!e || e->path() != path || !e->reason().starts_with(kUnknownListed)) {
        probes.fail(path, 1, e ? e->what() : "parsed");
        continue;
      }
      std::vector<std::string> listed;
      const std::string names = e->reason().substr(std::string(kUnknownListed).size());
      for (size_t start = 0; start <= names.size();) {
        const size_t end = std::min(names.find(", ", start), names.size());
        listed.push_back(names.substr(start, end - start));
        start = end + 2;
      }
      std::vector<std::string> schema;
      for (const SpecField& f : s.fields) schema.push_back(f.key);
      const std::vector<std::string> fixed(
          listed.begin(),
          listed.begin() + static_cast<std::ptrdiff_t>(std::min(listed.size(), schema.size())));
      if (fixed != schema)
        probes.fail(
            path, 1,
            concat("the parser accepts ", joined(listed), "; the schema has ", joined(schema)));
      const std::set<std::string> others = registryKeys(s.more);
      for (size_t i = fixed.size(); i < listed.size(); ++i)
        if (!others.count(listed[i]))
          probes.fail(path, 1,
                      concat("the parser accepts '", listed[i], "', which the schema lacks",
                             s.more == SpecRegistry::kNone ? "" : " and no registered entry has"));
    }
    probes.check();
  }

  // (b) The defaults: what toJson() writes for a spec that leaves the field out.
  void defaultsAreTheParsers() {
    // Specs that make toJson() write a section it leaves out by default, or a field it writes
    // only beside another.
    const std::map<std::string, json> witnesses = {
        {"cluster.nodes[0]", {{"cluster", {{"nodes", {json::object()}}}}}},
        {"cluster.nodes[0].straggler.probability",
         {{"cluster", {{"nodes", {{{"straggler", {{"pause_ms", 1.0}}}}}}}}}},
        {"cluster.nodes[0].straggler.pause_ms",
         {{"cluster", {{"nodes", {{{"straggler", {{"probability", 0.5}}}}}}}}}},
        {"training.data_partition.alpha",
         {{"training", {{"data_partition", {{"kind", "dirichlet"}}}}}}},
    };
    Probes probes;
    for (const SpecSection& s : specSections()) {
      for (const SpecField& f : s.fields) {
        const std::string path = fieldPath(s, f);
        if (f.defaultForm == SpecDefault::kRequired) {
          // Left out, it is refused; the other fields of its section are given.
          json document = contextOf(path);
          document[pointerOf(path).parent_pointer()].erase(f.key);
          probes.count();
          const auto e = errorOf(document);
          if (!e || e->path() != path)
            probes.fail(path, "(left out)", e ? e->what() : "parsed without the required field");
          continue;
        }
        probes.count();
        json witness = json::object();
        if (const auto it = witnesses.find(path); it != witnesses.end())
          witness = it->second;
        else if (const auto section = witnesses.find(concrete(s.path)); section != witnesses.end())
          witness = section->second;
        const json written = toJson(parseExperimentSpec(witness));
        const json::json_pointer at = pointerOf(path);
        const bool present = written.contains(at);
        const json value = present ? written[at] : json();
        const auto expect = [&](bool ok, const std::string& what) {
          if (!ok)
            probes.fail(path, present ? value : json("(left out)"), concat("written; ", what));
        };
        switch (f.defaultForm) {
          case SpecDefault::kValue:
            expect(present && value == json::parse(f.defaultJson),
                   concat("the schema's default is ", f.defaultJson));
            break;
          case SpecDefault::kFields:
            expect(present && value.is_object(), "the schema has an object of its defaults");
            break;
          case SpecDefault::kOmitted:
            expect(!present, "the schema says it is left out");
            break;
          case SpecDefault::kFirstRegistered:
            expect(present && value == json(choicesOf(f).front()),
                   concat("the schema says the first registered, ", choicesOf(f).front()));
            break;
          case SpecDefault::kDerived: {
            // Each derived default, as the schema's words say it.
            const DatasetKindDescriptor& kind = *datasetKinds().front();
            std::optional<json> expected;
            if (path == "dataset.classes") expected = kind.classes.defaultValue;
            if (path == "dataset.features") expected = kind.features.defaultValue;
            if (path == "dataset.seed") expected = written["seed"];
            if (path == "variants[0].name") expected = written["variants"][0]["strategy"];
            if (path == "variants")  // one variant, of the first strategy
              expected = value.is_array() && value.size() == 1 &&
                                 value[0]["strategy"] == strategies().front()->name
                             ? value
                             : json("one variant of the first strategy");
            if (!expected)
              probes.fail(path, value, "a derived default this test has no expectation for");
            else
              expect(present && value == *expected, concat(f.defaultText, ": ", expected->dump()));
            break;
          }
          case SpecDefault::kRequired:
            break;
        }
      }
    }
    probes.check();
  }

  // (c) A value at each end of a field's bounds parses; one just beyond is refused at the
  // field's path. Integers without bounds are unsigned 64-bit (the seeds).
  void boundsAreTheParsers() {
    Probes probes;
    for (const SpecSection& s : specSections()) {
      for (const SpecField& f : s.fields) {
        const std::string path = fieldPath(s, f);
        const bool list = f.type == SpecFieldType::kList;
        const std::string elementPath = list ? path + "[0]" : path;
        const auto wrap = [&](const json& v) { return list ? json::array({v}) : v; };
        if (f.integer) {
          const IntegerBounds b = *f.integer;
          probes.accepts(path, wrap(b.min), contextOf(path, "@min"));
          probes.refuses(path, wrap(b.min - 1), contextOf(path, "@min"), elementPath);
          if (b.max != kMaxInt) {
            probes.accepts(path, wrap(b.max), contextOf(path, "@max"));
            probes.refuses(path, wrap(b.max + 1), contextOf(path, "@max"), elementPath);
          }
        } else if (f.type == SpecFieldType::kInteger) {
          probes.accepts(path, std::numeric_limits<uint64_t>::max(), contextOf(path));
          probes.refuses(path, -1, contextOf(path), path);
        }
        if (f.real) {
          const RealBounds b = *f.real;
          const json low = contextOf(path, "@min");
          const json high = contextOf(path, "@max");
          if (b.minClosed) {
            probes.accepts(path, b.min, low);
            probes.refuses(path, nextValue(f, b.min, -kInf), low, path);
          } else {
            probes.refuses(path, b.min, low, path);
            probes.accepts(path, nextValue(f, b.min, kInf), low);
          }
          if (std::isinf(b.max)) {
          } else if (b.maxClosed) {
            probes.accepts(path, b.max, high);
            probes.refuses(path, nextValue(f, b.max, kInf), high, path);
          } else {
            probes.refuses(path, b.max, high, path);
            probes.accepts(path, nextValue(f, b.max, -kInf), high);
          }
        }
        if (f.size) {
          const auto ofSize = [&](int64_t n) {
            if (f.type == SpecFieldType::kString)
              return json(std::string(static_cast<size_t>(n), 'a'));
            json out = json::array();
            for (int64_t k = 0; k < n; ++k) out.push_back(elementOf(path, static_cast<size_t>(k)));
            return out;
          };
          if (f.type == SpecFieldType::kList && elementOf(path, 0).is_null()) {
            probes.fail(path, nullptr, "a list this test has no element for");
            continue;
          }
          const IntegerBounds b = *f.size;
          probes.accepts(path, ofSize(b.max), contextOf(path, "@max"));
          probes.refuses(path, ofSize(b.max + 1), contextOf(path, "@max"), path);
          if (b.min > 0) {
            probes.accepts(path, ofSize(b.min), contextOf(path, "@min"));
            probes.refuses(path, ofSize(b.min - 1), contextOf(path, "@min"), path);
          }
        }
      }
    }
    probes.check();
  }

  // (c) Every choice parses (in its context) and an unknown name is refused at the field.
  void choicesAreTheParsers() {
    Probes probes;
    int choices = 0;
    for (const SpecSection& s : specSections()) {
      for (const SpecField& f : s.fields) {
        if (f.type != SpecFieldType::kChoice) continue;
        const std::string path = fieldPath(s, f);
        for (const std::string& name : choicesOf(f)) {
          probes.accepts(path, name, contextOf(path, ("=" + name).c_str()));
          ++choices;
        }
        probes.refuses(path, "no_such_choice", contextOf(path), path);
      }
    }
    QVERIFY(choices > 20);
    probes.check();
  }

  // A value of another type than the schema's is refused at the field, and so is null unless
  // the field has "not set" for a default.
  void typesAreTheParsers() {
    Probes probes;
    for (const SpecSection& s : specSections()) {
      for (const SpecField& f : s.fields) {
        const std::string path = fieldPath(s, f);
        const json context = contextOf(path);
        switch (f.type) {
          case SpecFieldType::kInteger:
            probes.refuses(path, 2.5, context, path);
            probes.refuses(path, "1", context, path);
            break;
          case SpecFieldType::kReal:
            probes.refuses(path, "1", context, path);
            break;
          case SpecFieldType::kBoolean:
            probes.accepts(path, true, context);
            probes.accepts(path, false, context);
            probes.refuses(path, 1, context, path);
            break;
          case SpecFieldType::kString:
          case SpecFieldType::kChoice:
          case SpecFieldType::kObject:
          case SpecFieldType::kList:
            probes.refuses(path, 1, context, path);
            break;
        }
        if (f.nullable)
          probes.accepts(path, nullptr, context);
        else
          probes.refuses(path, nullptr, context, path);
      }
    }
    probes.check();
  }
};

QTEST_APPLESS_MAIN(TestSpecFields)
#include "test_spec_fields.moc"
