#include "ptq/runtime/task_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ptq::runtime {

namespace {

// How long an idle helper watches for the next loop before it sleeps (set_idle_spin). At
// batch 1 the loops of successive ops are a few microseconds apart, while waking a sleeping
// helper takes tens of microseconds (on a virtual machine the idle CPU has halted and the host
// must reschedule it) - so a helper that slept between ops joined each op late or not at all.
// Bounded, so an idle pool stops using the CPU within that time.
std::atomic<int64_t> idle_spin_us{100};

std::chrono::microseconds spin_time() {
  return std::chrono::microseconds(idle_spin_us.load(std::memory_order_relaxed));
}

inline void pause_briefly() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

thread_local bool in_task = false;  // this thread is running a task: nested loops run inline

// Forks so far, counted in the child. A forked child has none of its parent's helper threads:
// a pool made before the fork must neither use them nor stop them (its mutex may have been
// held by one of them, and its condition variables count them as waiters), so it is set aside
// whole, never destroyed, and the thread gets a new pool.
std::atomic<int> forks{0};
void count_fork() { forks.fetch_add(1, std::memory_order_relaxed); }

class TaskPool {
 public:
  TaskPool() {
    static std::once_flag registered;
    std::call_once(registered, [] { pthread_atfork(nullptr, nullptr, &count_fork); });
    forks_ = forks.load(std::memory_order_relaxed);
  }

  ~TaskPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : helpers_) t.join();
  }

  // False in a process forked after the pool was made.
  bool usable() const { return forks_ == forks.load(std::memory_order_relaxed); }

  // `jobs`: every thread claims from the front and a task may post loops of its own.
  void run(int threads, int64_t n, void (*task)(void*, int64_t), void* context, bool jobs) {
    const int wanted = static_cast<int>(std::min<int64_t>(threads - 1, n - 1));
    while (static_cast<int>(helpers_.size()) < wanted) helpers_.emplace_back([this] { serve(); });
    {
      // Late helpers of the last loop may still be inside it (about to find it exhausted).
      std::unique_lock<std::mutex> lock(mutex_);
      left_.wait(lock, [&] { return inside_ == 0; });
      task_ = task;
      context_ = context;
      jobs_ = jobs;
      range_.store(uint64_t(n) << 32, std::memory_order_relaxed);  // front 0, back n
      total_ = n;
      done_.store(0, std::memory_order_relaxed);
      seats_ = wanted;
      posted_.store(++epoch_, std::memory_order_release);
    }
    wake_.notify_all();
    work(true, jobs);
    // Every task is claimed; wait for those a helper is still running: briefly for a loop's
    // tasks, asleep for jobs (which may run for minutes).
    if (jobs) {
      std::unique_lock<std::mutex> lock(mutex_);
      finished_.wait(lock, [&] { return done_.load(std::memory_order_acquire) >= n; });
    }
    while (done_.load(std::memory_order_acquire) < n) std::this_thread::yield();
  }

 private:
  // Claims and runs tasks until none is left: the caller from the front, helpers from the
  // back, so each thread's tasks are neighbours (contiguous ranges, as a static split gives)
  // while whoever is free takes the next.
  void work(bool front, bool jobs) {
    in_task = !jobs;
    for (int64_t i = claim(front); i >= 0; i = claim(front)) {
      task_(context_, i);
      if (done_.fetch_add(1, std::memory_order_release) + 1 == total_ && jobs) {
        std::lock_guard<std::mutex> lock(mutex_);
        finished_.notify_all();
      }
    }
    in_task = false;
  }

  // The next task from the front or the back of [front, back), or -1 when none is left.
  int64_t claim(bool front) {
    uint64_t r = range_.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t lo = r & 0xffffffffu, hi = r >> 32;
      if (lo >= hi) return -1;
      const uint64_t next = front ? r + 1 : r - (uint64_t{1} << 32);
      if (range_.compare_exchange_weak(r, next, std::memory_order_relaxed)) {
        return static_cast<int64_t>(front ? lo : hi - 1);
      }
    }
  }

  void serve() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (!stop_ && epoch_ == seen) {
        lock.unlock();
        watch(seen);
        lock.lock();
      }
      wake_.wait(lock, [&] { return stop_ || epoch_ != seen; });
      if (stop_) return;
      seen = epoch_;
      if (seats_ == 0) continue;
      --seats_;
      ++inside_;
      const bool jobs = jobs_;
      lock.unlock();
      work(jobs, jobs);
      lock.lock();
      if (--inside_ == 0) left_.notify_all();
    }
  }

  // Returns when a loop after `seen` is posted or spin_time() has passed.
  void watch(uint64_t seen) const {
    const auto limit = spin_time();
    if (limit.count() == 0) return;
    const auto end = std::chrono::steady_clock::now() + limit;
    while (posted_.load(std::memory_order_acquire) == seen) {
      for (int k = 0; k < 32; ++k) pause_briefly();
      if (std::chrono::steady_clock::now() >= end) return;
    }
  }

  int forks_ = 0;  // forks counted when the pool was made
  std::mutex mutex_;
  std::condition_variable wake_, left_, finished_;
  std::vector<std::thread> helpers_;
  bool stop_ = false;
  uint64_t epoch_ = 0;
  std::atomic<uint64_t> posted_{0};  // epoch_, readable without the mutex (watch())
  int seats_ = 0;    // helpers the current loop may still take
  int inside_ = 0;   // helpers inside a loop
  // The current loop, set under mutex_ while no helper is inside.
  void (*task_)(void*, int64_t) = nullptr;
  void* context_ = nullptr;
  bool jobs_ = false;
  int64_t total_ = 0;  // tasks in the loop
  std::atomic<uint64_t> range_{0};  // the unclaimed tasks [front, back): back << 32 | front
  std::atomic<int64_t> done_{0};
};

