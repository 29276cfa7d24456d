// A project recorded before events carried their facts (schema 8: tests/data/
// recorded_schema8.dtlab, two runs on two local nodes, sync_allreduce and a sync_then_async
// hybrid, recorded by the build of 2026-12-07) opens, compares, reports and calibrates as it
// did: the upgrade gives its events their facts from their sentences, once, and nothing after
// reads a sentence. Its calibration is compared with the one that build printed
// (tests/data/recorded_schema8.calibration.json), all but what calibrate times afresh.
#include <QtTest/QtTest>

#include <QtCore/QFile>
#include <QtCore/QTemporaryDir>

#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <string>

#include "core/analysis/comparison.h"
#include "core/metrics/event_facts.h"
#include "core/store/project_store.h"
#include "core/store/sqlite_db.h"
#include "tests/e2e/e2e_support.h"

using namespace dtlab;
using namespace dtlab::core;

namespace {

const QString kRecorded = DTLAB_SOURCE_DIR "/tests/data/recorded_schema8.dtlab";
const std::string kCalibration = DTLAB_SOURCE_DIR "/tests/data/recorded_schema8.calibration.json";

// Where `a` and `b` differ ("" where they agree): every key and string the same, every number
// within a relative 1e-9 (the fits' sums may round differently on another compiler or CPU).
std::string difference(const nlohmann::json& a, const nlohmann::json& b, const std::string& at) {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>();
    const double y = b.get<double>();
    return std::abs(x - y) <= 1e-9 * std::max(std::abs(x), std::abs(y)) ? "" : at;
  }
  if (a.type() != b.type() || a.size() != b.size()) return at;
  if (a.is_object()) {
    for (const auto& [key, value] : a.items()) {
      if (!b.contains(key)) return at + "." + key;
      if (std::string d = difference(value, b.at(key), at + "." + key); !d.empty()) return d;
    }
    return "";
  }
  if (a.is_array()) {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (std::string d = difference(a[i], b[i], at + "[" + std::to_string(i) + "]"); !d.empty())
        return d;
    return "";
  }
  return a == b ? "" : at;
}

}  // namespace

class TestRecordedProjects : public QObject {
  Q_OBJECT

 private:
  // A copy of the recorded project in the test's directory (opening it upgrades it).
  QString copy(const QString& name) {
    const QString path = dir_.filePath(name);
    QFile::remove(path);
    if (!QFile::copy(kRecorded, path)) return {};
    QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner);
    return path;
  }

  QTemporaryDir dir_;

 private slots:
  void theUpgradeGivesEveryEventItsFacts() {
    const QString path = copy("facts.dtlab");
    QVERIFY(!path.isEmpty());
    auto store = ProjectStore::open(path.toStdString(), false);
    int nodes = 0;
    int starts = 0;
    std::optional<PhaseFacts> switched;
    for (const RunRecord& run : store->runs()) {
      for (const RunEvent& e : store->events(run.id)) {
        if (const auto node = nodeFactsOf(e)) {
          ++nodes;
          QCOMPARE(node->host, std::string("vm"));
          QCOMPARE(node->version, std::string("0.1.0"));
          QCOMPARE(node->cores, int64_t{2});
          QCOMPARE(e.detail, node->sentence());  // the sentence as it was written
        }
        if (const auto collective = collectiveFactsOf(e)) {
          ++starts;
          QCOMPARE(collective->bucketBytes, int64_t{64} * 1024);
          if (run.name == "recorded/sync") {  // the group that timed its all-reduce
            QCOMPARE(collective->calls.size(), std::size_t{1});
            QCOMPARE(collective->calls[0].bytes, int64_t{64} * 1024);
            QCOMPARE(collective->calls[0].algorithm, std::string("shm"));
            QVERIFY(collective->calls[0].ms > 0.0);
          }
        }
        if (const auto phase = phaseFactsOf(e)) switched = phase;
      }
    }
    QCOMPARE(nodes, 4);
    QCOMPARE(starts, 2);
    QVERIFY(switched.has_value());
    QVERIFY(switched->asynchronous);
  }

  void itComparesReportsAndCalibratesAsBefore() {
    const QString path = copy("as_before.dtlab");
    const e2e::Outcome compared = e2e::cli({"compare", path});
    QVERIFY2(compared.exitCode == 0, qPrintable(compared.err));
    QVERIFY2(compared.out.contains("sync") && compared.out.contains("hybrid") &&
                 compared.out.count("step limit") == 2,
             qPrintable(compared.out));

    const QString html = dir_.filePath("report.html");
    const e2e::Outcome reported = e2e::cli({"report", path, "-o", html});
    QVERIFY2(reported.exitCode == 0, qPrintable(reported.err));
    QFile report(html);
    QVERIFY(report.open(QIODevice::ReadOnly));
    const QByteArray text = report.readAll();
    // Where it ran, from the node events' facts: both nodes on the one host.
    QVERIFY2(text.contains("host vm, DTLab 0.1.0, AMD EPYC, 2 cores"), text.left(400).constData());

    const e2e::Outcome calibrated = e2e::cli({"calibrate", path, "--json"});
    QVERIFY2(calibrated.exitCode == 0, qPrintable(calibrated.err));
    std::ifstream expected(kCalibration);
    nlohmann::json before = nlohmann::json::parse(expected);
    nlohmann::json now = e2e::lastJson(calibrated.out).at("calibration");
    // Everything from the project is as it was; when backward hands its blocks over is timed
    // on this machine at each calibration, so only their number is the project's.
    QCOMPARE(now.at("hand_off_shares").size(), before.at("hand_off_shares").size());
    now.erase("hand_off_shares");
    before.erase("hand_off_shares");
    const std::string differs = difference(now, before, "calibration");
    QVERIFY2(differs.empty(), ("differs at " + differs).c_str());
  }

  // A failed run whose summary said only in its error that a node was lost, or that the loss
  // diverged, gets the stop reason.
  void failedRunsGetTheirStopReason() {
    const QString path = copy("stops.dtlab");
    {
      sqlite::Db raw(path.toStdString(), SQLITE_OPEN_READWRITE);
      for (const auto& [run, error] :
           {std::pair{1, std::string("node1 (127.0.0.1:44499) lost: its stream broke")},
            std::pair{2, std::string("node0: loss diverged to nan at step 7")}}) {
        sqlite::Statement read(raw, "SELECT summary FROM run_summaries WHERE run_id = ?");
        read.bind(1, run);
        QVERIFY(read.step());
        nlohmann::json s = nlohmann::json::parse(read.columnText(0));
        read.reset();
        s["status"] = "failed";
        s["stop_reason"] = "error";
        s["error"] = error;
        sqlite::Statement write(raw, "UPDATE run_summaries SET summary = ? WHERE run_id = ?");
        write.bind(1, s.dump()).bind(2, run).run();
      }
    }
    auto store = ProjectStore::open(path.toStdString(), false);
    QCOMPARE(store->runSummary(1)->at("stop_reason"), nlohmann::json("node_lost"));
    QCOMPARE(store->runSummary(2)->at("stop_reason"), nlohmann::json("diverged"));
  }
};

QTEST_GUILESS_MAIN(TestRecordedProjects)
#include "test_recorded_projects.moc"
