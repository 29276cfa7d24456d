#include "app/reference_docs.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>
#include <sstream>

#include "app/args.h"
#include "core/comm/gradient_compression.h"
#include "core/common/check.h"
#include "core/data/dataset_kinds.h"
#include "core/metrics/metric_table.h"
#include "core/nn/model_kinds.h"
#include "core/spec/settings.h"
#include "core/spec/spec_fields.h"
#include "core/train/compression_settings.h"
#include "core/train/strategy_registry.h"

namespace dtlab::app {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRefresh = "dtlab-cli docs --out docs/reference";

std::string generatedNote() {
  return std::string("Made by `") + kRefresh +
         "` from this build's registries and usage text; change those in the code, not this "
         "page.\n\n";
}

// A table cell: one line, pipes escaped.
std::string cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += ' ';
    } else if (c == '|') {
      out += "\\|";
    } else {
      out += c;
    }
  }
  return out;
}

std::string typeText(const core::SettingSchema& s) {
  switch (s.type) {
    case core::SettingType::kInteger:
      return "integer";
    case core::SettingType::kReal:
      return s.singlePrecision ? "real (32-bit)" : "real";
    case core::SettingType::kChoice:
      return "choice";
  }
  return "";
}

std::string defaultText(const core::SettingSchema& s) {
  if (!s.zeroMeans.empty() && s.defaultValue == core::SettingValue(int64_t{0}))
    return s.zeroMeans + " (0)";
  return detail::concat('`', core::settingText(s.defaultValue), '`');
}

std::string allowedText(const core::SettingSchema& s) {
  if (s.type != core::SettingType::kChoice) return s.rangeText();
  std::string out;
  for (const std::string& c : s.choices) out += (out.empty() ? "`" : ", `") + c + "`";
  return out;
}

// The settings of one owner as a table; "" when it has none.
std::string settingsTable(const std::vector<core::SettingSchema>& settings) {
  if (settings.empty()) return "No settings of its own.\n";
  std::string out =
      "| key | type | default | allowed | applies when | what it does |\n"
      "|---|---|---|---|---|---|\n";
  for (const core::SettingSchema& s : settings)
    out += "| `" + s.key + "` | " + typeText(s) + " | " + cell(defaultText(s)) + " | " +
           cell(allowedText(s)) + " | " + (s.when ? cell(core::conditionText(*s.when)) : "") +
           " | " + cell(s.help) + " |\n";
  return out;
}

// A registry entry's heading and its one-line summary.
std::string entryHeading(const std::string& name, const std::string& summary) {
  return "\n## " + name + "\n\n" + summary + "\n\n";
}

std::string yesNo(bool value) {
  return value ? "yes" : "no";
}

std::string strategiesPage() {
  std::string out = "# Strategies\n\n" + generatedNote() +
                    "A variant of a spec names one of these in `\"strategy\"` (the first is the "
                    "default) and gives any of its settings beside it:\n\n"
                    "```json\n{\"variants\": [{\"name\": \"ps\", \"strategy\": \"async_ps\", "
                    "\"ps_shards\": 2}]}\n```\n";
  for (const core::StrategyDescriptor* d : core::strategies()) {
    const core::StrategyTraits& t = d->traits;
    out += entryHeading(d->name, d->summary);
    out += "Parameter server: " + yesNo(t.usesParameterServer) +
           "; collective group: " + yesNo(t.needsCollectiveGroup) +
           "; checkpoints: " + yesNo(t.keepsCheckpoints) +
           "; replays from its record: " + yesNo(t.replaysFromRecord) +
           "; switches phases: " + yesNo(t.switchesPhases) + ".\n\n";
    out += settingsTable(d->settings);
  }
  return out;
}

