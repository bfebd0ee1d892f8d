// PTQ_TIMING=1 (env_options.h): a command prints how long each of its phases took, to stderr,
// one line each ("ptq: time: load model 71.2 ms"): the time since the previous mark.
// For finding fixed costs (model load, device start-up, cache writes) on another machine.
//
//   PhaseTimes times;
//   ...load...      times.mark("load model");
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <string_view>

#include "env_options.h"

namespace ptq::apps {

class PhaseTimes {
 public:
  PhaseTimes() : on_(phase_timing_from_env()), last_(Clock::now()) {}

  // Prints the time since the previous mark (or construction) under `phase`.
  void mark(std::string_view phase) {
    if (!on_) return;
    const Clock::time_point now = Clock::now();  // one reading ends this phase and starts the next
    fmt::print(stderr, "ptq: time: {} {:.1f} ms\n", phase,
               std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool on_;
  Clock::time_point last_;
};

}  // namespace ptq::apps
