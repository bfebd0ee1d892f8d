// run_tasks() (include/ptq/runtime/task_pool.h), under the CPU kernels' parallel loops: every task
// runs exactly once, on up to the threads asked for, from loops in quick succession (helpers
// that wake late must find the loop over), from loops nested in a task, and from several
// calling threads at once, each with its own helpers, and in a forked child; parallel_for's
// ranges on it.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "kernel_util.h"
#include "ptq/runtime/task_pool.h"

namespace ptq::runtime::cpu {
namespace {

// Runs n tasks on `threads`; returns how often each ran and records the threads that ran them.
std::vector<int> run_counted(int threads, int64_t n, std::set<std::thread::id>* who = nullptr) {
  std::vector<std::atomic<int>> count(static_cast<size_t>(n));
  std::mutex m;
  auto task = [&](int64_t i) {
    count[static_cast<size_t>(i)].fetch_add(1);
    if (who != nullptr) {
      std::lock_guard<std::mutex> lock(m);
      who->insert(std::this_thread::get_id());
    }
  };
  run_tasks(threads, n, task);
  std::vector<int> out;
  for (auto& c : count) out.push_back(c.load());
  return out;
}

TEST(TaskPool, EveryTaskRunsOnce) {
  for (int threads : {1, 2, 3, 4, 8}) {
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1000}) {
      const std::vector<int> count = run_counted(threads, n);
      EXPECT_EQ(count, std::vector<int>(static_cast<size_t>(n), 1)) << threads << " threads, " << n;
    }
  }
}

TEST(TaskPool, UsesAtMostTheThreadsAsked) {
  for (int threads : {1, 2, 3}) {
    std::set<std::thread::id> who;
    // Tasks long enough for helpers to wake and take some.
    std::vector<std::atomic<int>> count(64);
    std::mutex m;
    auto task = [&](int64_t i) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      count[static_cast<size_t>(i)].fetch_add(1);
      std::lock_guard<std::mutex> lock(m);
      who.insert(std::this_thread::get_id());
    };
    run_tasks(threads, 64, task);
    EXPECT_LE(who.size(), static_cast<size_t>(threads));
    EXPECT_TRUE(who.contains(std::this_thread::get_id()));  // the caller works too
    for (auto& c : count) EXPECT_EQ(c.load(), 1);
  }
}

TEST(TaskPool, ManyShortLoopsInARow) {
  // Helpers mostly wake after the caller has run every task: they must find the loop over and
  // never run a task of the next loop with the last one's function.
  for (int rep = 0; rep < 2000; ++rep) {
    const int64_t n = 1 + rep % 5;
    std::vector<int64_t> seen(static_cast<size_t>(n), -1);
    auto task = [&](int64_t i) { seen[static_cast<size_t>(i)] = rep; };
    run_tasks(2 + rep % 3, n, task);
    for (int64_t v : seen) ASSERT_EQ(v, rep) << "loop " << rep;
  }
}

TEST(TaskPool, NestedLoopsRunInline) {
  std::atomic<int> inner{0};
  auto outer = [&](int64_t) {
    const std::thread::id me = std::this_thread::get_id();
    std::atomic<int> elsewhere{0};
    auto task = [&](int64_t) {
      inner.fetch_add(1);
      if (std::this_thread::get_id() != me) elsewhere.fetch_add(1);
    };
    run_tasks(4, 8, task);
    EXPECT_EQ(elsewhere.load(), 0);
  };
  run_tasks(2, 6, outer);
  EXPECT_EQ(inner.load(), 48);
}

