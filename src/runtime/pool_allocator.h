// A pool of host buffers reused across the steps and runs of one executor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "ptq/runtime.h"

namespace ptq::runtime {

struct Block {
  std::byte* data = nullptr;
  size_t capacity = 0;  // bytes
  size_t used = 0;      // bytes of the tensor it holds now
  int refs = 0;         // live values whose tensor lies in this block (views included)
};

// Best-fit pool: a request takes the smallest free block that holds it and is at most twice
// its size; otherwise a new block of the request rounded up to 64 bytes. Blocks are only
// returned to the system when the pool dies, so a second run of the same shapes allocates
// nothing.
class PoolAllocator final : public Allocator {
 public:
  PoolAllocator() = default;
  PoolAllocator(const PoolAllocator&) = delete;
  PoolAllocator& operator=(const PoolAllocator&) = delete;
  ~PoolAllocator() override;

  ir::Tensor allocate(ir::DType dtype, const ir::Shape& shape) override;

  // Blocks handed out since the last call (a kernel's outputs and scratch).
  std::vector<Block*> take_fresh();
  // Gives a block back to the free list.
  void release(Block* block);

  int64_t in_use_bytes() const { return in_use_; }
  int64_t peak_bytes() const { return peak_; }
  void reset_peak() { peak_ = in_use_; }
  int64_t pool_bytes() const { return total_; }

 private:
  std::vector<std::unique_ptr<Block>> blocks_;
  std::multimap<size_t, Block*> free_;  // by capacity
  std::vector<Block*> fresh_;
  int64_t in_use_ = 0;
  int64_t peak_ = 0;
  int64_t total_ = 0;
};

}  // namespace ptq::runtime