// The compression kinds: what each sends, which strategies take it, and its settings (the
// strategies' tables have them too, each under its strategy).
std::string compressionPage() {
  std::string out =
      "# Gradient compression\n\n" + generatedNote() +
      "A variant's `\"compression\"` names how the gradients (or weights) its collectives or "
      "its parameter server move travel, with the kind's settings beside it:\n\n"
      "```json\n{\"variants\": [{\"name\": \"topk\", \"strategy\": \"sync_allreduce\", "
      "\"compression\": \"topk\", \"topk_ratio\": 0.01}]}\n```\n\n"
      "Every rank ends with the same values; values riding with the gradients that the ranks "
      "must agree on exactly (stop votes, step times) are never compressed.\n";
  const std::vector<core::SettingSchema> settings = core::compressionSettings(true);
  for (const core::CompressionKind kind : core::compressionKinds()) {
    const std::string name = core::toString(kind);
    std::string takers;
    for (const core::StrategyDescriptor* d : core::strategies())
      if (const core::SettingSchema* s = core::findSetting(d->settings, "compression"))
        if (std::find(s->choices.begin(), s->choices.end(), name) != s->choices.end())
          takers += (takers.empty() ? "`" : ", `") + d->name + "`";
    out += entryHeading(name, core::summaryOf(kind));
    out += "Taken by: " + (takers.empty() ? std::string("no strategy of this build") : takers) +
           ".\n\n";
    std::vector<core::SettingSchema> own;
    for (const core::SettingSchema& s : settings)
      if (s.when &&
          std::find(s.when->values.begin(), s.when->values.end(), name) != s.when->values.end())
        own.push_back(s);
    if (kind != core::CompressionKind::kNone) out += settingsTable(own);
  }
  return out;
}

std::string classesText(const core::ClassRule& r) {
  if (r.fixed()) return std::to_string(r.minimum) + " (fixed)";
  return std::to_string(r.minimum) + ".." + std::to_string(r.maximum) + ", default " +
         std::to_string(r.defaultValue);
}

// ", as 1 x 28 x 28 images" for a kind that lays its samples out; nothing for vectors.
std::string layoutText(const core::DatasetKindDescriptor& d) {
  const core::SampleShape samples = core::sampleShapeOf(core::defaultDataset(d.name));
  if (samples.dims.size() < 2) return {};
  std::string text = ", as ";
  for (std::size_t i = 0; i < samples.dims.size(); ++i) {
    if (i > 0) text += " x ";
    text += std::to_string(samples.dims[i]);
  }
  text += samples.image() ? " images (channels x height x width)" : " arrays";
  return text;
}

// What a sequence kind's samples are: token ids, a label per token.
std::string sequenceText(const core::DatasetKindDescriptor& d) {
  if (!d.tokens) return {};
  return std::string(
             "; the features are token ids below the classes (the vocabulary), one target "
             "per token") +
         (d.causal ? ", the next token: only a model that sees no later token may train on it"
                   : "");
}

std::string datasetKindsPage() {
  std::string out = "# Dataset kinds\n\n" + generatedNote() +
                    "A spec's `\"dataset\"` names one of these in `\"kind\"` (the first is the "
                    "default) with its sizes, `\"classes\"`, `\"features\"` and the kind's own "
                    "parameters:\n\n"
                    "```json\n{\"dataset\": {\"kind\": \"two_spirals\", \"train_size\": 20000, "
                    "\"noise\": 0.1}}\n```\n";
  for (const core::DatasetKindDescriptor* d : core::datasetKinds()) {
    out += entryHeading(d->name, d->summary);
    out += std::string("Task: ") +
           (d->task == core::TaskKind::kClassification ? "classification" : "regression") +
           "; classes: " + classesText(d->classes) + "; features: " +
           (d->features.fixed ? std::to_string(d->features.defaultValue) + " (fixed)"
                              : "any, default " + std::to_string(d->features.defaultValue)) +
           layoutText(*d) + sequenceText(*d) + ".\n\n";
    out += settingsTable(d->parameters);
  }
  return out;
}

std::string modelKindsPage() {
  std::string out = "# Model kinds\n\n" + generatedNote() +
                    "A spec's `\"model\"` names one of these in `\"kind\"` (the first is the "
                    "default); its input is a dataset's sample (a vector of its features, or "
                    "an image for kinds that lay their samples out as channels x height x "
                    "width, as shapes does) and its output the dataset's classes (for a sequence "
                    "kind, a distribution over them per token). Every "
                    "kind reads `\"hidden\"`, `\"activation\"` "
                    "(relu, gelu, tanh), `\"init\"` (he, xavier) and `\"loss\"` "
                    "(cross_entropy, mse) as it needs them, and its own settings:\n";
  for (const core::ModelKindDescriptor* d : core::modelKinds()) {
    out += entryHeading(d->name, d->summary);
    out += settingsTable(d->parameters);
  }
  return out;
}

std::string metricsPage() {
  std::string out = "# Metrics\n\n" + generatedNote() +
                    "The series a run records, by the name the store, the wire, CSV exports, "
                    "charts and `dtlab --chart` use. A worker's series has a point per step, a "
                    "node's per sampling interval, the run's per evaluation.\n\n"
                    "| name | unit | per | what it is |\n|---|---|---|---|\n";
  for (const core::MetricInfo& m : core::kMetricTable) {
    const char* scope = m.scope == core::MetricScope::kWorker ? "worker"
                        : m.scope == core::MetricScope::kNode ? "node"
                                                              : "run";
    out += "| `" + std::string(m.name) + "` | " + cell(std::string(m.unit)) + " | " + scope +
           " | " + cell(std::string(m.description)) + " |\n";
  }
  return out;
}

