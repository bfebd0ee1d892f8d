// The one way ptqkit runs work in parallel on the CPU: the CPU kernels' parallel loops
// (src/runtime/cpu/kernel_util.h's parallel_for and parallel_tasks), a sensitivity sweep's
// workers and the Vulkan backend's pipeline builds. A loop's tasks are claimed one at a time
// from a shared range, by the calling thread from its front and by whichever helpers are awake
// from its back; the caller waits only for tasks a helper has claimed, never for a helper to
// wake up. A helper that wakes after every task is claimed goes back to sleep. An idle helper
// watches for the next loop for a short, bounded time (set_idle_spin, 100 microseconds unless
// set), then sleeps: the loops of one run follow each other closely, and a helper woken from
// sleep for each would join late, while an unbounded spin takes the time slice another thread
// of a shared machine needs.
//
// Why not OpenMP's parallel regions: a region ends at a barrier that every thread of the team
// must reach, so with idle threads asleep (OMP_WAIT_POLICY=passive) each region waited for a
// futex wake-up. MobileNetV2 at batch 1 runs ~100 short regions a pass.
//
// Which thread runs a task never changes what the task computes, so results stay identical
// for any thread count.
#pragma once

#include <chrono>
#include <cstdint>

namespace ptq::runtime {

// Calls task(context, i) for every i in [0, n) on the calling thread and up to threads - 1
// helper threads of the calling thread's own pool (started when first needed, stopped when the
// calling thread ends; in a process forked since, a new pool). Called from inside a task, it
// runs the loop on that thread alone.
void run_tasks(int threads, int64_t n, void (*task)(void*, int64_t), void* context);

// The same for any callable fn(int64_t).
template <typename F>
void run_tasks(int threads, int64_t n, F& fn) {
  run_tasks(threads, n, [](void* c, int64_t i) { (*static_cast<F*>(c))(i); }, &fn);
}

// As run_tasks for long jobs that run parallel loops of their own (a sweep worker running its
// executor on its share of the threads): jobs are claimed in index order by every thread (a
// caller putting the costliest first has them started first), and a loop inside a job runs on
// its thread's own pool instead of inline.
void run_jobs(int threads, int64_t n, void (*job)(void*, int64_t), void* context);

template <typename F>
void run_jobs(int threads, int64_t n, F& fn) {
  run_jobs(threads, n, [](void* c, int64_t i) { (*static_cast<F*>(c))(i); }, &fn);
}

// How long an idle helper watches for the next loop before it sleeps (0: sleeps at once), for
// every pool of the process from its next wait on. The helpers are the process's, whichever
// backend or sweep posts the loops, so this is the one process-wide setting of the runtime:
// the command line sets it from $PTQ_SPIN_US (apps/env_options.cpp).
void set_idle_spin(std::chrono::microseconds spin);

}  // namespace ptq::runtime
