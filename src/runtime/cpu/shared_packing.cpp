#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include "shared_packing.h"

#include <map>
#include <mutex>
#include <tuple>

namespace ptq::runtime::cpu::PTQ_ISA_NS {

namespace {

using Key = std::tuple<const void*, std::array<int64_t, 4>>;

struct Cache {
  std::mutex mutex;
  std::map<Key, std::weak_ptr<const float[]>> entries;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: a kernel may be released after main returns
  return *c;
}

PackedWeights held(Cache& c, const Key& key) {
  auto it = c.entries.find(key);
  return it == c.entries.end() ? nullptr : it->second.lock();
}

}  // namespace

PackedWeights shared_packing(const void* data, const std::array<int64_t, 4>& params, size_t floats,
                             const std::function<void(float*)>& pack) {
  Cache& c = cache();
  const Key key{data, params};
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (PackedWeights p = held(c, key)) return p;
  }
  std::shared_ptr<float[]> packed(new float[floats]);  // `pack` writes every float
  pack(packed.get());
  std::lock_guard<std::mutex> lock(c.mutex);
  if (PackedWeights p = held(c, key)) return p;  // another thread packed it meanwhile
  std::erase_if(c.entries, [](const auto& e) { return e.second.expired(); });
  c.entries[key] = packed;
  return packed;
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
