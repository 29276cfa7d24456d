// The process-memory probe a node uses to report a worker's peak resident size: the
// peak follows a large allocation up, and after a reset it follows the release down.
#include <QtTest/QtTest>

#include <cstdint>
#include <memory>

#include "core/common/process_memory.h"
#include "tests/sanitizers/sanitizers.h"

using namespace dtlab::core;

namespace {
constexpr int64_t kMiB = 1024 * 1024;
constexpr int64_t kBlock = 64 * kMiB;

// Allocates kBlock bytes and writes every page, so all of it becomes resident.
std::unique_ptr<char[]> touchBlock() {
  std::unique_ptr<char[]> block(new char[kBlock]);
  volatile char* bytes = block.get();  // volatile: the stores (and so the pages) must happen
  for (int64_t i = 0; i < kBlock; i += 4096) bytes[i] = 1;
  return block;
}
}  // namespace

class TestProcessMemory : public QObject {
  Q_OBJECT
 private slots:
  void readsResidentAndPeak() {
#ifndef __linux__
    QSKIP("resident sizes are read from /proc (Linux only)");
#endif
    const std::optional<int64_t> rss = residentBytes();
    const std::optional<int64_t> peak = peakResidentBytes();
    QVERIFY(rss.has_value());
    QVERIFY(peak.has_value());
    QVERIFY2(*rss > kMiB, qPrintable(QString::number(*rss)));  // a running test is > 1 MiB
    QVERIFY(*peak >= *rss);
  }

  void peakFollowsAnAllocationUpAndAResetDown() {
#ifndef __linux__
    QSKIP("resident sizes are read from /proc (Linux only)");
#endif
    const bool resettable = resetPeakResidentBytes();
    const int64_t before = peakResidentBytes().value();
    std::unique_ptr<char[]> block = touchBlock();
    const int64_t during = peakResidentBytes().value();
    QVERIFY2(during - before >= kBlock - 4 * kMiB,
             qPrintable(QString("peak rose by %1 MiB").arg(double(during - before) / kMiB)));
    QVERIFY(residentBytes().value() - before >= kBlock - 4 * kMiB);
    block.reset();  // 64 MiB is mmap'ed by malloc, so freeing returns it to the kernel
    if (!resettable) QSKIP("this kernel cannot reset the peak (/proc/self/clear_refs)");
#if defined(DTLAB_ASAN)
    // AddressSanitizer keeps freed memory in its quarantine, resident, to catch use after free.
    QSKIP("an AddressSanitizer build does not return freed memory to the kernel");
#endif
    QVERIFY(resetPeakResidentBytes());
    const int64_t after = peakResidentBytes().value();
    QVERIFY2(during - after >= kBlock - 4 * kMiB,
             qPrintable(QString("peak fell by %1 MiB").arg(double(during - after) / kMiB)));
    // Without a reset the peak stays at its high-water mark.
    block = touchBlock();
    block.reset();
    QVERIFY(peakResidentBytes().value() - residentBytes().value() >= kBlock - 4 * kMiB);
  }
};

QTEST_APPLESS_MAIN(TestProcessMemory)
#include "test_process_memory.moc"
