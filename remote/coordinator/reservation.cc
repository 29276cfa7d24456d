#include "remote/coordinator/reservation.h"

#include <algorithm>
#include <cstdio>
#include <future>
#include <random>

#include "core/common/check.h"
#include "remote/common/protocol.h"

namespace dtlab::remote {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kPoll = std::chrono::milliseconds(250);
constexpr auto kCallDeadline = std::chrono::milliseconds(3000);
// Short: a run that lost a node must not end seconds late for want of its goodbye (the node
// drops the reservation with its lease anyway).
constexpr auto kReleaseDeadline = std::chrono::milliseconds(250);
constexpr auto kRenewDeadline = std::chrono::milliseconds(500);

// Earlier waiters first on every node: this coordinator's clock when the run began to wait,
// random bits below it for runs that began in the same millisecond.
uint64_t newTicket() {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  std::random_device random;
  return (static_cast<uint64_t>(ms) << 12) | (random() & 0xfffu);
}

// "bob@lab's run 'exp/sync'", the job's id only when nothing else names it.
std::string whose(const std::string& owner, const std::string& run, const std::string& jobId) {
  return describeRun(owner, run, owner.empty() && run.empty() ? jobId : std::string());
}

// What keeps a waiting reservation from the node: "busy with bob@lab's run 'exp/sync'",
// "reserved for bob@lab's run 'exp/sync'".
std::string whatHolds(const ReserveAnswer& a) {
  if (!a.jobId.empty()) return "busy with " + whose(a.jobOwner, a.jobRun, a.jobId);
  if (!a.holderOwner.empty() || !a.holderRun.empty())
    return "reserved for " + whose(a.holderOwner, a.holderRun, {}) +
           (a.holderCommitted ? "" : ", which waits for its other nodes");
  return "taken";
}

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", s);
  return text;
}

}  // namespace

GangReservation::GangReservation(const NodeLinks& links, std::vector<std::size_t> nodes,
                                 std::string run)
    : links_(links), nodes_(std::move(nodes)) {
  claim_.id = randomId("r");
  claim_.owner = ownerOfThisProcess();
  claim_.run = std::move(run);
  claim_.lease = kReservationLease;
}

GangReservation::~GangReservation() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (keeper_.joinable()) keeper_.join();
  // A node that does not answer drops the reservation when its lease runs out.
  callEveryNode(ReserveAction::kRelease, kReleaseDeadline);
}

void GangReservation::callEveryNode(ReserveAction action,
                                    std::chrono::milliseconds deadline) const {
  // All at once: a node that does not answer (stopped, cut off) holds up none of the others.
  std::vector<std::future<void>> calls;
  for (std::size_t node : nodes_)
    calls.push_back(std::async(std::launch::async, [this, node, action, deadline] {
      try {
        links_.reserve(node, claim_, action, deadline);
      } catch (const std::exception&) {
        // A lost node: the run notices through its stream.
      }
    }));
  for (std::future<void>& call : calls) call.wait();
}

std::vector<ReserveAnswer> GangReservation::ask(ReserveAction action) const {
  std::vector<ReserveAnswer> answers;
  for (std::size_t node : nodes_)
    answers.push_back(links_.reserve(node, claim_, action, kCallDeadline));
  return answers;
}

bool GangReservation::acquire(const Waiting& waiting) {
  const Clock::time_point start = Clock::now();
  claim_.ticket = newTicket();
  std::string said;  // what onWaiting was told last
  for (;;) {
    if (waiting.cancel != nullptr && waiting.cancel->load()) return false;
    std::vector<ReserveAnswer> answers = ask(ReserveAction::kWait);
    const auto notHeld = std::find_if(answers.begin(), answers.end(), [](const ReserveAnswer& a) {
      return a.state == ReserveAnswer::State::kWaiting;
    });
    if (notHeld == answers.end()) {
      answers = ask(ReserveAction::kCommit);
      const bool all = std::all_of(answers.begin(), answers.end(), [](const ReserveAnswer& a) {
        return a.state == ReserveAnswer::State::kCommitted;
      });
      if (all) {
        waitedS_ = std::chrono::duration<double>(Clock::now() - start).count();
        if (!said.empty() && waiting.onWaiting) waiting.onWaiting("");
        keeper_ = std::thread([this] { keep(); });
        return true;
      }
      // A run with an earlier ticket took a node before this one committed it: the nodes
      // committed go back to held (the earlier run may need them), and the wait goes on.
      for (std::size_t i = 0; i < answers.size(); ++i)
        if (answers[i].state == ReserveAnswer::State::kCommitted)
          links_.reserve(nodes_[i], claim_, ReserveAction::kUncommit, kCallDeadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    const std::size_t node = nodes_[static_cast<std::size_t>(notHeld - answers.begin())];
    const std::string holds = whatHolds(*notHeld);
    if (waiting.limit.count() <= 0) {
      std::string running;
      if (!notHeld->jobId.empty())
        running =
            ", running for " + std::to_string(static_cast<long long>(notHeld->jobSeconds)) + " s";
      throw Error(links_.label(node) + " is " + holds + running +
                  ", and this run does not wait for busy nodes");
    }
    const std::string holder = notHeld->jobId.empty()
                                   ? whose(notHeld->holderOwner, notHeld->holderRun, {})
                                   : whose(notHeld->jobOwner, notHeld->jobRun, notHeld->jobId);
    if (std::find(behind_.begin(), behind_.end(), holder) == behind_.end())
      behind_.push_back(holder);
    const std::string place =
        "position " + std::to_string(notHeld->position) + " of " + std::to_string(notHeld->waiting);
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (Clock::now() - start >= waiting.limit)
      throw Error("gave up after waiting " + seconds(waited) + " for " + links_.label(node) + ", " +
                  holds + " (" + place + ")");
    const std::string text = "waiting for " + links_.name(node) + " (" + holds + ", " + place + ")";
    if (text != said && waiting.onWaiting) waiting.onWaiting(text);
    said = text;
    const Clock::time_point next = Clock::now() + kPoll;
    while (Clock::now() < next) {
      if (waiting.cancel != nullptr && waiting.cancel->load()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }
}

void GangReservation::keep() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, claim_.lease / 4, [this] { return stopping_; })) {
    lock.unlock();
    callEveryNode(ReserveAction::kWait, kRenewDeadline);
    lock.lock();
  }
}

std::string GangReservation::account() const {
  std::string names;
  for (std::size_t node : nodes_) names += (names.empty() ? "" : ", ") + links_.name(node);
  if (behind_.empty()) return names + " at once";
  std::string who;
  for (const std::string& b : behind_) who += (who.empty() ? "" : ", ") + b;
  return names + " after waiting " + seconds(waitedS_) + " behind " + who;
}

}  // namespace dtlab::remote
