// Gradient compression (core/comm/gradient_compression.h) over real Gloo groups of threads:
// 16-bit conversions and sums, and the reducer of every kind — the same result on every rank,
// the exact tensors summed exactly, error feedback that loses nothing, PowerSGD exact on
// low-rank sums, fp16 that does not overflow, and the bytes it hands to the collectives.
#include <QtTest/QtTest>

#include <gloo/rendezvous/hash_store.h>

#include <nlohmann/json.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/comm/gloo_communicator.h"
#include "core/comm/gradient_compression.h"
#include "core/comm/half_float.h"
#include "core/common/random.h"
#include "core/spec/experiment_spec.h"
#include "core/spec/spec_json.h"
#include "core/train/ps_encoding.h"
#include "core/train/strategy_registry.h"
#include "tests/core/gloo_options.h"
#include "tests/core/rank_threads.h"

using namespace dtlab::core;

namespace {

// Runs body(rank, comm) on `size` threads of one Gloo group; rethrows the first failure.
void runGroup(const std::string& prefix, int size,
              const std::function<void(int, Communicator&)>& body) {
  gloo::rendezvous::HashStore store;
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      try {
        GlooCommunicator comm(store, r, size, test::glooOptions(prefix));
        body(r, comm);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < size; ++r)
    if (!errors[static_cast<std::size_t>(r)].empty())
      throw std::runtime_error("rank " + std::to_string(r) + ": " +
                               errors[static_cast<std::size_t>(r)]);
}

std::vector<float> randomValues(uint64_t seed, int64_t count, float scale) {
  Rng rng(seed);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& x : v) x = scale * rng.normal();
  return v;
}

// A buffer of a 24 x 20 matrix, a 20-vector, a 16 x 12 matrix and 5 exact floats (votes).
std::vector<CompressedTensor> layout() {
  const std::vector<CompressedTensor> shapes = {
      {{0, 480}, 24, 20}, {{480, 500}, 1, 20}, {{500, 692}, 16, 12}};
  return cutTensors(shapes, {}, 5);
}
constexpr int64_t kCount = 697;
constexpr int64_t kExactBegin = 692;

float maxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0.0f;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

}  // namespace

class CompressionTest : public QObject {
  Q_OBJECT

 private slots:
  void halfConversions() {
    const HalfFormat h = HalfFormat::kFp16;
    QCOMPARE(floatToHalf(h, 1.0f), uint16_t{0x3c00});
    QCOMPARE(floatToHalf(h, -2.0f), uint16_t{0xc000});
    QCOMPARE(floatToHalf(h, 65504.0f), uint16_t{0x7bff});
    QCOMPARE(floatToHalf(h, 65519.0f), uint16_t{0x7bff});           // rounds down to the largest
    QCOMPARE(floatToHalf(h, 65520.0f), uint16_t{0x7c00});           // rounds up to infinity
    QCOMPARE(floatToHalf(h, 0x1.0p-24f), uint16_t{0x0001});         // the smallest subnormal
    QCOMPARE(floatToHalf(h, 0x1.0p-26f), uint16_t{0x0000});         // below half of it: zero
    QCOMPARE(floatToHalf(h, 1.0f + 0x1.0p-11f), uint16_t{0x3c00});  // a tie: to even
    QCOMPARE(floatToHalf(h, 1.0f + 0x1.8p-11f), uint16_t{0x3c01});
    QVERIFY(std::isnan(halfToFloat(h, floatToHalf(h, std::numeric_limits<float>::quiet_NaN()))));
    QCOMPARE(halfToFloat(h, 0x0001), 0x1.0p-24f);
    QCOMPARE(halfToFloat(h, 0x7bff), 65504.0f);
    const HalfFormat b = HalfFormat::kBf16;
    QCOMPARE(floatToHalf(b, 1.0f), uint16_t{0x3f80});
    QCOMPARE(floatToHalf(b, std::bit_cast<float>(0x3f808000u)), uint16_t{0x3f80});  // tie: even
    QCOMPARE(floatToHalf(b, std::bit_cast<float>(0x3f818000u)), uint16_t{0x3f82});
    const float large = halfToFloat(b, floatToHalf(b, 3.0e38f));  // bf16 keeps float32's range
    QVERIFY(std::isfinite(large) && std::abs(large / 3.0e38f - 1.0f) <= 0x1.0p-9f);

    // The vector paths (F16C where the build has it) agree with the scalar ones everywhere,
    // subnormals and overflow included.
    std::vector<float> values = randomValues(3, 1000, 1.0f);
    for (int e = -30; e <= 20; ++e) values.push_back(std::ldexp(1.37f, e));
    values.push_back(70000.0f);
    values.push_back(-0.0f);
    for (HalfFormat f : {h, b}) {
      std::vector<uint16_t> halves(values.size());
      floatToHalf(f, values.data(), halves.data(), static_cast<int64_t>(values.size()));
      std::vector<float> back(values.size());
      halfToFloat(f, halves.data(), back.data(), static_cast<int64_t>(values.size()));
      for (std::size_t i = 0; i < values.size(); ++i) {
        QCOMPARE(halves[i], floatToHalf(f, values[i]));
        QCOMPARE(std::bit_cast<uint32_t>(back[i]),
                 std::bit_cast<uint32_t>(halfToFloat(f, halves[i])));
      }
    }
  }

