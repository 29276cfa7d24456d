#include "core/train/ps_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/common/check.h"

namespace dtlab::core {

Checkpoint serverCheckpoint(const ServerSnapshot& snapshot, const std::vector<PsBlock>& layout,
                            int64_t updatesPlanned) {
  Checkpoint c;
  serverCheckpoint(snapshot, layout, updatesPlanned, c);
  return c;
}

void serverCheckpoint(const ServerSnapshot& snapshot, const std::vector<PsBlock>& layout,
                      int64_t updatesPlanned, Checkpoint& c) {
  DTLAB_ENFORCE(snapshot.blocks.size() == layout.size(), "a snapshot of ", snapshot.blocks.size(),
                " blocks for a layout of ", layout.size());
  DTLAB_ENFORCE(!layout.empty() && !snapshot.clocks.empty(), "an empty server snapshot");
  const auto paramCount = static_cast<std::size_t>(layout.back().end);
  c.params.resize(paramCount);
  c.optimizerState.resize(snapshot.blocks.front().optimizerState.size());
  for (std::vector<float>& state : c.optimizerState) state.resize(paramCount);
  nlohmann::json blocks = nlohmann::json::array();
  for (std::size_t b = 0; b < layout.size(); ++b) {
    const PsBlock& block = layout[b];
    const ParameterBlock::Snapshot& s = snapshot.blocks[b];
    DTLAB_ENFORCE(static_cast<int64_t>(s.params.size()) == block.size() &&
                      s.optimizerState.size() == c.optimizerState.size(),
                  "the snapshot of block ", b, " does not fit its range [", block.begin, ", ",
                  block.end, ")");
    std::copy(s.params.begin(), s.params.end(), c.params.begin() + block.begin);
    for (std::size_t i = 0; i < s.optimizerState.size(); ++i) {
      DTLAB_ENFORCE(static_cast<int64_t>(s.optimizerState[i].size()) == block.size(),
                    "optimizer state ", i, " of block ", b, " does not fit its range");
      std::copy(s.optimizerState[i].begin(), s.optimizerState[i].end(),
                c.optimizerState[i].begin() + block.begin);
    }
    blocks.push_back({block.begin, block.end, s.version});
  }
  c.rankSteps = snapshot.clocks;
  int64_t pushes = 0;
  for (int64_t clock : snapshot.clocks) pushes += clock;
  c.step = pushes / static_cast<int64_t>(snapshot.clocks.size());
  c.strategyState = {{"blocks", std::move(blocks)},
                     {"updates_planned", updatesPlanned},
                     {"clocks", snapshot.clocks}};
}

int64_t restoredVersion(const Checkpoint& c, int64_t begin, int64_t updatesPlanned) {
  const nlohmann::json& state = c.strategyState;
  if (!state.is_object() || !state.contains("blocks") || !state["blocks"].is_array())
    throw Error(
        "the checkpoint holds no parameter-server blocks (it is not of a "
        "parameter-server run)");
  std::optional<int64_t> version;
  for (const nlohmann::json& b : state["blocks"]) {
    if (!b.is_array() || b.size() != 3 || !b[0].is_number_integer() || !b[1].is_number_integer() ||
        !b[2].is_number_integer() || b[2].get<int64_t>() < 0)
      throw Error("the checkpoint's parameter-server blocks are damaged: " + b.dump());
    if (b[0].get<int64_t>() <= begin && begin < b[1].get<int64_t>()) version = b[2].get<int64_t>();
  }
  if (!version)
    throw Error("the checkpoint's parameter-server blocks do not cover parameter " +
                std::to_string(begin));
  const int64_t planned = state.value("updates_planned", int64_t{0});
  if (planned <= 0 || updatesPlanned <= 0 || planned == updatesPlanned) return *version;
  return std::llround(static_cast<double>(*version) * static_cast<double>(updatesPlanned) /
                      static_cast<double>(planned));
}

std::vector<int64_t> restoredClocks(const Checkpoint& c, int workers) {
  const nlohmann::json& state = c.strategyState;
  if (!state.is_object() || !state.contains("clocks") || !state["clocks"].is_array() ||
      state["clocks"].empty())
    throw Error(
        "the checkpoint holds no parameter-server state (it is not of a run with a "
        "parameter server)");
  std::vector<int64_t> clocks;
  for (const nlohmann::json& clock : state["clocks"]) {
    if (!clock.is_number_integer() || clock.get<int64_t>() < 0)
      throw Error("the checkpoint's worker clocks are damaged: " + state["clocks"].dump());
    clocks.push_back(clock.get<int64_t>());
  }
  if (static_cast<int>(clocks.size()) == workers) return clocks;
  int64_t pushes = 0;
  for (int64_t clock : clocks) pushes += clock;
  return std::vector<int64_t>(static_cast<std::size_t>(workers),
                              pushes / static_cast<int64_t>(clocks.size()));
}

// ParameterHost's and LocalParameterClient's part in checkpoints (parameter_server.h).

void ParameterHost::restore(const Checkpoint& c) {
  const std::vector<int64_t> clocks = restoredClocks(c, workers_);
  // Without blocks (a hybrid's synchronous phase holds its weights in its replicas) the blocks
  // keep their initial values until the next phase seeds them.
  const bool withBlocks = c.strategyState.contains("blocks");
  for (const std::unique_ptr<ParameterBlock>& block : blocks_) {
    if (!block || !withBlocks) continue;
    checkCheckpointFits(c, block->optimizerName(), paramCount_);
    const PsBlock& range = block->block();
    ParameterBlock::Snapshot s;
    s.params.assign(c.params.begin() + range.begin, c.params.begin() + range.end);
    for (const std::vector<float>& state : c.optimizerState) {
      if (static_cast<int64_t>(state.size()) != paramCount_)
        throw Error("the checkpoint's optimizer state holds " + std::to_string(state.size()) +
                    " values for its " + std::to_string(paramCount_) + " parameters");
      s.optimizerState.emplace_back(state.begin() + range.begin, state.begin() + range.end);
    }
    s.version = restoredVersion(c, range.begin, updatesPlanned_);
    block->restore(s);
  }
  if (board_) board_->raiseClocks(clocks);
}

void LocalParameterClient::stageSnapshot() {
  for (int b = 0; b < static_cast<int>(layout_.size()); ++b) host_.stageSnapshot(b);
}

ServerSnapshot LocalParameterClient::fetchStagedSnapshot() {
  ServerSnapshot s;
  for (int b = 0; b < static_cast<int>(layout_.size()); ++b)
    host_.readStagedSnapshot(
        b, [&](const ParameterBlock::Snapshot& copy, const std::vector<int64_t>& clocks) {
          s.blocks.push_back(copy);
          if (b == 0) s.clocks = clocks;
        });
  DTLAB_ENFORCE(!s.clocks.empty(), "the board is not kept here");
  return s;
}

}  // namespace dtlab::core