// Pools made before a fork, in the child: kept, never destroyed (see `forks`).
std::vector<TaskPool*>& set_aside() {
  static auto* pools = new std::vector<TaskPool*>;
  return *pools;
}

struct PoolDeleter {
  void operator()(TaskPool* p) const {
    if (p->usable()) {
      delete p;
    } else {
      set_aside().push_back(p);
    }
  }
};

// Runs one loop on the calling thread's pool for its depth: a job (run_jobs) running on the
// calling thread posts its own loops to a second pool, as its first is busy with the jobs.
void run_loop(int threads, int64_t n, void (*task)(void*, int64_t), void* context, bool jobs) {
  if (n <= 0) return;
  if (threads <= 1 || n == 1 || in_task || n > INT32_MAX) {
    for (int64_t i = 0; i < n; ++i) task(context, i);
    return;
  }
  thread_local std::vector<std::unique_ptr<TaskPool, PoolDeleter>> pools;
  thread_local size_t depth = 0;
  if (pools.size() <= depth) pools.resize(depth + 1);
  std::unique_ptr<TaskPool, PoolDeleter>& slot = pools[depth];
  if (!slot || !slot->usable()) slot.reset(new TaskPool);
  TaskPool* pool = slot.get();  // a nested loop may grow `pools`
  ++depth;
  pool->run(threads, n, task, context, jobs);
  --depth;
}

}  // namespace

void run_tasks(int threads, int64_t n, void (*task)(void*, int64_t), void* context) {
  run_loop(threads, n, task, context, false);
}

void run_jobs(int threads, int64_t n, void (*job)(void*, int64_t), void* context) {
  run_loop(threads, n, job, context, true);
}

void set_idle_spin(std::chrono::microseconds spin) {
  idle_spin_us.store(std::max<int64_t>(0, spin.count()), std::memory_order_relaxed);
}

}  // namespace ptq::runtime
