#include "core/comm/shm_allreduce.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "core/comm/allreduce_tuning.h"
#include "core/comm/communicator.h"
#include "core/comm/rank_order_sum.h"
#include "core/common/check.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace dtlab::core {
namespace {

constexpr uint64_t kMagic = 0x6474'6c61'6273'686dULL;  // "dtlabshm"
// The segment's slots: two sets (by round parity) of one slot per rank, each a round's worth
// of the caller's buffer. 1 MiB slots for up to 8 ranks, smaller beyond, so a group's segment
// stays at or below 16 MiB (every byte of it is reserved in /dev/shm up front).
constexpr int64_t kMaxSlotFloats = int64_t{256} * 1024;
constexpr int64_t kMinSlotFloats = int64_t{16} * 1024;
constexpr int64_t kSegmentBudgetBytes = int64_t{16} << 20;
// Up to this many bytes per round every rank sums the whole round itself (one barrier, every
// slot read by everyone); above it each rank sums its part into the segment and everyone copies
// the sums out (two barriers, a quarter to a third less memory traffic with 3-4 ranks). Two
// ranks always take the first: they would move the same bytes either way.
constexpr int64_t kDirectMaxBytes = int64_t{256} * 1024;
// Busy-wait before sleeping: short, because a spinning waiter takes a core from the peer it
// waits for (or from its own rank's backward pass) when ranks outnumber cores.
constexpr int kSpinsWhenCoresSuffice = 2000;
constexpr int kSpinsWhenOversubscribed = 50;
// How often a sleeping waiter looks at the failure word, the clock and its peers' processes.
constexpr auto kSleepSlice = std::chrono::milliseconds(10);
constexpr auto kPeerCheckInterval = std::chrono::milliseconds(100);

enum class How : int32_t { kAborted = 1, kFailed = 2, kLeft = 3, kTimedOut = 4, kSawExit = 5 };
constexpr int32_t kHowCodes = 8;
const char* howText(int32_t how) {
  switch (static_cast<How>(how)) {
    case How::kAborted:
      return "was aborted";
    case How::kFailed:
      return "failed in another collective";
    case How::kLeft:
      return "left the group";
    case How::kTimedOut:
      return "timed out waiting for the others";
    case How::kSawExit:
      return "saw a peer's process exit";
  }
  return "failed";
}

void pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Shared (not process-private) futex operations: the waiters are in other processes.
void futexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(timeout.count() % 1'000'000'000);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}
void futexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

std::string readFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}
std::string linkTarget(const char* path) {
  char buffer[256];
  const ssize_t n = readlink(path, buffer, sizeof(buffer) - 1);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

std::string toString(const std::vector<char>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}
std::vector<char> toBytes(const std::string& text) {
  return std::vector<char>(text.begin(), text.end());
}

int64_t slotFloatsFor(int size) {
  const int64_t fit = kSegmentBudgetBytes / (2 * int64_t{size} * int64_t{sizeof(float)});
  return std::clamp(fit / 16 * 16, kMinSlotFloats, kMaxSlotFloats);
}

}  // namespace

// The segment's header; the PIDs (one per rank) and the slots follow it.
struct SharedMemoryAllReduce::Segment {
  uint64_t magic = kMagic;
  uint64_t cookie = 0;
  int32_t size = 0;
  int64_t slotFloats = 0;
  int64_t slotsOffset = 0;  // bytes from the segment's start
  alignas(64) std::atomic<uint32_t> arrived{0};
  alignas(64) std::atomic<uint32_t> generation{0};
  std::atomic<uint32_t> sleepers{0};
  // -1 while the group is healthy, else rank * kHowCodes + How of the first rank that gave up.
  alignas(64) std::atomic<int32_t> failure{-1};

