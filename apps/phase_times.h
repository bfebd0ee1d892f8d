// How long each phase of a command took: the time since the previous mark, kept for `--json`'s
// "seconds" and, with PTQ_TIMING=1 (env_options.h), printed to stderr as it ends, one line each
// ("ptq: time: load model 71.2 ms"). For finding fixed costs (model load, device start-up,
// cache writes) on another machine.
//
//   PhaseTimes times;
//   ...load...      times.mark("load model");
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "env_options.h"

namespace ptq::apps {

class PhaseTimes {
 public:
  PhaseTimes() : on_(phase_timing_from_env()), last_(Clock::now()) {}

  // Records (and with PTQ_TIMING prints) the time since the previous mark under `phase`.
  void mark(std::string_view phase) {
    const Clock::time_point now = Clock::now();  // one reading ends this phase and starts the next
    const double seconds = std::chrono::duration<double>(now - last_).count();
    phases_.emplace_back(std::string(phase), seconds);
    if (on_) fmt::print(stderr, "ptq: time: {} {:.1f} ms\n", phase, seconds * 1e3);
    last_ = now;
  }

  // Every phase marked so far and its seconds, in order.
  const std::vector<std::pair<std::string, double>>& phases() const { return phases_; }

 private:
  using Clock = std::chrono::steady_clock;
  bool on_;
  Clock::time_point last_;
  std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace ptq::apps
