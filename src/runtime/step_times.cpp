#include "step_times.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

namespace ptq::runtime {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

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
  fmt::print(stderr, "ptq: cpu: {:.3f} ms per run over {} runs, observers {:.3f} ms; by op type:\n",
             std::accumulate(ms_.begin(), ms_.end(), 0.0) / n, runs_, observers_ms_ / n);
  std::map<std::string, std::pair<double, int>> by_op;
  for (size_t i = 0; i < ms_.size(); ++i) {
    by_op[ops_[i]].first += ms_[i] / n;
    ++by_op[ops_[i]].second;
  }
  for (const auto& [op, v] : by_op)
    fmt::print(stderr, "  {:<20} {:>3} items {:9.3f} ms\n", op, v.second, v.first);
  std::vector<size_t> order(ms_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ms_[a] > ms_[b]; });
  for (size_t k = 0; k < std::min<size_t>(24, order.size()); ++k) {
    fmt::print(stderr, "  {:9.3f} ms  {}\n", ms_[order[k]] / n, labels_[order[k]]);
  }
}

}  // namespace ptq::runtime