  std::atomic<int32_t>* pids() {
    return reinterpret_cast<std::atomic<int32_t>*>(reinterpret_cast<char*>(this) + sizeof(Segment));
  }
  float* slot(int parity, int rank) {
    return reinterpret_cast<float*>(reinterpret_cast<char*>(this) + slotsOffset) +
           (static_cast<int64_t>(parity) * size + rank) * slotFloats;
  }
  static size_t bytesFor(int size, int64_t slotFloats, int64_t* slotsOffset) {
    const size_t header =
        sizeof(Segment) + sizeof(std::atomic<int32_t>) * static_cast<size_t>(size);
    *slotsOffset = static_cast<int64_t>((header + 63) / 64 * 64);
    return static_cast<size_t>(*slotsOffset) +
           2 * static_cast<size_t>(size) * static_cast<size_t>(slotFloats) * sizeof(float);
  }
  void markFailed(int rank, How how) {
    int32_t healthy = -1;
    failure.compare_exchange_strong(healthy, rank * kHowCodes + static_cast<int32_t>(how));
    futexWakeAll(&generation);
  }
};
static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  std::atomic<int32_t>::is_always_lock_free,
              "the segment's words must work across processes");

std::string SharedMemoryAllReduce::hostKey(bool networkNamespace) {
  const std::string boot = readFirstLine("/proc/sys/kernel/random/boot_id");
  const std::string net = networkNamespace ? linkTarget("/proc/self/ns/net") : "any";
  const std::string pid = linkTarget("/proc/self/ns/pid");
  // Unknown: a key no other process has, so this rank never shares a segment.
  if (boot.empty() || net.empty() || pid.empty())
    return detail::concat("unknown:", getpid(), ":", std::random_device{}());
  return detail::concat(boot, "/", net, "/", pid);
}

SharedMemoryAllReduce::SharedMemoryAllReduce(int rank, int size,
                                             std::chrono::milliseconds opTimeout)
    : rank_(rank), size_(size), opTimeout_(opTimeout), sources_(static_cast<size_t>(size)) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  spins_ = static_cast<unsigned>(size) <= cores ? kSpinsWhenCoresSuffice : kSpinsWhenOversubscribed;
}

SharedMemoryAllReduce::~SharedMemoryAllReduce() {
  if (segment_ == nullptr) return;
  // A peer still waiting on us (only after a failure elsewhere: destruction is collective)
  // must not wait for its timeout.
  segment_->markFailed(rank_, How::kLeft);
  munmap(segment_, mappedBytes_);
}

namespace {

// Waits for a key until the deadline; the store's own errors become a timeout naming the key.
std::string waitAndGet(gloo::rendezvous::Store& store, const std::string& key, int rank,
                       std::chrono::steady_clock::time_point deadline) {
  const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  try {
    store.wait({key}, std::max(remaining, std::chrono::milliseconds(1)));
    return toString(store.get(key));
  } catch (const std::exception& e) {
    throw CommError(CommFailure::kTimeout,
                    detail::concat("rank ", rank, " setting up the shared-memory all-reduce: no '",
                                   key, "' in the store in time (", e.what(), ")"));
  }
}

}  // namespace

