#pragma once
// The schema of the experiment spec's fixed sections: the top level, the fields every dataset,
// model and variant has, the optimizer and its schedule, training and its data partition, the
// cluster and its nodes. Per field its key, type, default, bounds and what it is for. The
// parser (spec_json.cc) takes each object's keys and their bounds from here (and fails on a key
// listed here that it never reads), `dtlab-cli docs` makes docs/reference/spec.md from it, and
// tests/core/test_spec_fields.cc proves that it says what the parser does (the fields each
// section accepts, the defaults it fills in, the bounds it checks). The settings of the registered
// kinds and strategies are their descriptors' own (core/spec/settings.h); a section here only names
// the registry whose settings sit beside its fields.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dtlab::core {

enum class SpecFieldType {
  kInteger,  // a JSON integer (3.0 reads as 3)
  kReal,     // a JSON number
  kBoolean,
  kString,
  kChoice,  // one of a set of names
  kObject,  // a section of its own (SpecField::section)
  kList,    // of integers (bounds: each element's) or of a section's objects
};

// The integers in [min, max]; for a list or a string, its length in elements or bytes.
struct IntegerBounds {
  int64_t min = 0;
  int64_t max = 0;
  // "1..256", ">= 1" (max the largest int64), as the parser's messages read.
  std::string text() const;
};

// The reals in (min, max), each end open or closed; max may be infinity.
struct RealBounds {
  double min = 0.0;
  double max = 0.0;
  bool minClosed = true;
  bool maxClosed = true;
  bool contains(double value) const;
  // "> 0", ">= 0", "in [0, 1)", "in [0, 600000]": as the parser's messages say it.
  std::string text() const;
};

// How a field's default is given.
enum class SpecDefault {
  kValue,            // defaultJson: what toJson() writes for a spec that leaves the field out
  kFields,           // an object: its own fields' defaults (its section)
  kOmitted,          // not set, and toJson() leaves it out (defaultText: what that means)
  kDerived,          // computed from other fields (defaultText says how)
  kFirstRegistered,  // the registry's first entry (SpecField::registry)
  kRequired,         // none: the field must be given (a speed change's step and speed)
};

// Where a choice's names come from when they are a registry's, not the spec's: the spec layer
// cannot see the registries, so the docs and the tests fill them in.
enum class SpecRegistry { kNone, kDatasetKinds, kModelKinds, kStrategies };

struct SpecField {
  std::string key{};
  SpecFieldType type = SpecFieldType::kInteger;
  SpecDefault defaultForm = SpecDefault::kValue;
  std::string defaultJson{};     // kValue: the default as JSON text ("128", "\"fp32\"", "null")
  std::string defaultText{};     // words on the default: beside defaultJson, or in its place
  bool nullable = false;         // null reads as "not set" (the default)
  bool singlePrecision = false;  // a real kept as a 32-bit float, checked as stored
  std::optional<IntegerBounds> integer{};       // kInteger, and a kList of integers: each element
  std::optional<RealBounds> real{};             // kReal
  std::optional<IntegerBounds> size{};          // kList: elements; kString: bytes
  std::vector<std::string> choices{};           // kChoice: the names the parser's tables hold
  SpecRegistry registry = SpecRegistry::kNone;  // kChoice whose names are a registry's
  std::string section{};  // kObject, and a kList of objects: the section of its objects
  std::string allowed{};  // what the type and bounds do not say: conditions, meanings
  std::string usedBy{};   // which kinds read it, or what reads it ("" when every one does)
};

struct SpecSection {
  // The JSON path of the section's object, as errors name it with "[i]" for a list's element
  // ("cluster.nodes[i]"); "" for the top level.
  std::string path{};
  std::string title{};    // the heading: the path, or "Top level"
  std::string summary{};  // a paragraph of markdown: what it is, rules across its fields
  SpecRegistry more = SpecRegistry::kNone;  // whose settings sit beside these fields
  std::vector<SpecField> fields{};  // in the order the parser lists them and toJson() writes them

  // The field named `key`; EnforceError when the section has none.
  const SpecField& field(std::string_view key) const;
};

// Every fixed section, the top level first, each before the sections of its fields.
const std::vector<SpecSection>& specSections();
// The section at `path`; EnforceError when there is none.
const SpecSection& specSection(std::string_view path);
// Its fields' keys, in its order: the keys the parser accepts in that object (a kind's or a
// strategy's own settings aside). Valid for the life of the process.
std::span<const std::string_view> specSectionKeys(std::string_view path);
// How the parser reads any spec, one rule (markdown) per item.
std::vector<std::string> specParserRules();

}  // namespace dtlab::core