  // Gloo's ring of 16-bit values and the all-gather the base class falls back on both give
  // the sum within 16-bit rounding, the same on every rank.
  void sixteenBitAllReduce() {
    constexpr int kRanks = 3;
    constexpr int64_t kValues = 10001;  // odd: the fallback packs two to a float
    for (HalfFormat format : {HalfFormat::kFp16, HalfFormat::kBf16})
      for (bool ring : {true, false}) {
        std::vector<std::vector<float>> out(kRanks);
        runGroup(std::string("half-") + toString(format) + (ring ? "-ring" : "-gather"), kRanks,
                 [&](int rank, Communicator& comm) {
                   const std::vector<float> mine = randomValues(10 + rank, kValues, 1.0f);
                   std::vector<uint16_t> h(kValues);
                   floatToHalf(format, mine.data(), h.data(), kValues);
                   if (ring)
                     comm.allReduceSum16(h.data(), kValues, format);
                   else
                     comm.Communicator::allReduceSum16(h.data(), kValues, format);
                   out[static_cast<std::size_t>(rank)].resize(kValues);
                   halfToFloat(format, h.data(), out[static_cast<std::size_t>(rank)].data(),
                               kValues);
                 });
        std::vector<float> exact(kValues, 0.0f);
        for (int r = 0; r < kRanks; ++r) {
          const std::vector<float> v = randomValues(10 + r, kValues, 1.0f);
          for (int64_t i = 0; i < kValues; ++i)
            exact[static_cast<std::size_t>(i)] += v[static_cast<std::size_t>(i)];
        }
        const float tolerance = format == HalfFormat::kFp16 ? 0.02f : 0.15f;
        QVERIFY2(maxAbsDiff(out[0], exact) < tolerance, toString(format));
        QCOMPARE(out[1], out[0]);
        QCOMPARE(out[2], out[0]);
      }
  }

