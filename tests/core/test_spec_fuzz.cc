// The spec parser under random edits of valid specs, as JSON documents and as text: it accepts
// (and the spec then round-trips) or throws a well-formed SpecError; nothing else.
#include <QtTest/QtTest>

#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "tests/core/spec_samples.h"

using dtlab::core::ExperimentSpec;
using dtlab::core::SpecError;
using dtlab::core::test::variedSpecs;
using nlohmann::json;

namespace {

const std::string kDefaultSpecPath = DTLAB_SOURCE_DIR "/resources/specs/default.json";

std::vector<json> mutationValues() {
  std::vector<json> values = {nullptr,
                              true,
                              false,
                              0,
                              1,
                              -1,
                              2,
                              3,
                              7,
                              8,
                              9,
                              10,
                              16,
                              17,
                              100,
                              128,
                              256,
                              257,
                              784,
                              20000,
                              65536,
                              65537,
                              1000000000,
                              std::numeric_limits<int64_t>::max(),
                              std::numeric_limits<int64_t>::min(),
                              std::numeric_limits<uint64_t>::max(),
                              3.0,
                              3.5,
                              -0.0,
                              0.5,
                              0.9,
                              0.999,
                              0.99999999,
                              1.0,
                              1.5,
                              1e-8,
                              1e-45,
                              1e-300,
                              1e300,
                              -1e300,
                              4e18,
                              1e19,
                              2e19,
                              std::nan(""),
                              std::numeric_limits<double>::infinity(),
                              "",
                              "x",
                              "1",
                              "relu",
                              "gelu",
                              "tanh",
                              "he",
                              "xavier",
                              "mse",
                              "cross_entropy",
                              "sgd",
                              "adam",
                              "adamw",
                              "adadelta",
                              "constant",
                              "step",
                              "cosine",
                              "gaussian_blobs",
                              "two_spirals",
                              "checkerboard",
                              "teacher",
                              "linear_regression",
                              "shapes",
                              "language",
                              "copy",
                              "reversed",
                              "\xff\xfe invalid utf-8",
                              std::string(5000, 'a'),
                              json::array(),
                              json::array({1, 2}),
                              json::array({128, -3}),
                              json::array({json::array()}),
                              json::object(),
                              json{{"kind", "adam"}},
                              json{{"kind", "two_spirals"}},
                              json{{"x", 1}}};
  json deepArray = json::array();
  json deepObject = json::object();
  for (int i = 0; i < 300; ++i) {
    deepArray = json::array({std::move(deepArray)});
    deepObject = json{{"kind", std::move(deepObject)}};
  }
  values.push_back(std::move(deepArray));
  values.push_back(std::move(deepObject));
  return values;
}

const std::vector<std::string> kMutationKeys = {
    "kind",     "seed",       "classes",     "clases",    "features",        "lr",
    "momentum", "nesterov",   "eps",         "rho",       "schedule",        "hidden",
    "loss",     "batch_size", "epochs",      "max_steps", "target_accuracy", "threads",
    "turns",    "grid_size",  "label_noise", "",          "cluster",         "\xff"};

void collectPointers(const json& node, const json::json_pointer& here,
                     std::vector<json::json_pointer>& out) {
  out.push_back(here);
  if (node.is_object()) {
    for (const auto& item : node.items()) collectPointers(item.value(), here / item.key(), out);
  } else if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) collectPointers(node[i], here / i, out);
  }
}

// Applies one random edit to `document`: replace a value, remove a field, or add one.
void mutate(json& document, const std::vector<json>& values, std::mt19937_64& rng) {
  std::vector<json::json_pointer> pointers;
  collectPointers(document, json::json_pointer(), pointers);
  const json::json_pointer& target = pointers[rng() % pointers.size()];
  json& node = document[target];
  switch (rng() % 4) {
    case 0:
    case 1:
      node = values[rng() % values.size()];
      break;
    case 2:
      if (node.is_object() && !node.empty()) {
        auto it = node.begin();
        std::advance(it, static_cast<long>(rng() % node.size()));
        node.erase(it);
      } else if (node.is_array() && !node.empty()) {
        node.erase(rng() % node.size());
      }
      break;
    default:
      if (node.is_object())
        node[kMutationKeys[rng() % kMutationKeys.size()]] = values[rng() % values.size()];
      else if (node.is_array())
        node.push_back(values[rng() % values.size()]);
      break;
  }
}

}  // namespace

class TestSpecFuzz : public QObject {
  Q_OBJECT
 private slots:
  // Random edits of valid specs, as documents and as text: the parser either accepts (and then
  // the result must round-trip) or throws SpecError; any other exception or a crash fails.
  void fuzzedSpecsThrowOnlySpecErrors() {
    std::mt19937_64 rng(20240611);
    const std::vector<json> values = mutationValues();
    std::vector<json> seeds;
    for (const ExperimentSpec& spec : variedSpecs()) seeds.push_back(dtlab::core::toJson(spec));
    std::ifstream defaultFile(kDefaultSpecPath);
    seeds.push_back(json::parse(defaultFile));
    seeds.push_back(json::object());

    int accepted = 0;
    int rejected = 0;
    const auto check = [&](const auto& parse, const std::string& input) -> bool {
      try {
        const ExperimentSpec spec = parse();
        ++accepted;
        if (!(dtlab::core::parseExperimentSpec(dtlab::core::toJson(spec)) == spec)) {
          qWarning("accepted spec does not round-trip: %s", input.c_str());
          return false;
        }
      } catch (const SpecError& e) {
        ++rejected;
        const std::string message = e.what();
        if (message != e.path() + ": " + e.reason() ||
            message.find("internal error") != std::string::npos || e.reason().empty()) {
          qWarning("malformed SpecError '%s' for %s", e.what(), input.c_str());
          return false;
        }
      } catch (const std::exception& e) {
        qWarning("%s escaped for %s", e.what(), input.c_str());
        return false;
      }
      return true;
    };
    const auto shown = [](const json& document) {
      std::string text = document.dump(-1, ' ', false, json::error_handler_t::replace);
      if (text.size() > 2000) text.resize(2000), text.append("...");
      return text;
    };

    for (int i = 0; i < 4000; ++i) {
      json document = seeds[rng() % seeds.size()];
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits; ++e) mutate(document, values, rng);
      QVERIFY(check([&] { return dtlab::core::parseExperimentSpec(document); }, shown(document)));
    }

    const std::string alphabet = "{}[]\":,0123456789.-+eE truefalsnul\\\n\xff";
    for (int i = 0; i < 3000; ++i) {
      std::string text = seeds[rng() % seeds.size()].dump(static_cast<int>(rng() % 3) - 1);
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits && !text.empty(); ++e) {
        const size_t at = rng() % text.size();
        switch (rng() % 3) {
          case 0:
            text.erase(at, 1 + rng() % 4);
            break;
          case 1:
            text.insert(at, 1, alphabet[rng() % alphabet.size()]);
            break;
          default:
            text.insert(at, text.substr(rng() % text.size(), 1 + rng() % 16));
            break;
        }
      }
      QVERIFY(check([&] { return dtlab::core::parseExperimentSpecText(text); }, text));
    }
    qInfo("fuzz: %d accepted, %d rejected", accepted, rejected);
    // Both outcomes must occur, or the mutations test nothing.
    QVERIFY(accepted > 200);
    QVERIFY(rejected > 2000);
  }
};

QTEST_APPLESS_MAIN(TestSpecFuzz)
#include "test_spec_fuzz.moc"
