#include "step_times.h"

#include <fmt/format.h>

#include <numeric>

#include "step_report.h"

namespace ptq::runtime {

void StepTimes::add(size_t i, size_t count, const std::string& label, const std::string& op,
                    std::chrono::steady_clock::time_point t0,
                    std::chrono::steady_clock::time_point t1) {
  if (ms_.size() != count) {  // a new schedule (another input shape or observer set)
    report();
    ms_.assign(count, 0.0);
    labels_.assign(count, "");
    ops_.assign(count, "");
    runs_ = 0;
    observers_ms_ = 0.0;
  }
  ms_[i] += std::chrono::duration<double, std::milli>(t1 - t0).count();
  observers_ms_ += ms_since(t1);
  labels_[i] = label;
  ops_[i] = op;
}

void StepTimes::report() const {
  if (!on_ || runs_ == 0) return;
  const double n = static_cast<double>(runs_);
  const double total = std::accumulate(ms_.begin(), ms_.end(), 0.0) / n;
  print_step_report("cpu",
                    fmt::format("ptq: cpu: {:.3f} ms per run over {} runs, observers {:.3f} ms; "
                                "by op type:",
                                total, runs_, observers_ms_ / n),
                    runs_, ms_, std::vector<bool>(ms_.size(), true), labels_, ops_);
}

}  // namespace ptq::runtime
