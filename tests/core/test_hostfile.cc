// Hostfiles (core/spec/hostfile.h): the nodes of a cluster of running daemons, one a line, in
// the shape MPI and DeepSpeed users know; a bad line is refused with its line number.
#include <QtTest/QtTest>

#include <QtCore/QTemporaryDir>

#include <fstream>
#include <random>
#include <string>

#include "core/spec/hostfile.h"

using namespace dtlab::core;

namespace {

// The message of the SpecError parsing `text` throws ("" when it parses).
std::string refusal(const std::string& text) {
  try {
    parseHostfile(text, "hosts");
  } catch (const SpecError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class TestHostfile : public QObject {
  Q_OBJECT
 private slots:
  void linesGiveNodesInOrder() {
    const std::vector<HostfileNode> entries = parseHostfile(
        "# two fast nodes and a slow one\n"
        "\n"
        "node1:7001 slots=1\n"
        "  node2\tspeed=0.25   # the slow one\r\n"
        "[fe80::1]:7002 slots=4 bandwidth_mbps=1000 latency_ms=0.5\n"
        "10.0.0.7 latency_ms=2",  // no newline at the end
        "hosts");
    const std::vector<NodeConfig> nodes = nodesOf(entries);
    QCOMPARE(nodes.size(), std::size_t{4});
    QCOMPARE(entries[0].workerSlots, std::optional<int>(1));
    QCOMPARE(entries[1].workerSlots, std::optional<int>());  // left out: the daemon's own count
    QCOMPARE(entries[2].line, 5);
    QCOMPARE(nodes[0].address, std::string("node1:7001"));
    QCOMPARE(nodes[0].speed, 1.0);
    QCOMPARE(nodes[1].address, std::string("node2:7000"));  // kDefaultNodePort
    QCOMPARE(nodes[1].speed, 0.25);
    QCOMPARE(nodes[2].address, std::string("[fe80::1]:7002"));
    QCOMPARE(nodes[2].bandwidthMbps, 1000.0);
    QCOMPARE(nodes[2].latencyMs, 0.5);
    QCOMPARE(nodes[3].address, std::string("10.0.0.7:7000"));
    QCOMPARE(nodes[3].latencyMs, 2.0);
  }

  // What formatHostfile writes reads back as the same nodes.
  void writtenHostfilesReadBack() {
    std::vector<HostfileNode> nodes(3);
    nodes[0].node.address = "a:1";
    nodes[1].node.address = "[::1]:7070";
    nodes[1].workerSlots = 2;
    nodes[1].node.speed = 0.125;
    nodes[1].node.bandwidthMbps = 250.5;
    nodes[2].node.address = "c.example:7000";
    nodes[2].node.latencyMs = 3.25;
    const std::string text = formatHostfile(nodes);
    QVERIFY2(text.find("[::1]:7070 slots=2 speed=0.125 bandwidth_mbps=250.5") != std::string::npos,
             text.c_str());
    std::vector<HostfileNode> back = parseHostfile(text, "written");
    for (HostfileNode& entry : back) entry.line = 0;  // the written ones have none
    QVERIFY(back == nodes);
  }

  void badLinesAreRefusedWithTheirLineNumber_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("expected");
    QTest::newRow("unknown key") << "a:1\nb:2 cpus=4\n"
                                 << "hosts:2: unknown key 'cpus'";
    QTest::newRow("no value") << "# c\na:1 speed\n"
                              << "hosts:2: expected KEY=VALUE";
    QTest::newRow("no slots") << "a:1 slots=0\n"
                              << "hosts:1: slots must be in [1, 4096], got 0";
    QTest::newRow("half a slot") << "a:1 slots=1.5\n"
                                 << "hosts:1: slots must be a whole number, got 1.5";
    QTest::newRow("zero speed") << "a:1\n\nb:2 speed=0\n"
                                << "hosts:3: speed must be in (0, 1000]";
    QTest::newRow("speed not a number") << "a:1 speed=fast\n"
                                        << "hosts:1: speed must be a number, got 'fast'";
    QTest::newRow("negative bandwidth") << "a:1 bandwidth_mbps=-1\n"
                                        << "hosts:1: bandwidth_mbps must be >= 0";
    QTest::newRow("key twice") << "a:1 speed=1 speed=2\n"
                               << "hosts:1: speed is given twice";
    QTest::newRow("node twice") << "a:1\nb:2\na:1 speed=2\n"
                                << "hosts:3: a:1 is listed twice";
    QTest::newRow("same node, default port") << "a\na:7000\n"
                                             << "hosts:2: a:7000 is listed twice";
    QTest::newRow("port out of range") << "a:70000\n"
                                       << "hosts:1: the node's address";
    QTest::newRow("a scheme") << "http://a:1\n"
                              << "hosts:1: the node's address";
    QTest::newRow("no node") << "# nothing\n\n"
                             << "hosts: names no node";
  }
  void badLinesAreRefusedWithTheirLineNumber() {
    QFETCH(QString, text);
    QFETCH(QString, expected);
    const std::string message = refusal(text.toStdString());
    QVERIFY2(message.find(expected.toStdString()) == 0, message.c_str());
  }

  // Any text either parses or is refused with a SpecError naming a line: never another
  // exception, never a crash (random lines of the characters hostfiles are made of).
  void anyTextParsesOrIsRefused() {
    const std::string alphabet = "ab1:7[]=.# \t\n-eslotspd_mbwithnc09";
    std::mt19937 random(12);
    for (int round = 0; round < 3000; ++round) {
      std::string text;
      const int length = static_cast<int>(random() % 60);
      for (int i = 0; i < length; ++i) text += alphabet[random() % alphabet.size()];
      try {
        for (const HostfileNode& n : parseHostfile(text, "hosts"))
          QVERIFY(!n.node.address.empty() && n.line > 0);
      } catch (const SpecError& e) {
        QVERIFY2(std::string(e.what()).rfind("hosts", 0) == 0, e.what());
      }
    }
  }

  void filesAreReadOrRefusedByPath() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("hosts").toStdString();
    std::ofstream(path) << "n1:7000 speed=2\n";
    QCOMPARE(loadHostfile(path).at(0).node.speed, 2.0);
    const std::string missing = dir.filePath("none").toStdString();
    QVERIFY_THROWS_EXCEPTION(SpecError, loadHostfile(missing));
  }
};

QTEST_GUILESS_MAIN(TestHostfile)
#include "test_hostfile.moc"