TEST(TaskPool, SeveralCallersAtOnce) {
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&, c] {
      for (int rep = 0; rep < 300; ++rep) {
        const std::vector<int> count = run_counted(2 + c, 16 + rep % 7);
        for (int v : count) wrong += v != 1;
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// Runs two tasks on two threads that each wait (up to 10 s) for the other to start: true once
// this thread's pool has a helper that is running tasks, i.e. is past its own start-up.
bool helper_is_running() {
  std::atomic<int> arrived{0};
  std::atomic<int> met{0};
  auto task = [&](int64_t) {
    arrived.fetch_add(1);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (arrived.load() < 2 && std::chrono::steady_clock::now() < end) std::this_thread::yield();
    if (arrived.load() == 2) met.fetch_add(1);
  };
  run_tasks(2, 2, task);
  return met.load() == 2;
}

// A process forked after this thread's pool started its helpers has none of them: a loop in
// the child must run (on a new pool) and the child must exit normally, not wait on the
// parent's helpers. The fork waits until the helper runs tasks: a thread forked while another
// is still starting may hold the sanitizers' allocator lock forever in the child (GCC 12's
// AddressSanitizer takes no lock around fork(); its thread start-up allocates), which would
// hang the child's own helpers whatever the pool does.
TEST(TaskPool, ForkedChildRunsLoopsAndExits) {
  EXPECT_EQ(run_counted(2, 64), std::vector<int>(64, 1));
  ASSERT_TRUE(helper_is_running());
  const pid_t pid = ::fork();
  if (pid == 0) {
    const bool ok = run_counted(2, 64) == std::vector<int>(64, 1) &&
                    run_counted(3, 5) == std::vector<int>(5, 1);
    std::exit(ok ? 0 : 1);  // runs this thread's pool destructors
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  for (int waited = 0; waited < 200 && ::waitpid(pid, &status, WNOHANG) == 0; ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (::waitpid(pid, &status, WNOHANG) == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL() << "the forked child did not finish in 10 s";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Jobs (run_jobs): each runs once; every thread takes them in index order (a sweep deals its
// costliest first); a loop inside a job gets helpers of its own, on the calling thread (whose
// first pool is busy with the jobs) as on a helper.
TEST(TaskPool, JobsRunInOrderAndTheirLoopsInParallel) {
  std::mutex m;
  std::map<std::thread::id, std::vector<int64_t>> taken;
  std::atomic<int> parallel_loops{0};
  auto job = [&](int64_t i) {
    {
      std::lock_guard<std::mutex> lock(m);
      taken[std::this_thread::get_id()].push_back(i);
    }
    if (helper_is_running()) parallel_loops.fetch_add(1);
  };
  run_jobs(2, 6, job);
  int64_t jobs = 0;
  for (const auto& [who, order] : taken) {
    EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
    jobs += static_cast<int64_t>(order.size());
  }
  EXPECT_EQ(jobs, 6);
  EXPECT_EQ(parallel_loops.load(), 6);
}

// With no idle spin, a helper sleeps at once between loops and is woken for the next.
TEST(TaskPool, LoopsRunWithoutIdleSpin) {
  set_idle_spin(std::chrono::microseconds(0));
  for (int rep = 0; rep < 200; ++rep) {
    EXPECT_EQ(run_counted(2 + rep % 2, 9), std::vector<int>(9, 1));
  }
  set_idle_spin(std::chrono::microseconds(100));
}

// parallel_for on the pool: ranges of at least min_per_thread elements, up to four a thread,
// claimed from both ends; every element in exactly one range.
TEST(TaskPool, ParallelForCoversEveryElementOnce) {
  for (int threads : {1, 2, 3, 5}) {
    for (int64_t n : {1, 2, 7, 40, 1001}) {
      for (int64_t min_per : {1, 3, 64}) {
        std::vector<std::atomic<int>> count(static_cast<size_t>(n));
        std::atomic<int> short_ranges{0};
        parallel_for(threads, n, [&](int64_t begin, int64_t end) {
          if (end - begin < std::min(min_per, n)) short_ranges.fetch_add(1);
          for (int64_t i = begin; i < end; ++i) count[static_cast<size_t>(i)].fetch_add(1);
        }, min_per);
        for (auto& c : count) ASSERT_EQ(c.load(), 1) << threads << " " << n << " " << min_per;
        EXPECT_EQ(short_ranges.load(), 0) << threads << " " << n << " " << min_per;
      }
    }
  }
}

}  // namespace
}  // namespace ptq::runtime::cpu