std::unique_ptr<SharedMemoryAllReduce> SharedMemoryAllReduce::create(
    gloo::rendezvous::Store& store, int rank, int size,
    std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds opTimeout,
    std::string* whyNot, bool acrossNetworkNamespaces) {
  DTLAB_ENFORCE(size >= 2 && rank >= 0 && rank < size, "rank ", rank, " of ", size);
  std::unique_ptr<SharedMemoryAllReduce> self(new SharedMemoryAllReduce(rank, size, opTimeout));
  const std::string key = hostKey(!acrossNetworkNamespaces);
  store.set(detail::concat("shm/host/", rank), toBytes(key));

  // Rank 0 decides and creates; "-" starts a refusal, which every rank returns.
  std::string name;
  std::string published;
  int64_t slotsOffset = 0;
  const int64_t slotFloats = slotFloatsFor(size);
  const size_t bytes = Segment::bytesFor(size, slotFloats, &slotsOffset);
  uint64_t cookie = 0;
  if (rank == 0) {
    for (int r = 1; r < size && published.empty(); ++r) {
      if (waitAndGet(store, detail::concat("shm/host/", r), rank, deadline) != key)
        published = detail::concat("-rank ", r, " is on another host (or network namespace)");
    }
    if (published.empty()) {
      std::mt19937_64 random(std::random_device{}());
      cookie = random();
      name = detail::concat("/dtlab-", getpid(), "-", std::hex, random());
      const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      int error = fd < 0 ? errno : 0;
      // Reserved now, not on first touch: a full /dev/shm must refuse here, not kill a rank
      // with SIGBUS in the middle of a run.
      if (error == 0) error = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
      void* mapped =
          error == 0 ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
      if (error == 0 && mapped == MAP_FAILED) error = errno;
      if (fd >= 0) close(fd);
      if (error != 0) {
        if (fd >= 0) shm_unlink(name.c_str());
        published = detail::concat("-cannot create ", byteSizeText(static_cast<int64_t>(bytes)),
                                   " in /dev/shm: ", std::strerror(error));
      } else {
        auto* segment = new (mapped) Segment();
        segment->cookie = cookie;
        segment->size = size;
        segment->slotFloats = slotFloats;
        segment->slotsOffset = slotsOffset;
        for (int r = 0; r < size; ++r) new (&segment->pids()[r]) std::atomic<int32_t>(0);
        segment->pids()[0].store(getpid());
        self->segment_ = segment;
        self->mappedBytes_ = bytes;
        published = detail::concat(name, " ", cookie);
      }
    }
    store.set("shm/segment", toBytes(published));
  } else {
    published = waitAndGet(store, "shm/segment", rank, deadline);
    std::string opened = "1";
    if (published.rfind('-', 0) != 0) {
      const size_t space = published.find(' ');
      name = published.substr(0, space);
      cookie = std::stoull(published.substr(space + 1));
      const int fd = shm_open(name.c_str(), O_RDWR, 0600);
      struct stat info {};
      void* mapped = MAP_FAILED;
      int error = fd < 0 || fstat(fd, &info) != 0 ? errno : 0;
      const bool sized = error == 0 && static_cast<size_t>(info.st_size) == bytes;
      if (sized) mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (sized && mapped == MAP_FAILED) error = errno;
      if (fd >= 0) close(fd);
      auto* segment = static_cast<Segment*>(mapped);
      if (mapped == MAP_FAILED) {
        opened = error != 0 ? detail::concat("0rank ", rank, " cannot map ", name, ": ",
                                             std::strerror(error))
                            : detail::concat("0rank ", rank, " sees ", name, " with ", info.st_size,
                                             " bytes, not ", bytes);
      } else if (segment->magic != kMagic || segment->cookie != cookie || segment->size != size) {
        munmap(mapped, bytes);  // another /dev/shm, another segment of the same name
        opened = detail::concat("0rank ", rank, " sees another segment under ", name);
      } else {
        segment->pids()[rank].store(getpid());
        self->segment_ = segment;
        self->mappedBytes_ = bytes;
      }
    }
    store.set(detail::concat("shm/opened/", rank), toBytes(opened));
  }

  // Once every rank has mapped the segment (or failed to), its name goes: nothing is left in
  // /dev/shm whatever happens to the processes later.
  std::string ready;
  if (rank == 0) {
    if (published.rfind('-', 0) == 0) {
      ready = published;
    } else {
      ready = "1";
      for (int r = 1; r < size; ++r) {
        std::string opened;
        try {
          opened = waitAndGet(store, detail::concat("shm/opened/", r), rank, deadline);
        } catch (const CommError&) {
          shm_unlink(name.c_str());
          throw;
        }
        if (opened != "1" && ready == "1") ready = "-" + opened.substr(1);
      }
      shm_unlink(name.c_str());
    }
    store.set("shm/ready", toBytes(ready));
  } else {
    ready = waitAndGet(store, "shm/ready", rank, deadline);
  }
  if (ready == "1") return self;
  if (whyNot != nullptr) *whyNot = ready.substr(1);
  return nullptr;  // the destructor unmaps what this rank had mapped
}

void SharedMemoryAllReduce::abort(const std::string& /*reason*/) {
  aborted_.store(true);
  if (segment_ != nullptr) segment_->markFailed(rank_, How::kAborted);
}

void SharedMemoryAllReduce::markFailed() {
  if (segment_ != nullptr) segment_->markFailed(rank_, How::kFailed);
}

void SharedMemoryAllReduce::throwIfFailed() {
  if (aborted_.load()) throw CommError(CommFailure::kAborted, "aborted");
  const int32_t failure = segment_->failure.load();
  if (failure < 0) return;
  throw CommError(CommFailure::kPeerClosed,
                  detail::concat("rank ", failure / kHowCodes, " ", howText(failure % kHowCodes)));
}