  // Every kind: the same values on every rank, the exact tail summed exactly, and (for the 16-bit
  // ones) the sum within rounding; each hands fewer bytes to the collectives than float32.
  void everyKindAgreesAcrossRanks() {
    constexpr int kRanks = 4;
    for (CompressionKind kind : {CompressionKind::kFp16, CompressionKind::kBf16,
                                 CompressionKind::kTopK, CompressionKind::kPowerSgd}) {
      CompressionConfig config;
      config.kind = kind;
      config.ratio = 0.05;
      config.rank = 2;
      std::vector<std::vector<float>> out(kRanks);
      std::vector<CompressionTotals> totals(kRanks);
      runGroup(std::string("kinds-") + toString(kind), kRanks, [&](int rank, Communicator& comm) {
        CompressedReducer reducer(config, layout(), kCount, 7);
        reducer.setStep(1);
        std::vector<float> data = randomValues(100 + rank, kCount, 1e-3f);
        for (int64_t i = kExactBegin; i < kCount; ++i)
          data[static_cast<std::size_t>(i)] = static_cast<float>(rank + i);  // votes, times
        // Two ranges, as two buckets would be.
        reducer.reduce(comm, data.data(), {500, kCount});
        reducer.reduce(comm, data.data(), {0, 500});
        out[static_cast<std::size_t>(rank)] = data;
        totals[static_cast<std::size_t>(rank)] = reducer.totals();
      });
      for (int r = 1; r < kRanks; ++r) QCOMPARE(out[static_cast<std::size_t>(r)], out[0]);
      for (int64_t i = kExactBegin; i < kCount; ++i)
        QCOMPARE(out[0][static_cast<std::size_t>(i)], static_cast<float>(0 + 1 + 2 + 3 + 4 * i));
      QCOMPARE(totals[0].denseBytes, kCount * 4);
      QVERIFY2(totals[0].payloadBytes < totals[0].denseBytes, toString(kind));
      if (kind == CompressionKind::kFp16 || kind == CompressionKind::kBf16) {
        // Each of the ring's roundings (the conversion and n-1 additions) errs by at most half a
        // unit in the last place of a value no larger than the sum of magnitudes.
        std::vector<float> exact(kCount, 0.0f), magnitudes(kCount, 0.0f);
        for (int r = 0; r < kRanks; ++r) {
          const std::vector<float> v = randomValues(100 + r, kCount, 1e-3f);
          for (int64_t i = 0; i < kExactBegin; ++i) {
            exact[static_cast<std::size_t>(i)] += v[static_cast<std::size_t>(i)];
            magnitudes[static_cast<std::size_t>(i)] += std::abs(v[static_cast<std::size_t>(i)]);
          }
        }
        const float unit = kind == CompressionKind::kFp16 ? 0x1.0p-11f : 0x1.0p-8f;
        for (int64_t i = 0; i < kExactBegin; ++i) {
          const float want = exact[static_cast<std::size_t>(i)];
          const float got = out[0][static_cast<std::size_t>(i)];
          QVERIFY2(
              std::abs(got - want) <= kRanks * unit * magnitudes[static_cast<std::size_t>(i)],
              qPrintable(
                  QString("%1 at %2: %3 vs %4").arg(toString(kind)).arg(i).arg(got).arg(want)));
        }
        // 16 bits for each compressible value, float32 for the exact tail (fp16: and each
        // range's largest magnitude).
        QCOMPARE(totals[0].payloadBytes, kExactBegin * 2 + (kCount - kExactBegin) * 4 +
                                             (kind == CompressionKind::kFp16 ? 8 : 0));
      }
    }
  }

  // fp16 with values far beyond its range: the ranks agree on a scale, nothing overflows.
  void fp16ScalesLargeValues() {
    CompressionConfig config;
    config.kind = CompressionKind::kFp16;
    std::vector<std::vector<float>> out(3);
    runGroup("fp16-large", 3, [&](int rank, Communicator& comm) {
      CompressedReducer reducer(config, cutTensors({{{0, 64}, 8, 8}}, {}, 0), 64, 1);
      std::vector<float> data = randomValues(40 + rank, 64, 1e6f);
      reducer.reduce(comm, data.data(), {0, 64});
      out[static_cast<std::size_t>(rank)] = data;
    });
    for (int i = 0; i < 64; ++i) {
      float want = 0.0f;
      for (int r = 0; r < 3; ++r)
        want += randomValues(40 + r, 64, 1e6f)[static_cast<std::size_t>(i)];
      QVERIFY(std::isfinite(out[0][static_cast<std::size_t>(i)]));
      QVERIFY2(std::abs(out[0][static_cast<std::size_t>(i)] - want) <= 2e-3f * 3e6f,
               qPrintable(QString::number(i)));
    }
  }

