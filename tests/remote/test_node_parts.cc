// In-process tests of the daemon's parts: the WatchJob buffer and the rendezvous table.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/train/checkpoint.h"
#include "core/train/push_record.h"
#include "remote/common/auth.h"
#include "remote/common/blob_parts.h"
#include "remote/common/protocol.h"
#include "remote/node/job_buffer.h"
#include "remote/node/parameter_service.h"
#include "remote/node/rendezvous_table.h"

// After the protocol headers: Qt's `slots` macro would otherwise rename DeviceInfo::slots().
#include <QtTest/QtTest>
#undef slots

using dtlab::remote::JobBuffer;
using dtlab::remote::RendezvousTable;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t kBlobs = dtlab::remote::kMaxBlobBytesPerUpdate;

struct Completed {
  std::atomic<int> calls{0};
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  std::string message;
  std::string value;
  RendezvousTable::Completion completion() {
    return [this](const grpc::Status& status, const std::string& v) {
      code = status.error_code();
      message = status.error_message();
      value = v;
      ++calls;
    };
  }
};

bool waitFor(const std::atomic<int>& counter, int value, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (counter.load() < value) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

}  // namespace

class TestNodeParts : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void bufferStreamsEverythingThenTheResult() {
    JobBuffer buffer;
    buffer.onEvent({0, 0.0, "start", ""});
    for (int i = 0; i < 10; ++i) buffer.onStep({0, i, double(i)});
    buffer.onEval({9, 9.0, 0.5, 0.75});
    JobBuffer::Cursor cursor;
    dtlab::remote::proto::JobUpdate update;
    QVERIFY(buffer.fill(cursor, 4, kBlobs, update));  // at most 4 points
    QCOMPARE(update.events_size() + update.evals_size() + update.steps_size(), 4);
    QCOMPARE(update.events_size(), 1);  // events first
    QVERIFY(!update.finished());
    update.Clear();
    QVERIFY(buffer.fill(cursor, 100, kBlobs, update));
    QCOMPARE(update.steps_size(), 8);
    QCOMPARE(update.steps(7).step(), int64_t{9});
    update.Clear();
    QVERIFY(
        !buffer.fill(cursor, 100, kBlobs, update));  // nothing new: a heartbeat is up to the hub

    dtlab::core::WorkerResult result;
    result.status = dtlab::core::RunStatus::kCompleted;
    result.steps = 10;
    result.paramChecksum = "abc";
    result.finalTestAccuracy = 0.75;
    QVERIFY(buffer.finish(result));
    QVERIFY(!buffer.finish(dtlab::core::WorkerResult{}));  // the first result wins
    QVERIFY(buffer.fill(cursor, 100, kBlobs, update));
    QVERIFY(update.finished());
    QCOMPARE(update.result().status(), std::string("completed"));
    QCOMPARE(update.result().param_checksum(), std::string("abc"));
    QVERIFY(update.result().has_test_accuracy());
    QVERIFY(!update.result().has_time_to_target());

