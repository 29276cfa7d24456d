#pragma once
// A small experiment for the scale simulator's calibration and predictions (issue 24), as the
// CLI and the window test them: two local nodes at half speed on an emulated link of 400
// Mbit/s and 0.5 ms a message, runs of 40 steps; each test gives its variants. The model's gradient
// (76,810 parameters, 300 KiB) is above 256 KiB, so a group times its all-reduce at two sizes when
// it forms.
#include <string>

#include <nlohmann/json.hpp>

namespace dtlab::core::test {

inline std::string scaleSpec(const nlohmann::json& variants) {
  return nlohmann::json{
      {"name", "scale"},
      {"seed", 4},
      {"dataset",
       {{"kind", "teacher"},
        {"train_size", 8192},
        {"test_size", 512},
        {"classes", 10},
        {"features", 32}}},
      {"model", {{"hidden", {256, 256}}}},
      {"training",
       {{"batch_size", 256}, {"epochs", 0}, {"max_steps", 40}, {"eval_interval", 1000}}},
      {"cluster",
       {{"local_nodes", 2},
        {"nodes", {{{"speed", 0.5}, {"bandwidth_mbps", 400}, {"latency_ms", 0.5}}}}}},
      {"variants", variants}}
      .dump();
}

}  // namespace dtlab::core::test
