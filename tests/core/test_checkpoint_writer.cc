// CheckpointWriter (core/train/checkpoint_writer.h): a checkpoint whose copy runs on the
// writer's thread holds whoever would change the state until the copy has run, so the sink
// gets the state of the checkpoint's step; a copy or a sink that fails is raised on the
// training thread, and nobody waits forever for it.
#include <QtTest/QtTest>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "core/common/check.h"
#include "core/metrics/metrics.h"
#include "core/train/checkpoint.h"
#include "core/train/checkpoint_writer.h"

using namespace dtlab::core;

namespace {

class Recorder : public MetricSink {
 public:
  void onCheckpoint(const Checkpoint& c) override {
    std::lock_guard lock(mutex);
    received.push_back(c);
  }
  std::mutex mutex;
  std::vector<Checkpoint> received;
};

}  // namespace

class TestCheckpointWriter : public QObject {
  Q_OBJECT
 private slots:
  // The training thread's "update" waits in awaitCopy() while the writer is still copying, and
  // the sink receives the state as it was before the update.
  void anUpdateWaitsForTheCopyBesideIt() {
    Recorder sink;
    CheckpointWriter writer(sink);
    std::vector<float> state = {1.0f, 2.0f, 3.0f};
    std::promise<void> mayCopy;
    std::shared_future<void> go = mayCopy.get_future().share();

    Checkpoint& c = writer.take();
    c.step = 7;
    writer.write([&state, go](Checkpoint& out) {
      go.wait();
      out.params = state;
    });
    std::atomic<bool> updated{false};
    std::thread training([&] {
      writer.awaitCopy();
      for (float& v : state) v += 10.0f;  // the update
      updated = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    QVERIFY2(!updated, "the update ran while the copy had not");
    mayCopy.set_value();
    training.join();
    QVERIFY(updated);
    writer.drain();
    QCOMPARE(sink.received.size(), std::size_t{1});
    QCOMPARE(sink.received[0].step, int64_t{7});
    QCOMPARE(sink.received[0].params, (std::vector<float>{1.0f, 2.0f, 3.0f}));
    // With no copy pending there is nothing to wait for.
    QCOMPARE(writer.awaitCopy(), 0.0);
  }

  // The buffer is reused: a later checkpoint copied on the training thread replaces the
  // arrays of one copied beside it, and both reach the sink in order.
  void copiesBesideAndOnTheTrainingThreadMix() {
    Recorder sink;
    CheckpointWriter writer(sink);
    writer.take().step = 1;
    writer.write([](Checkpoint& out) { out.params = {1.0f}; });
    Checkpoint& second = writer.take();  // waits for the first write
    second.step = 2;
    second.params = {2.0f, 2.0f};
    writer.write();
    writer.drain();
    QCOMPARE(sink.received.size(), std::size_t{2});
    QCOMPARE(sink.received[0].params, std::vector<float>{1.0f});
    QCOMPARE(sink.received[1].params, (std::vector<float>{2.0f, 2.0f}));
  }

  // A copy that throws releases the waiting update, skips the sink, and is raised at the
  // next take().
  void aFailedCopyIsRaisedAndHoldsNobody() {
    Recorder sink;
    CheckpointWriter writer(sink);
    writer.take().step = 3;
    writer.write([](Checkpoint&) { throw dtlab::Error("the state went away"); });
    writer.awaitCopy();  // returns: the copy ended, even though it failed
    bool raised = false;
    try {
      writer.take();
    } catch (const dtlab::Error& e) {
      raised = std::string(e.what()).find("the state went away") != std::string::npos;
    }
    QVERIFY(raised);
    QVERIFY(sink.received.empty());
    // The writer goes on after it.
    writer.take().step = 4;
    writer.write();
    writer.drain();
    QCOMPARE(sink.received.size(), std::size_t{1});
    QCOMPARE(sink.received[0].step, int64_t{4});
  }
};

QTEST_GUILESS_MAIN(TestCheckpointWriter)
#include "test_checkpoint_writer.moc"