    // A second watcher from the start sees the same stream.
    JobBuffer::Cursor late;
    int steps = 0;
    bool finished = false;
    while (!finished) {
      update.Clear();
      QVERIFY(buffer.fill(late, 3, kBlobs, update));
      steps += update.steps_size();
      finished = update.finished();
    }
    QCOMPARE(steps, 10);
  }

  void bufferDropsOldStepsButNeverEvents() {
    JobBuffer buffer;
    const int64_t total = JobBuffer::kMaxRetained + 500;
    for (int64_t i = 0; i < total; ++i) {
      buffer.onStep({0, i});
      if (i % 10000 == 0) buffer.onEvent({i, 0.0, "tick", ""});
      if (i % 20000 == 0) buffer.onEval({i, 0.0, 1.0, 0.5});
    }
    QCOMPARE(buffer.stepsDropped(), uint64_t{500});
    dtlab::core::WorkerResult result;
    result.status = dtlab::core::RunStatus::kCompleted;
    buffer.finish(result);
    JobBuffer::Cursor cursor;
    int64_t steps = 0, events = 0, evals = 0, firstStep = -1;
    bool finished = false;
    while (!finished) {
      dtlab::remote::proto::JobUpdate update;
      QVERIFY(buffer.fill(cursor, dtlab::remote::kMaxPointsPerUpdate, kBlobs, update));
      QVERIFY(update.steps_size() + update.events_size() + update.evals_size() <=
              dtlab::remote::kMaxPointsPerUpdate);
      if (firstStep < 0 && update.steps_size() > 0) firstStep = update.steps(0).step();
      steps += update.steps_size();
      events += update.events_size();
      evals += update.evals_size();
      finished = update.finished();
    }
    QCOMPARE(steps, int64_t(JobBuffer::kMaxRetained));
    QCOMPARE(firstStep, int64_t{500});
    QCOMPARE(events, int64_t{11});
    QCOMPARE(evals, int64_t{6});
  }

  // A checkpoint of any size and the records of pushes travel in parts of at most the byte
  // budget, after the step points before them, and join to what the job produced: a newer
  // checkpoint taken while one is being sent follows it, the one begun is sent whole.
  void bufferSendsBlobsOfAnySizeInParts() {
    JobBuffer buffer;
    for (int i = 1; i <= 3; ++i) buffer.onStep({0, i, double(i)});
    dtlab::core::Checkpoint first;
    first.step = 3;
    first.strategy = "sync_allreduce";
    first.optimizer = "sgd";
    first.params.assign(3'000'000, 0.25f);  // 12 MB: past the old 3.5 MiB message limit
    first.optimizerState = {std::vector<float>(first.params.size(), -1.0f)};
    buffer.onCheckpoint(first);
    for (int i = 0; i < 300; ++i) {
      dtlab::core::PushRecord push;
      push.worker = i % 2;
      push.clock = i;
      push.basedOn = {i};
      push.appliedTo = {i + 1};
      buffer.onPush(push);
    }
    dtlab::core::Checkpoint second = first;
    second.step = 5;
    second.params.assign(second.params.size(), 0.5f);
    constexpr std::size_t kBudget = 1 << 20;
    JobBuffer::Cursor cursor;
    dtlab::remote::BlobJoiner checkpoints, records;
    std::vector<dtlab::core::Checkpoint> joined;
    std::vector<std::vector<unsigned char>> recordChunks;
    int updates = 0;
    bool finished = false;
    while (!finished) {
      dtlab::remote::proto::JobUpdate update;
      QVERIFY(buffer.fill(cursor, 100, kBudget, update));
      ++updates;
      if (updates == 2) {  // mid-send: a newer checkpoint and steps up to it
        for (int i = 4; i <= 5; ++i) buffer.onStep({0, i, double(i)});
        buffer.onCheckpoint(second);
      }
      if (updates == 1) QCOMPARE(update.steps_size(), 3);  // the points before it come first
      std::size_t bytes = 0;
      for (const auto& part : update.blobs()) {
        bytes += part.data().size();
        dtlab::remote::BlobJoiner& joiner =
            part.kind() == dtlab::remote::proto::BLOB_CHECKPOINT ? checkpoints : records;
        QCOMPARE(joiner.add(part.total_bytes(), part.offset(), part.data()), std::string());
        if (!joiner.whole()) continue;
        const std::vector<unsigned char> blob = joiner.take();
        if (part.kind() == dtlab::remote::proto::BLOB_CHECKPOINT)
          joined.push_back(dtlab::core::decodeCheckpoint(blob));
        else
          recordChunks.push_back(blob);
      }
      QVERIFY(bytes <= kBudget);
      if (updates == 40) {
        dtlab::core::WorkerResult result;
        result.status = dtlab::core::RunStatus::kCompleted;
        buffer.finish(result);
      }
      finished = update.finished();
      QVERIFY(updates < 200);
    }
    QCOMPARE(joined.size(), std::size_t{2});
    QVERIFY(joined[0] == first);
    QVERIFY(joined[1] == second);
    // 300 pushes in chunks of 256: two chunks, the second closed by finish(), every push once.
    QCOMPARE(recordChunks.size(), std::size_t{2});
    int64_t pushes = 0;
    for (const std::vector<unsigned char>& chunk : recordChunks)
      pushes += static_cast<int64_t>(dtlab::core::decodePsRecords(chunk).pushes.size());
    QCOMPARE(pushes, int64_t{300});
  }

  // Checkpoints taken faster than a watcher polls all travel, in order, while the queue holds
  // at most kQueuedCheckpointBytes; beyond that the oldest give way and the newest always goes.
  void checkpointsTakenBetweenPollsAllTravel() {
    auto sent = [](JobBuffer& buffer) {
      JobBuffer::Cursor cursor;
      dtlab::remote::BlobJoiner joiner;
      std::vector<int64_t> steps;
      for (int updates = 0; updates < 400; ++updates) {
        dtlab::remote::proto::JobUpdate update;
        if (!buffer.fill(cursor, 1000, 8 << 20, update)) break;
        for (const auto& part : update.blobs()) {
          if (!joiner.add(part.total_bytes(), part.offset(), part.data()).empty()) return steps;
          if (!joiner.whole()) continue;
          steps.push_back(dtlab::core::decodeCheckpoint(joiner.take()).step);
        }
      }
      return steps;
    };
    auto taken = [](JobBuffer& buffer, int64_t step, std::size_t params) {
      buffer.onStep({0, step, double(step)});
      dtlab::core::Checkpoint c;
      c.step = step;
      c.strategy = "sync_allreduce";
      c.optimizer = "sgd";
      c.params.assign(params, float(step));
      buffer.onCheckpoint(c);
    };
    JobBuffer small;
    for (int64_t step = 1; step <= 6; ++step) taken(small, step, 1000);
    QCOMPARE(sent(small), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
    // 24 MB each: the queue keeps the newest two (48 MB), the third would pass 64 MiB.
    JobBuffer large;
    for (int64_t step = 1; step <= 4; ++step) taken(large, step, 6'000'000);
    QCOMPARE(sent(large), (std::vector<int64_t>{3, 4}));
    QVERIFY(3 * 24'000'000 > dtlab::remote::kQueuedCheckpointBytes);
  }

  void joinerRefusesPartsOutOfOrder() {
    dtlab::remote::BlobJoiner joiner(100);
    QVERIFY(joiner.add(200, 0, "x").find("more than the 100") != std::string::npos);
    QCOMPARE(joiner.add(6, 0, "abc"), std::string());
    QVERIFY(!joiner.whole());
    QVERIFY(joiner.add(6, 4, "de").find("offset 4 where 3") != std::string::npos);
    QVERIFY(joiner.add(6, 3, "de").find("no blob begun") != std::string::npos);
    QCOMPARE(joiner.add(6, 0, "abc"), std::string());
    QVERIFY(joiner.add(7, 3, "def").find("announcing 7") != std::string::npos);
    QCOMPARE(joiner.add(6, 0, "abc"), std::string());
    QVERIFY(joiner.add(6, 3, "defg").find("past the blob") != std::string::npos);
    QCOMPARE(joiner.add(6, 0, "abc"), std::string());
    QCOMPARE(joiner.add(6, 3, "def"), std::string());
    QVERIFY(joiner.whole());
    const std::vector<unsigned char> joined = joiner.take();
    QCOMPARE(std::string(joined.begin(), joined.end()), std::string("abcdef"));
    QCOMPARE(joiner.add(0, 0, ""), std::string());  // an empty blob is whole at once
    QVERIFY(joiner.whole());
    std::vector<std::pair<uint64_t, std::size_t>> parts;
    const std::vector<unsigned char> blob(10, 1);
    dtlab::remote::forEachPart(blob, 4, [&](uint64_t offset, std::span<const unsigned char> p) {
      parts.emplace_back(offset, p.size());
    });
    QCOMPARE(parts, (std::vector<std::pair<uint64_t, std::size_t>>{{0, 4}, {4, 4}, {8, 2}}));
  }

  void tableCompletesWaitersOnSetTimeoutCancelAndShutdown() {
    RendezvousTable table;
    const auto soon = [](std::chrono::milliseconds d) { return RendezvousTable::Clock::now() + d; };
    // Present keys complete inline.
    QVERIFY(table.set("a", "1").ok());
    Completed now;
    table.waitFor(table.newWaiterId(), {"a"}, soon(0ms), now.completion());
    QCOMPARE(now.calls.load(), 1);
    QCOMPARE(now.code, grpc::StatusCode::OK);
    QCOMPARE(now.value, std::string("1"));

    // Completed by the set of the last missing key.
    Completed bySet;
    table.waitFor(table.newWaiterId(), {"b", "c"}, soon(10s), bySet.completion());
    QVERIFY(table.set("b", "2").ok());
    QCOMPARE(bySet.calls.load(), 0);
    QVERIFY(table.set("c", "3").ok());
    QCOMPARE(bySet.calls.load(), 1);
    QCOMPARE(bySet.code, grpc::StatusCode::OK);
    QCOMPARE(bySet.value, std::string("2"));

    // Timed out by the timer thread, naming the key.
    Completed timedOut;
    const auto start = std::chrono::steady_clock::now();
    table.waitFor(table.newWaiterId(), {"never"}, soon(100ms), timedOut.completion());
    QVERIFY(waitFor(timedOut.calls, 1, 5s));
    QVERIFY(std::chrono::steady_clock::now() - start >= 100ms);
    QCOMPARE(timedOut.code, grpc::StatusCode::DEADLINE_EXCEEDED);
    QVERIFY(timedOut.message.find("'never'") != std::string::npos);

    // A later, shorter deadline is not held up by an earlier, longer one.
    Completed longer, shorter;
    table.waitFor(table.newWaiterId(), {"x"}, soon(30s), longer.completion());
    table.waitFor(table.newWaiterId(), {"y"}, soon(50ms), shorter.completion());
    QVERIFY(waitFor(shorter.calls, 1, 5s));
    QCOMPARE(longer.calls.load(), 0);

    // Cancel completes once; cancelling again or an unknown id is a no-op.
    Completed cancelled;
    const auto id = table.newWaiterId();
    table.waitFor(id, {"z"}, soon(30s), cancelled.completion());
    table.cancel(id);
    table.cancel(id);
    QCOMPARE(cancelled.calls.load(), 1);
    QCOMPARE(cancelled.code, grpc::StatusCode::CANCELLED);

    // Other jobs' keys go, this job's stay.
    QVERIFY(table.set("job-2/k", "v").ok());
    table.clearExceptPrefix("job-2/");
    QCOMPARE(table.keyCount(), std::size_t{1});

    table.shutdown();
    QCOMPARE(longer.calls.load(), 1);
    QCOMPARE(longer.code, grpc::StatusCode::UNAVAILABLE);
    QCOMPARE(table.pendingWaiters(), std::size_t{0});
    Completed afterShutdown;
    table.waitFor(table.newWaiterId(), {"job-2/k"}, soon(1s), afterShutdown.completion());
    QCOMPARE(afterShutdown.code, grpc::StatusCode::UNAVAILABLE);
  }

  void tableIsBounded() {
    RendezvousTable table;
    const std::string megabyte(1 << 20, 'v');
    grpc::Status status;
    int stored = 0;
    for (; stored < 1000; ++stored) {
      std::string key = std::to_string(stored);  // ("k" + to_string trips GCC 12's -Wrestrict)
      status = table.set(key, megabyte);
      if (!status.ok()) break;
    }
    QCOMPARE(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    QVERIFY(stored >= 200 && stored <= 256);
    // Overwriting a key reuses its room.
    QVERIFY(table.set("0", megabyte).ok());
  }

  void addressesAndLoopback() {
    using dtlab::remote::isLoopbackHost;
    using dtlab::remote::parseHostPort;
    QVERIFY(isLoopbackHost("127.0.0.1"));
    QVERIFY(isLoopbackHost("127.1.2.3"));
    QVERIFY(isLoopbackHost("::1"));
    QVERIFY(isLoopbackHost("localhost"));
    QVERIFY(!isLoopbackHost("0.0.0.0"));
    QVERIFY(!isLoopbackHost("::"));
    QVERIFY(!isLoopbackHost("192.168.1.4"));
    QVERIFY(!isLoopbackHost("example.org"));
    QCOMPARE(parseHostPort("127.0.0.1:80", "x").port, 80);
    QCOMPARE(parseHostPort("[::1]:0", "x").host, std::string("::1"));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, parseHostPort("127.0.0.1", "x"));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, parseHostPort(":80", "x"));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, parseHostPort("h:70000", "x"));
  }

  // The parameter server's board crosses the wire whole: a field lost here silently breaks
  // hybrid's switch back (it once did).
  void boardSurvivesTheWire() {
    dtlab::core::BoardState state;
    state.votes[dtlab::core::Votes::kTimeUp] = 1.0f;
    state.totalPushes = 1234;
    state.minClock = 17;
    state.stragglerRatio = 2.5;
    state.endPhase = 3;
    state.endRatio = 1.25;
    dtlab::remote::proto::PsBoard wire;
    dtlab::remote::toProto(state, wire);
    const dtlab::core::BoardState back = dtlab::remote::fromProto(wire);
    QCOMPARE(back.votes.values, state.votes.values);
    QCOMPARE(back.totalPushes, state.totalPushes);
    QCOMPARE(back.minClock, state.minClock);
    QCOMPARE(back.stragglerRatio, state.stragglerRatio);
    QCOMPARE(back.endPhase, state.endPhase);
    QCOMPARE(back.endRatio, state.endRatio);
    // Nobody training: the largest clock, not a number a worker would wait for.
    state.minClock = std::numeric_limits<int64_t>::max();
    dtlab::remote::toProto(state, wire);
    QCOMPARE(wire.min_clock(), int64_t{-1});
    QCOMPARE(dtlab::remote::fromProto(wire).minClock, std::numeric_limits<int64_t>::max());
  }
};

QTEST_APPLESS_MAIN(TestNodeParts)
#include "test_node_parts.moc"