void SharedMemoryAllReduce::waitForGeneration(uint32_t seen) {
  std::atomic<uint32_t>& generation = segment_->generation;
  for (int i = 0; i < spins_; ++i) {
    if (generation.load(std::memory_order_acquire) != seen) return;
    pause();
  }
  const auto start = std::chrono::steady_clock::now();
  auto peersChecked = start;
  while (generation.load(std::memory_order_acquire) == seen) {
    throwIfFailed();
    const auto now = std::chrono::steady_clock::now();
    if (now - start > opTimeout_) {
      segment_->markFailed(rank_, How::kTimedOut);
      throw CommError(CommFailure::kTimeout, detail::concat("timed out after ", opTimeout_.count(),
                                                            " ms waiting for the other ranks"));
    }
    if (now - peersChecked > kPeerCheckInterval) {
      peersChecked = now;
      for (int r = 0; r < size_; ++r) {
        const pid_t pid = segment_->pids()[r].load();
        if (r != rank_ && pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) {
          segment_->markFailed(rank_, How::kSawExit);
          throw CommError(CommFailure::kPeerClosed,
                          detail::concat("rank ", r, " (process ", pid, ") has exited"));
        }
      }
    }
    // Registered as a sleeper before the last look at the word: the rank that completes the
    // barrier bumps the generation and then reads the sleepers (both sequentially consistent),
    // so either it sees us and wakes us, or we see its bump and do not sleep.
    segment_->sleepers.fetch_add(1);
    if (generation.load() == seen) futexWait(&generation, seen, kSleepSlice);
    segment_->sleepers.fetch_sub(1);
  }
}

void SharedMemoryAllReduce::barrier() {
  // The generation cannot move before this rank arrives, so `seen` is the current one.
  const uint32_t seen = segment_->generation.load(std::memory_order_acquire);
  if (segment_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 ==
      static_cast<uint32_t>(size_)) {
    segment_->arrived.store(0, std::memory_order_relaxed);  // before anyone can arrive again
    segment_->generation.fetch_add(1);
    if (segment_->sleepers.load() > 0) futexWakeAll(&segment_->generation);
    return;
  }
  waitForGeneration(seen);
}

// Rounds of up to a slot per rank, alternating between the two sets of slots: a rank can be
// at most one round ahead of another (each round ends in a barrier everyone reaches after
// reading the round before), so it only ever writes the set nobody is reading.
void SharedMemoryAllReduce::allReduceSum(float* data, int64_t count) {
  throwIfFailed();
  const int64_t slotFloats = segment_->slotFloats;
  for (int64_t offset = 0; offset < count; offset += slotFloats) {
    const int64_t length = std::min(slotFloats, count - offset);
    const int parity = static_cast<int>(rounds_++ & 1);
    float* round = data + offset;
    std::memcpy(segment_->slot(parity, rank_), round, static_cast<size_t>(length) * sizeof(float));
    barrier();
    if (size_ == 2 || length * static_cast<int64_t>(sizeof(float)) <= kDirectMaxBytes) {
      for (int r = 0; r < size_; ++r) sources_[static_cast<size_t>(r)] = segment_->slot(parity, r);
      sumInRankOrder(round, sources_.data(), size_, length);
      continue;
    }
    // Each rank sums its part (a multiple of 16 floats, the last takes the rest) of every
    // rank's slot into rank 0's slot, where nobody else reads that part; then all copy out.
    const auto partBegin = [&](int r) {
      return r == size_ ? length : length * r / size_ / 16 * 16;
    };
    const int64_t begin = partBegin(rank_);
    const int64_t end = partBegin(rank_ + 1);
    for (int r = 0; r < size_; ++r)
      sources_[static_cast<size_t>(r)] = segment_->slot(parity, r) + begin;
    sumInRankOrder(segment_->slot(parity, 0) + begin, sources_.data(), size_, end - begin);
    barrier();
    std::memcpy(round, segment_->slot(parity, 0), static_cast<size_t>(length) * sizeof(float));
  }
}

}  // namespace dtlab::core