std::string cliPage(const std::string& usage) {
  return "# dtlab-cli\n\n" + generatedNote() +
         "Every command and its flags, as `dtlab-cli --help` prints them (`dtlab-cli help "
         "COMMAND` prints one):\n\n```text\n" +
         usage + (usage.empty() || usage.back() == '\n' ? "" : "\n") + "```\n";
}

// The names a choice of the spec may take: its own, or those of the registry it names.
std::vector<std::string> choicesOf(const core::SpecField& f) {
  switch (f.registry) {
    case core::SpecRegistry::kNone:
      return f.choices;
    case core::SpecRegistry::kDatasetKinds:
      return core::datasetKindNames();
    case core::SpecRegistry::kModelKinds:
      return core::modelKindNames();
    case core::SpecRegistry::kStrategies:
      return core::strategyNames();
  }
  return {};
}

// A heading's anchor as GitHub makes it: lower case, spaces to hyphens, other punctuation gone.
std::string anchorOf(const std::string& heading) {
  std::string out;
  for (char c : heading) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (c == ' ')
      out += '-';
  }
  return out;
}

std::string specTypeText(const core::SpecField& f) {
  std::string out;
  switch (f.type) {
    case core::SpecFieldType::kInteger:
      out = "integer";
      break;
    case core::SpecFieldType::kReal:
      out = f.singlePrecision ? "real (32-bit)" : "real";
      break;
    case core::SpecFieldType::kBoolean:
      out = "boolean";
      break;
    case core::SpecFieldType::kString:
      out = "string";
      break;
    case core::SpecFieldType::kChoice:
      out = "choice";
      break;
    case core::SpecFieldType::kObject:
      out = "object";
      break;
    case core::SpecFieldType::kList:
      out = f.section.empty() ? "list of integers" : "list of objects";
      break;
  }
  return f.nullable ? out + " or null" : out;
}

std::string sectionLink(const std::string& path) {
  const core::SpecSection& s = core::specSection(path);
  return detail::concat("[", s.title, "](#", anchorOf(s.title), ")");
}

std::string specDefaultText(const core::SpecField& f) {
  switch (f.defaultForm) {
    case core::SpecDefault::kValue:
      if (f.defaultText.empty()) return detail::concat('`', f.defaultJson, '`');
      if (f.defaultJson == "null") return detail::concat("`null` (", f.defaultText, ")");
      return detail::concat('`', f.defaultJson, "`; ", f.defaultText);
    case core::SpecDefault::kFields:
      return detail::concat("its fields' defaults: ", sectionLink(f.section));
    case core::SpecDefault::kOmitted:
    case core::SpecDefault::kDerived:
      return f.defaultText;
    case core::SpecDefault::kFirstRegistered: {
      const std::vector<std::string> names = choicesOf(f);
      return names.empty() ? std::string("the first registered")
                           : detail::concat("`\"", names.front(), "\"`");
    }
    case core::SpecDefault::kRequired:
      return "required";
  }
  return "";
}

std::string specAllowedText(const core::SpecField& f) {
  std::vector<std::string> parts;
  if (f.size) {
    const std::string what = f.type == core::SpecFieldType::kString ? " bytes"
                             : f.section.empty()                    ? " elements"
                                                                    : " objects";
    parts.push_back(f.size->min == 0 ? detail::concat("at most ", f.size->max, what)
                                     : detail::concat(f.size->text(), what));
  }
  if (f.integer)
    parts.push_back(f.type == core::SpecFieldType::kList
                        ? detail::concat("each ", f.integer->text())
                        : f.integer->text());
  if (f.real) parts.push_back(f.real->text());
  if (f.type == core::SpecFieldType::kChoice) {
    std::string names;
    for (const std::string& c : choicesOf(f))
      names += detail::concat(names.empty() ? "`" : ", `", c, "`");
    parts.push_back(names);
  }
  if (f.type == core::SpecFieldType::kObject ||
      (f.type == core::SpecFieldType::kList && !f.section.empty()))
    parts.push_back(detail::concat("fields: ", sectionLink(f.section)));
  if (!f.allowed.empty()) parts.push_back(f.allowed);
  std::string out;
  for (const std::string& part : parts) out += detail::concat(out.empty() ? "" : "; ", part);
  return out;
}

