#include <QtTest/QtTest>

#include <cstdint>

#include "core/common/check.h"
#include "core/common/random.h"
#include "core/tensor/tensor.h"

using dtlab::core::Rng;
using dtlab::core::Tensor;

class TestTensor : public QObject {
  Q_OBJECT
 private slots:
  void zeroFilledAndAligned() {
    Tensor t(3, 5);
    QCOMPARE(t.rows(), 3);
    QCOMPARE(t.cols(), 5);
    QCOMPARE(reinterpret_cast<std::uintptr_t>(t.data()) % dtlab::core::kTensorAlignment, 0u);
    for (float v : t.span()) QCOMPARE(v, 0.0f);
  }

  void resizeWithinCapacityKeepsBuffer() {
    Tensor t(8, 8);
    const float* before = t.data();
    t.resize(4, 16);
    QCOMPARE(t.data(), before);
    t.resize(2, 3);
    QCOMPARE(t.data(), before);
    QCOMPARE(t.size(), 6);
    t.resize(9, 9);
    QVERIFY(t.capacity() >= 81);
  }

  void copyIsDeep() {
    Tensor a(2, 2);
    a.at(1, 1) = 3.0f;
    Tensor b = a;
    b.at(1, 1) = 4.0f;
    QCOMPARE(a.at(1, 1), 3.0f);
    Tensor c = std::move(b);
    QCOMPARE(c.at(1, 1), 4.0f);
    QCOMPARE(b.size(), 0);
  }

  void negativeShapeIsRejected() {
    Tensor t;
    QVERIFY_THROWS_EXCEPTION(dtlab::EnforceError, t.resize(-1, 2));
  }

  void rngIsReproducibleAndNormal() {
    Rng a(7), b(7);
    for (int i = 0; i < 100; ++i) QCOMPARE(a.next(), b.next());
    Rng r(123);
    double sum = 0, sq = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) {
      const double x = r.normal();
      sum += x;
      sq += x * x;
    }
    const double mean = sum / n, var = sq / n - mean * mean;
    QVERIFY(std::abs(mean) < 0.01);
    QVERIFY(std::abs(var - 1.0) < 0.02);
    QVERIFY(dtlab::core::deriveSeed(1, 2) != dtlab::core::deriveSeed(1, 3));
    QVERIFY(dtlab::core::deriveSeed(1, 2, 3) != dtlab::core::deriveSeed(1, 3, 2));
  }
};

QTEST_APPLESS_MAIN(TestTensor)
#include "test_tensor.moc"
