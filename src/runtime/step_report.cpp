#include "step_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

namespace ptq::runtime {

void print_step_report(std::string_view who, std::string_view headline, int64_t runs,
                       const std::vector<double>& ms, const std::vector<bool>& timed,
                       const std::vector<std::string>& labels,
                       const std::vector<std::string>& ops) {
  if (runs == 0) return;
  const double n = static_cast<double>(runs);
  std::vector<size_t> order;
  std::map<std::string, std::pair<double, int>> by_op;
  for (size_t s = 0; s < ms.size(); ++s) {
    if (!timed[s]) continue;
    order.push_back(s);
    by_op[ops[s]].first += ms[s] / n;
    ++by_op[ops[s]].second;
  }
  fmt::print(stderr, "{}\n", headline);
  for (const auto& [op, v] : by_op) {
    fmt::print(stderr, "  {:<20} {:>3} steps {:9.3f} ms\n", op, v.second, v.first);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ms[a] > ms[b]; });
  fmt::print(stderr, "ptq: {}: costliest steps:\n", who);
  for (size_t k = 0; k < std::min<size_t>(24, order.size()); ++k) {
    fmt::print(stderr, "  {:9.3f} ms  {}\n", ms[order[k]] / n, labels[order[k]]);
  }
}

}  // namespace ptq::runtime
