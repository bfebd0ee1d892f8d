#include "pool_allocator.h"

#include <cstdlib>
#include <new>

namespace ptq::runtime {

PoolAllocator::~PoolAllocator() {
  for (auto& b : blocks_) std::free(b->data);
}

ir::Tensor PoolAllocator::allocate(ir::DType dtype, const ir::Shape& shape) {
  const size_t bytes = static_cast<size_t>(ir::num_elements(shape)) * ir::dtype_size(dtype);
  const size_t want = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  Block* block = nullptr;
  auto it = free_.lower_bound(want);
  if (it != free_.end() && it->first <= 2 * want) {
    block = it->second;
    free_.erase(it);
  } else {
    auto fresh = std::make_unique<Block>();
    fresh->data = static_cast<std::byte*>(std::aligned_alloc(64, want));
    if (fresh->data == nullptr) throw std::bad_alloc();
    fresh->capacity = want;
    total_ += static_cast<int64_t>(want);
    block = fresh.get();
    blocks_.push_back(std::move(fresh));
  }
  block->used = bytes;
  block->refs = 0;
  in_use_ += static_cast<int64_t>(bytes);
  peak_ = std::max(peak_, in_use_);
  fresh_.push_back(block);
  return ir::Tensor::borrow(dtype, shape, static_cast<void*>(block->data));
}

std::vector<Block*> PoolAllocator::take_fresh() {
  std::vector<Block*> out;
  out.swap(fresh_);
  return out;
}

void PoolAllocator::release(Block* block) {
  in_use_ -= static_cast<int64_t>(block->used);
  block->used = 0;
  block->refs = 0;
  free_.emplace(block->capacity, block);
}

}  // namespace ptq::runtime