std::string specPage() {
  std::string out = detail::concat(
      "# Experiment spec\n\nMade by `", kRefresh,
      "` from this build's spec schema (`core/spec/spec_fields.cc`) and registries; change "
      "those in the code, not this page.\n\n"
      "An experiment spec is a JSON object that `dtlab-cli train spec.json` and the GUI read "
      "(`core/spec/spec_json.h`). Its examples and the longer explanations (data partitions, "
      "clusters, what each strategy does when a node is lost) are in "
      "[Experiment specs](../specs.md).\n\n"
      "## How the parser reads a spec\n\n");
  for (const std::string& rule : core::specParserRules()) out += detail::concat("- ", rule, "\n");
  for (const core::SpecSection& s : core::specSections()) {
    const auto depth = std::count(s.path.begin(), s.path.end(), '.');
    out += detail::concat(
        "\n", std::string(static_cast<size_t>(2 + depth), '#'), " ", s.title, "\n\n", s.summary,
        "\n\n| field | type | default | allowed | used by |\n|---|---|---|---|---|\n");
    const bool hasKind = std::any_of(s.fields.begin(), s.fields.end(),
                                     [](const core::SpecField& f) { return f.key == "kind"; });
    for (const core::SpecField& f : s.fields) {
      const std::string usedBy = !f.usedBy.empty()            ? f.usedBy
                                 : hasKind && f.key != "kind" ? "all"
                                                              : "";
      out += detail::concat("| `", f.key, "` | ", specTypeText(f), " | ", cell(specDefaultText(f)),
                            " | ", cell(specAllowedText(f)), " | ", cell(usedBy), " |\n");
    }
  }
  return out;
}

std::string indexPage(const std::map<std::string, std::string>& pages) {
  std::string out = "# Reference\n\n" + generatedNote();
  for (const auto& [file, text] : pages) {
    const std::string title = text.substr(2, text.find('\n') - 2);
    out += "- [" + title + "](" + file + ")\n";
  }
  return out;
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

std::map<std::string, std::string> referencePages(const std::string& cliUsage) {
  std::map<std::string, std::string> pages = {
      {"strategies.md", strategiesPage()},
      {"compression.md", compressionPage()},
      {"dataset-kinds.md", datasetKindsPage()},
      {"model-kinds.md", modelKindsPage()},
      {"metrics.md", metricsPage()},
      {"dtlab-cli.md", cliPage(cliUsage)},
      {"spec.md", specPage()},
  };
  pages["README.md"] = indexPage(pages);
  return pages;
}

int docsCommand(const std::vector<std::string>& argv, const std::string& cliUsage) {
  const Args args(argv, {"--out", "--check"}, {});
  if (!args.positionals().empty() || args.has("--out") == args.has("--check"))
    throw UsageError("expected --out DIR (write the reference pages) or --check DIR (compare)");
  const std::map<std::string, std::string> pages = referencePages(cliUsage);
  const fs::path dir = args.has("--out") ? args.value("--out", "") : args.value("--check", "");
  std::set<std::string> present;
  if (fs::is_directory(dir))
    for (const fs::directory_entry& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".md") present.insert(e.path().filename().string());

  if (args.has("--out")) {
    fs::create_directories(dir);
    for (const auto& [file, text] : pages) {
      std::ofstream out(dir / file, std::ios::binary | std::ios::trunc);
      out << text;
      if (!out) throw Error("cannot write " + (dir / file).string());
    }
    for (const std::string& file : present)
      if (!pages.count(file)) fs::remove(dir / file);
    std::cerr << "wrote " << pages.size() << " reference pages to " << dir.string() << "\n";
    return 0;
  }
  int stale = 0;
  for (const auto& [file, text] : pages) {
    if (!present.count(file)) {
      std::cerr << (dir / file).string() << ": missing\n";
      ++stale;
    } else if (readFile(dir / file) != text) {
      std::cerr << (dir / file).string() << ": stale (not what this build makes)\n";
      ++stale;
    }
  }
  for (const std::string& file : present)
    if (!pages.count(file)) {
      std::cerr << (dir / file).string() << ": left over (this build makes no such page)\n";
      ++stale;
    }
  if (stale > 0) {
    std::cerr << stale << " reference page(s) differ from this build's; refresh them with `"
              << kRefresh << "` from the repository's root\n";
    return 1;
  }
  std::cerr << pages.size() << " reference pages in " << dir.string() << " are this build's\n";
  return 0;
}

}  // namespace dtlab::app
