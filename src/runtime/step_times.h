// ExecutorOptions::step_timing (`ptq`: PTQ_CPU_TIMING=1): the CPU executor adds up the wall time
// of each schedule item (a step or a fused chain, named by its head node) and of the observers
// it shows values to, and prints the totals per run, by op type and the costliest items to
// stderr when it is destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ptq::runtime {

class StepTimes {
 public:
  explicit StepTimes(bool on) : on_(on) {}
  ~StepTimes() { report(); }
  StepTimes(const StepTimes&) = delete;
  StepTimes& operator=(const StepTimes&) = delete;

  bool on() const { return on_; }
  // Item `i` of `count` (labelled `label`, op type `op`) ran from `t0` to `t1`; its observers
  // from `t1` to now.
  void add(size_t i, size_t count, const std::string& label, const std::string& op,
           std::chrono::steady_clock::time_point t0, std::chrono::steady_clock::time_point t1);
  void end_run() { ++runs_; }

 private:
  void report() const;

  bool on_;
  int64_t runs_ = 0;
  double observers_ms_ = 0.0;
  std::vector<double> ms_;
  std::vector<std::string> labels_, ops_;
};

}  // namespace ptq::runtime
