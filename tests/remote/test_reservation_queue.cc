// A node's queue of run reservations, driven with a clock of the test's own: who holds the
// node, who waits in which order, what a lease and a commit change.
#include <QtTest/QtTest>

#include "remote/node/reservation_queue.h"

using namespace dtlab::remote;
using State = ReservationQueue::State;
using Clock = ReservationQueue::Clock;

namespace {

ReservationQueue::Claim claim(const std::string& id, uint64_t ticket,
                              std::chrono::milliseconds lease = std::chrono::seconds(6)) {
  return {id, ticket, id + "@lab", "exp/" + id, lease};
}

std::vector<std::string> order(ReservationQueue& q, Clock::time_point now) {
  std::vector<std::string> out;
  for (const ReservationQueue::Entry& e : q.entries(now))
    out.push_back(e.claim.id + (e.holds ? "*" : ""));
  return out;
}

}  // namespace

class TestReservationQueue : public QObject {
  Q_OBJECT

 private slots:
  // A free node holds for the first reservation that asks; the others wait in ticket order,
  // whatever order they asked in, and each is told its place.
  void waitersQueueInTicketOrder() {
    ReservationQueue q;
    const Clock::time_point t = Clock::now();
    QVERIFY(q.wait(claim("a", 30), false, t).state == State::kHeld);
    QVERIFY(q.commit(claim("a", 30), false, t).state == State::kCommitted);
    const ReservationQueue::Standing c = q.wait(claim("c", 20), false, t);
    QVERIFY(c.state == State::kWaiting);
    QCOMPARE(c.position, 1);
    const ReservationQueue::Standing b = q.wait(claim("b", 10), false, t);
    QCOMPARE(b.position, 1);
    QCOMPARE(b.waiting, 2);
    QVERIFY(b.holder && b.holder->id == "a");
    QVERIFY(b.holderCommitted);
    QCOMPARE(q.wait(claim("c", 20), false, t).position, 2);
    QCOMPARE(order(q, t), (std::vector<std::string>{"a*", "b", "c"}));
    QVERIFY(q.taken(t));
    // The holder leaves: the first in line holds, the other moves up.
    q.release("a", false, t);
    QCOMPARE(order(q, t), (std::vector<std::string>{"b*", "c"}));
    QCOMPARE(q.wait(claim("c", 20), false, t).position, 1);
    q.release("unknown", false, t);  // not an error
    q.release("b", false, t);
    q.release("c", false, t);
    QVERIFY(!q.taken(t));
  }

  // While a job runs (a run whose reservation expired, or a tool's job without one), nobody
  // comes to hold the node; the first in line does once it ends.
  void aRunningJobKeepsEveryoneWaiting() {
    ReservationQueue q;
    const Clock::time_point t = Clock::now();
    QVERIFY(q.wait(claim("a", 1), true, t).state == State::kWaiting);
    QVERIFY(q.commit(claim("a", 1), true, t).state == State::kWaiting);
    QVERIFY(!q.committed("a", t));
    QVERIFY(q.wait(claim("a", 1), false, t).state == State::kHeld);
    QVERIFY(q.commit(claim("a", 1), false, t).state == State::kCommitted);
    QVERIFY(q.committed("a", t));
  }

  // A holder that has not committed gives the node to an earlier ticket that asks (it may be
  // holding this run's other node); one that committed keeps it until it leaves.
  void anEarlierTicketTakesAHeldNodeButNotACommittedOne() {
    ReservationQueue q;
    const Clock::time_point t = Clock::now();
    QVERIFY(q.wait(claim("late", 50), false, t).state == State::kHeld);
    QVERIFY(q.wait(claim("early", 10), false, t).state == State::kHeld);
    const ReservationQueue::Standing late = q.commit(claim("late", 50), false, t);
    QVERIFY(late.state == State::kWaiting);
    QCOMPARE(late.position, 1);
    QVERIFY(q.commit(claim("early", 10), false, t).state == State::kCommitted);
    QVERIFY(q.wait(claim("earliest", 1), false, t).state == State::kWaiting);
    QVERIFY(q.committed("early", t));
    // Back to held (its other nodes could not be committed): then it yields too.
    QVERIFY(q.uncommit(claim("early", 10), false, t).state == State::kWaiting);
    QCOMPARE(order(q, t), (std::vector<std::string>{"earliest*", "early", "late"}));
  }

  // A reservation nobody renews goes when its lease runs out, holding or waiting: a client
  // that died loses its place, and the node is free again.
  void anExpiredLeaseLosesItsPlace() {
    ReservationQueue q;
    const Clock::time_point t = Clock::now();
    const auto lease = std::chrono::seconds(2);
    q.wait(claim("holder", 1, lease), false, t);
    q.commit(claim("holder", 1, lease), false, t);
    q.wait(claim("dead", 2, lease), false, t);
    q.wait(claim("alive", 3, lease), false, t);
    // "alive" and the holder renew, "dead" does not.
    const Clock::time_point later = t + std::chrono::milliseconds(1500);
    q.wait(claim("alive", 3, lease), false, later);
    q.wait(claim("holder", 1, lease), false, later);
    const Clock::time_point expired = t + std::chrono::milliseconds(2500);
    QCOMPARE(order(q, expired), (std::vector<std::string>{"holder*", "alive"}));
    QCOMPARE(q.wait(claim("alive", 3, lease), false, expired).position, 1);
    // The holder's client dies too: the node goes to the next one at its next call.
    const Clock::time_point holderGone = later + std::chrono::milliseconds(2500);
    QVERIFY(!q.committed("holder", holderGone));
    q.wait(claim("alive", 3, lease), false, expired + std::chrono::seconds(1));
    QVERIFY(q.wait(claim("alive", 3, lease), false, holderGone).state == State::kHeld);
    // Renewed long ago by nobody: an empty node.
    QVERIFY(!q.taken(holderGone + std::chrono::seconds(10)));
  }

  // entries() lists how long each has been in line, from its first call, not its last renewal.
  void entriesSayHowLongEachHasWaited() {
    ReservationQueue q;
    const Clock::time_point t = Clock::now();
    q.wait(claim("a", 1), true, t);
    q.wait(claim("a", 1), true, t + std::chrono::seconds(3));
    const std::vector<ReservationQueue::Entry> e = q.entries(t + std::chrono::seconds(4));
    QCOMPARE(e.size(), std::size_t{1});
    QVERIFY(!e[0].holds);
    QCOMPARE(e[0].seconds, 4.0);
    QCOMPARE(e[0].claim.owner, std::string("a@lab"));
    QCOMPARE(e[0].claim.run, std::string("exp/a"));
  }
};

QTEST_GUILESS_MAIN(TestReservationQueue)
#include "test_reservation_queue.moc"