  // Top-k and PowerSGD keep what they do not send: after T steps, what was delivered plus what
  // every rank still keeps is everything the ranks put in.
  void errorFeedbackLosesNothing() {
    constexpr int kRanks = 3;
    constexpr int kSteps = 6;
    for (CompressionKind kind : {CompressionKind::kTopK, CompressionKind::kPowerSgd}) {
      CompressionConfig config;
      config.kind = kind;
      config.ratio = 0.02;
      config.rank = 1;
      std::vector<std::vector<float>> delivered(kRanks, std::vector<float>(kCount, 0.0f));
      std::vector<std::vector<float>> probe(kRanks);
      runGroup(std::string("feedback-") + toString(kind), kRanks,
               [&](int rank, Communicator& comm) {
                 CompressedReducer reducer(config, layout(), kCount, 9);
                 for (int step = 1; step <= kSteps; ++step) {
                   reducer.setStep(step);
                   std::vector<float> data = randomValues(1000 * step + rank, kCount, 1.0f);
                   reducer.reduce(comm, data.data(), {0, kCount});
                   for (int64_t i = 0; i < kCount; ++i)
                     delivered[static_cast<std::size_t>(rank)][static_cast<std::size_t>(i)] +=
                         data[static_cast<std::size_t>(i)];
                 }
                 probe[static_cast<std::size_t>(rank)] = reducer.keptError();
               });
      std::vector<float> input(kCount, 0.0f);
      for (int step = 1; step <= kSteps; ++step)
        for (int r = 0; r < kRanks; ++r) {
          const std::vector<float> v = randomValues(1000 * step + r, kCount, 1.0f);
          for (int64_t i = 0; i < kCount; ++i)
            input[static_cast<std::size_t>(i)] += v[static_cast<std::size_t>(i)];
        }
      for (int64_t i = 0; i < kCount; ++i) {
        float accounted = delivered[0][static_cast<std::size_t>(i)];
        for (int r = 0; r < kRanks; ++r)
          accounted += probe[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)];
        QVERIFY2(std::abs(accounted - input[static_cast<std::size_t>(i)]) < 1e-3f,
                 qPrintable(QString("%1 at %2: %3 vs %4")
                                .arg(toString(kind))
                                .arg(i)
                                .arg(accounted)
                                .arg(input[static_cast<std::size_t>(i)])));
      }
      // And it did compress: something was kept back.
      float kept = 0.0f;
      for (float e : probe[0]) kept += std::abs(e);
      QVERIFY(kept > 0.0f);
    }
  }

  // A sum of rank-2 matrices comes back exact from PowerSGD rank 2 (the first power iteration
  // spans its columns), and the first start_step steps are plain sums.
  void powerSgdIsExactOnLowRankSums() {
    constexpr int kRanks = 2;
    constexpr int64_t kRows = 30;
    constexpr int64_t kCols = 25;
    const std::vector<float> u = randomValues(1, kRows, 1.0f), v = randomValues(2, kCols, 1.0f),
                             w = randomValues(3, kRows, 1.0f), z = randomValues(4, kCols, 1.0f);
    const auto matrix = [&](int rank) {
      std::vector<float> m(kRows * kCols);
      for (int64_t i = 0; i < kRows; ++i)
        for (int64_t j = 0; j < kCols; ++j)
          m[static_cast<std::size_t>(i * kCols + j)] =
              (1.0f + rank) * u[static_cast<std::size_t>(i)] * v[static_cast<std::size_t>(j)] +
              (2.0f - rank) * w[static_cast<std::size_t>(i)] * z[static_cast<std::size_t>(j)];
      return m;
    };
    std::vector<float> sum = matrix(0);
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += matrix(1)[i];
    CompressionConfig config;
    config.kind = CompressionKind::kPowerSgd;
    config.rank = 2;
    config.startStep = 1;
    std::vector<std::vector<float>> out(kRanks);
    std::vector<CompressionTotals> totals(kRanks);
    runGroup("powersgd-exact", kRanks, [&](int rank, Communicator& comm) {
      CompressedReducer reducer(config, cutTensors({{{0, kRows * kCols}, kRows, kCols}}, {}, 0),
                                kRows * kCols, 5);
      for (int step = 1; step <= 2; ++step) {
        reducer.setStep(step);
        std::vector<float> data = matrix(rank);
        reducer.reduce(comm, data.data(), {0, kRows * kCols});
        out[static_cast<std::size_t>(rank)] = data;
        if (step == 1) {
          // Uncompressed: exactly the float32 sum.
          std::vector<float> plain = matrix(0);
          for (std::size_t i = 0; i < plain.size(); ++i) plain[i] += matrix(1)[i];
          if (data != plain) throw std::runtime_error("step 1 (start_step) was not a plain sum");
        }
      }
      totals[static_cast<std::size_t>(rank)] = reducer.totals();
    });
    QCOMPARE(out[1], out[0]);
    QVERIFY2(maxAbsDiff(out[0], sum) < 1e-3f, qPrintable(QString::number(maxAbsDiff(out[0], sum))));
    // Step 1 dense, step 2 P (30 x 2) and Q (25 x 2).
    QCOMPARE(totals[0].denseBytes, 2 * kRows * kCols * 4);
    QCOMPARE(totals[0].payloadBytes, kRows * kCols * 4 + 2 * (kRows + kCols) * 4);
  }

  // Whole runs of four ranks: each compressed variant trains (its accuracy near the float32
  // run's), every replica ends identical, and the bytes that moved shrink as the summary says.
  void compressedStrategiesTrain() {
    struct Case {
      const char* strategy;
      const char* compression;
      double fewerBytesAtLeast;  // bytes per sample: none's / this one's
    };
    const Case cases[] = {{"sync_allreduce", "none", 1.0},     {"sync_allreduce", "fp16", 1.9},
                          {"sync_allreduce", "bf16", 1.9},     {"sync_allreduce", "topk", 3.0},
                          {"sync_allreduce", "powersgd", 3.0}, {"local_sgd", "none", 1.0},
                          {"local_sgd", "topk", 3.0},          {"local_sgd", "powersgd", 2.0}};
    std::map<std::string, double> plainBytes;
    std::map<std::string, double> plainAccuracy;
    for (const Case& c : cases) {
      ExperimentSpec spec = test::smallBlobsSpec(60, 0);
      VariantConfig v = defaultVariant(c.strategy);
      v.settings.set("compression", std::string(c.compression));
      if (std::string(c.compression) == "topk") v.settings.set("topk_ratio", 0.05);
      if (std::string(c.compression) == "powersgd") v.settings.set("powersgd_rank", int64_t{2});
      if (std::string(c.strategy) == "local_sgd") v.settings.set("period", int64_t{2});
      spec.variants = {v};
      test::RankThreads how;
      how.nodes = test::nodesAt({1, 1, 1, 1});
      // One algorithm for every size and variant: the tuned choice moves with timing, and the
      // wire bytes with it (a small message's own exchange sends (n-1)x the buffer, a ring
      // 2(n-1)/n x: powersgd once measured 2x its usual bytes that way).
      how.allReduceAlgorithm = AllReduceAlgorithm::kGlooAllreduce;
      const std::vector<WorkerResult> results = test::runRankThreads(spec, how);
      const std::string name = std::string(c.strategy) + "/" + c.compression;
      ExchangeTotals totals;
      int64_t samples = 0;
      for (const WorkerResult& r : results) {
        QVERIFY2(r.status == RunStatus::kCompleted, (name + ": " + r.error).c_str());
        QCOMPARE(r.paramChecksum, results[0].paramChecksum);
        totals.merge(r.exchange);
        samples += r.samples;
      }
      const double bytes = static_cast<double>(totals.bytesSent + totals.bytesReceived) /
                           static_cast<double>(samples);
      QVERIFY(results[0].finalTestAccuracy.has_value());
      const double accuracy = *results[0].finalTestAccuracy;
      qInfo("%s: %.1f bytes/sample, test accuracy %.4f", name.c_str(), bytes, accuracy);
      if (std::string(c.compression) == "none") {
        plainBytes[c.strategy] = bytes;
        plainAccuracy[c.strategy] = accuracy;
        QCOMPARE(totals.compressPayloadBytes, int64_t{0});
        continue;
      }
      QVERIFY2(plainBytes[c.strategy] / bytes >= c.fewerBytesAtLeast,
               qPrintable(QString("%1: %2 B/sample against %3")
                              .arg(name.c_str())
                              .arg(bytes)
                              .arg(plainBytes[c.strategy])));
      QVERIFY2(accuracy > plainAccuracy[c.strategy] - 0.1,
               qPrintable(QString("%1: accuracy %2 against %3")
                              .arg(name.c_str())
                              .arg(accuracy)
                              .arg(plainAccuracy[c.strategy])));
      QVERIFY(totals.compressPayloadBytes > 0);
      QVERIFY(totals.compressDenseBytes > totals.compressPayloadBytes);
    }
  }

  // local_sgd's compressed averages start from the last average: a worker that could miss one
  // (on_node_loss "continue") is refused, saying why.
  void localSgdRefusesContinueWithCompression() {
    nlohmann::json j = nlohmann::json::parse(R"({"variants": [{"strategy": "local_sgd",
        "compression": "topk", "on_node_loss": "continue"}]})");
    try {
      parseExperimentSpec(j);
      QFAIL("accepted");
    } catch (const SpecError& e) {
      QVERIFY2(QString(e.what()).contains("variants[0].on_node_loss"), e.what());
      QVERIFY2(QString(e.what()).contains("compression"), e.what());
    }
    // And a setting of another kind is refused by the schema.
    j = nlohmann::json::parse(R"({"variants": [{"compression": "fp16", "topk_ratio": 0.1}]})");
    QVERIFY_THROWS_EXCEPTION(SpecError, parseExperimentSpec(j));
  }

  // A parameter server's encodings: exact where they promise to be, 16-bit within rounding
  // (fp16 scaled so that large values do not overflow), and a malformed payload refused saying
  // what is wrong, as the server answers a bad push.
  void psEncodingsRoundTripAndRefuseBadPayloads() {
    std::vector<float> values = randomValues(77, 1000, 3e-4f);
    values[10] = 2e5f;  // beyond fp16's range unscaled
    for (PsEncoding e : {PsEncoding::kFloat32, PsEncoding::kFp16, PsEncoding::kBf16}) {
      std::string bytes;
      encodeValues(e, values.data(), 1000, bytes);
      QCOMPARE(static_cast<int64_t>(bytes.size()), encodedBytes(e, values.data(), 1000));
      std::vector<float> back(1000);
      decodeValues(e, bytes, back.data(), 1000);
      const float unit = e == PsEncoding::kFloat32 ? 0.0f
                         : e == PsEncoding::kFp16  ? 0x1.0p-11f
                                                   : 0x1.0p-8f;
      for (int i = 0; i < 1000; ++i)
        QVERIFY2(
            std::abs(back[static_cast<std::size_t>(i)] - values[static_cast<std::size_t>(i)]) <=
                unit * std::abs(values[static_cast<std::size_t>(i)]) +
                    (e == PsEncoding::kFp16 ? 2e5f * 0x1.0p-24f : 0.0f),
            qPrintable(QString("%1 at %2").arg(toString(e)).arg(i)));
      // Decoding what was decoded changes nothing: run and replay round the same way.
      std::vector<float> again = back;
      roundTrip(e, again.data(), 1000);
      QCOMPARE(again, back);
    }
    std::vector<float> sparse(1000, 0.0f);
    sparse[3] = 1.5f;
    sparse[999] = -2.0f;
    std::string bytes;
    encodeValues(PsEncoding::kSparse, sparse.data(), 1000, bytes);
    QCOMPARE(bytes.size(), std::size_t{4 + 2 * 8});
    std::vector<float> back(1000, 7.0f);
    decodeValues(PsEncoding::kSparse, bytes, back.data(), 1000);
    QCOMPARE(back, sparse);
    const auto refused = [](PsEncoding e, const std::string& payload, int64_t count,
                            const char* says) {
      std::vector<float> out(static_cast<std::size_t>(count));
      try {
        decodeValues(e, payload, out.data(), count);
      } catch (const dtlab::Error& error) {
        return QString(error.what()).contains(says);
      }
      return false;
    };
    QVERIFY(refused(PsEncoding::kSparse, bytes, 999, "beyond a block of 999"));
    QVERIFY(refused(PsEncoding::kSparse, bytes.substr(0, 10), 1000, "bytes where 20 were due"));
    QVERIFY(refused(PsEncoding::kBf16, std::string(10, '\0'), 6, "10 bytes where 12 were due"));
    std::string badScale(4 + 2 * 4, '\0');
    const float three = 3.0f;
    std::memcpy(badScale.data(), &three, 4);
    QVERIFY(refused(PsEncoding::kFp16, badScale, 4, "not a power of two"));
    std::string swapped = bytes;  // indices 3 and 999 the wrong way round
    std::memcpy(swapped.data() + 4, bytes.data() + 8, 4);
    std::memcpy(swapped.data() + 8, bytes.data() + 4, 4);
    QVERIFY(refused(PsEncoding::kSparse, swapped, 1000, "out of order"));
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, psEncodingFromWire(7));
  }

  // A worker's top-k pushes: k values a block go, the rest is kept, and what went plus what is
  // kept is all the gradients put in.
  void pushSparsifierKeepsWhatItDoesNotSend() {
    PushSparsifier sparsifier(0.1, 200);
    const std::vector<GradientRange> blocks = {{0, 120}, {120, 200}};
    std::vector<float> sent(200, 0.0f), input(200, 0.0f);
    for (int step = 0; step < 5; ++step) {
      std::vector<float> g = randomValues(300 + step, 200, 1.0f);
      for (int i = 0; i < 200; ++i)
        input[static_cast<std::size_t>(i)] += g[static_cast<std::size_t>(i)];
      sparsifier.apply(g.data(), blocks);
      int64_t first = 0, second = 0;
      for (int i = 0; i < 200; ++i) {
        sent[static_cast<std::size_t>(i)] += g[static_cast<std::size_t>(i)];
        (i < 120 ? first : second) += g[static_cast<std::size_t>(i)] != 0.0f;
      }
      QCOMPARE(first, int64_t{12});
      QCOMPARE(second, int64_t{8});
    }
    for (int i = 0; i < 200; ++i)
      QVERIFY(std::abs(sent[static_cast<std::size_t>(i)] +
                       sparsifier.keptError()[static_cast<std::size_t>(i)] -
                       input[static_cast<std::size_t>(i)]) < 1e-5f);
  }

  // The parameter server's strategies compress too: a run trains, and its summary counts what
  // the pushes and pulls carried instead of float32.
  void parameterServerRunsCompress() {
    for (const char* kind : {"topk", "fp16", "bf16"}) {
      ExperimentSpec spec = test::smallBlobsSpec(60, 0);
      VariantConfig v = defaultVariant("async_ps");
      v.settings.set("compression", std::string(kind));
      if (std::string(kind) == "topk") v.settings.set("topk_ratio", 0.05);
      spec.variants = {v};
      test::RankThreads how;
      how.nodes = test::nodesAt({1, 1, 1});
      how.parameterServer = true;
      const std::vector<WorkerResult> results = test::runRankThreads(spec, how);
      ExchangeTotals totals;
      for (const WorkerResult& r : results) {
        QVERIFY2(r.status == RunStatus::kCompleted, r.error.c_str());
        totals.merge(r.exchange);
      }
      QVERIFY(results[0].finalTestAccuracy.has_value());
      qInfo("async_ps/%s: compression %.2fx, test accuracy %.4f", kind,
            static_cast<double>(totals.compressDenseBytes) /
                static_cast<double>(totals.compressPayloadBytes),
            *results[0].finalTestAccuracy);
      QVERIFY2(*results[0].finalTestAccuracy > 0.9, kind);
      // Pushes and pulls: 16-bit both ways is about 2x; sparse pushes with float32 pulls a
      // little under 2x.
      QVERIFY(totals.compressPayloadBytes > 0);
      QVERIFY2(static_cast<double>(totals.compressDenseBytes) /
                       static_cast<double>(totals.compressPayloadBytes) >
                   1.7,
               kind);
    }
    // PowerSGD needs all-reduces of its factors: not a setting of the server's strategies.
    QVERIFY_THROWS_EXCEPTION(
        SpecError, parseExperimentSpec(nlohmann::json::parse(
                       R"({"variants": [{"strategy": "async_ps", "compression": "powersgd"}]})")));
  }

  void cutsFallBetweenRows() {
    const std::vector<CompressedTensor> tensors =
        cutTensors({{{0, 40}, 8, 5}, {{40, 45}, 1, 5}}, {20, 40, 42}, 3);
    QCOMPARE(tensors.size(), std::size_t{5});
    QCOMPARE(tensors[0].rows, int64_t{4});
    QCOMPARE(tensors[1].range, (GradientRange{20, 40}));
    QCOMPARE(tensors[3].cols, int64_t{3});
    QVERIFY(tensors[4].exact);
    QVERIFY_THROWS_EXCEPTION(dtlab::Error, cutTensors({{{0, 40}, 8, 5}}, {22}, 0));
  }
};

QTEST_GUILESS_MAIN(CompressionTest)
#include "test_compression.moc"
