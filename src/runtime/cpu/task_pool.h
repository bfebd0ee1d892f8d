// The helper threads of the CPU kernels' parallel loops (kernel_util.h's parallel_for and
// parallel_tasks). A loop's tasks are claimed one at a time from a shared range, by the calling
// thread from its front and by whichever helpers are awake from its back; the caller waits only
// for tasks a helper has claimed, never for a helper to wake up. A helper that wakes after every
// task is claimed goes back to sleep. An idle helper watches for the next loop for a short,
// bounded time (PTQ_SPIN_US, 100 microseconds unless set), then sleeps: the loops of one run
// follow each other closely, and a helper woken from sleep for each would join late, while an
// unbounded spin takes the time slice another thread of a shared machine needs.
//
// Why not OpenMP's parallel regions: a region ends at a barrier that every thread of the team
// must reach, so with idle threads asleep (OMP_WAIT_POLICY=passive) each region waited for a
// futex wake-up. MobileNetV2 at batch 1 runs ~100 short regions a pass.
//
// Which thread runs a task never changes what the task computes, so results stay identical
// for any thread count.
#pragma once

#include <cstdint>

namespace ptq::runtime::cpu {

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

}  // namespace ptq::runtime::cpu
