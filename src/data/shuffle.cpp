// The delivery order: a Fisher-Yates shuffle whose uniform draw is spelled out, because
// std::shuffle and std::uniform_int_distribution differ between standard libraries while
// std::mt19937_64's output is fixed by the standard.
#include <numeric>
#include <random>

#include "ptq/data.h"

namespace ptq::data {

namespace {

// Uniform in [0, bound) by rejection: accept r < 2^64 - (2^64 mod bound), take r mod bound.
uint64_t uniform_below(std::mt19937_64& gen, uint64_t bound) {
  const uint64_t rem = (uint64_t(0) - bound) % bound;  // 2^64 mod bound
  while (true) {
    const uint64_t r = gen();
    if (rem == 0 || r < uint64_t(0) - rem) return r % bound;
  }
}

}  // namespace

std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(std::max<int64_t>(n, 0)));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::mt19937_64 gen(seed);
  for (int64_t i = n - 1; i >= 1; --i) {
    const auto j = static_cast<int64_t>(uniform_below(gen, static_cast<uint64_t>(i) + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

}  // namespace ptq::data
