#include "pool_allocator.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "ptq/ir/pages.h"

namespace ptq::runtime {

namespace {

constexpr size_t kAlign = 64;

// Buffers from ir::kMapPagesFrom up are mapped straight from the system (huge pages where
// allowed), so that freeing one returns its pages at once: malloc keeps freed heap memory and
// raises its own mmap threshold after large frees, which would hold a recording run's dead
// buffers in the resident set.
constexpr size_t kMapFrom = ir::kMapPagesFrom;

std::byte* system_alloc(size_t bytes) {
  if (bytes >= kMapFrom) return ir::map_pages(bytes);
  void* p = std::aligned_alloc(kAlign, bytes);
  if (p == nullptr) throw std::bad_alloc();
  return static_cast<std::byte*>(p);
}

void system_free(std::byte* p, size_t bytes) {
  if (p == nullptr) return;
  if (bytes >= kMapFrom) {
    ir::unmap_pages(p, bytes);
    return;
  }
  std::free(p);
}

bool overlap(int64_t born_a, int64_t dies_a, int64_t born_b, int64_t dies_b) {
  return born_a < dies_b && born_b < dies_a;
}

}  // namespace

PoolAllocator::~PoolAllocator() {
  for (auto& b : blocks_) {
    if (b->own) system_free(b->data, b->capacity);
  }
  drop_spares();
  drop_arena();
}

std::byte* PoolAllocator::own_buffer(size_t bytes) {
  auto it = spares_.find(bytes);
  if (it == spares_.end()) return system_alloc(bytes);
  std::byte* p = it->second;
  spares_.erase(it);
  spare_bytes_ -= bytes;
  return p;
}

void PoolAllocator::drop_own(std::byte* data, size_t bytes) {
  if (bytes > kSpareMax || spare_bytes_ + bytes > kSpareBytes) {
    system_free(data, bytes);
    return;
  }
  spares_.emplace(bytes, data);
  spare_bytes_ += bytes;
  if (mode_ == Mode::kRecording) {
    pool_ = std::max(pool_, live_capacity_ + static_cast<int64_t>(spare_bytes_));
  }
}

void PoolAllocator::drop_spares() {
  for (const auto& [bytes, data] : spares_) system_free(data, bytes);
  spares_.clear();
  spare_bytes_ = 0;
}

void PoolAllocator::drop_arena() {
  system_free(arena_, arena_bytes_);
  arena_ = nullptr;
  arena_bytes_ = 0;
}

void PoolAllocator::begin_run(const std::vector<int64_t>& key) {
  next_ = 0;
  clock_ = 0;
  plan_missed_ = false;
  peak_ = in_use_;
  key_ = key;
  auto it = plans_.find(key);
  if (it != plans_.end()) {
    mode_ = Mode::kPlanned;
    requests_ = it->second.requests;
    pool_ = static_cast<int64_t>(arena_bytes_);
    return;
  }
  mode_ = Mode::kRecording;
  requests_.clear();
  pool_ = 0;
}

void PoolAllocator::end_run(bool ok) {
  drop_spares();
  if (mode_ == Mode::kPlanned && plan_missed_) plans_.erase(key_);  // record again next time
  if (mode_ != Mode::kRecording || !ok) return;
  for (size_t i = 0; i < next_; ++i) {
    if (requests_[i].dies < 0) requests_[i].dies = clock_;  // never released: lives to the end
  }
  requests_.resize(next_);
  if (plans_.size() >= kMaxPlans) plans_.clear();
  Plan plan;
  plan.bytes = place(requests_);
  plan.requests = std::move(requests_);
  requests_.clear();
  if (plan.bytes > arena_bytes_) {
    drop_arena();
    arena_ = system_alloc(plan.bytes);
    arena_bytes_ = plan.bytes;
  }
  plans_[key_] = std::move(plan);
}

Block* PoolAllocator::next_block() {
  if (next_ == blocks_.size()) blocks_.push_back(std::make_unique<Block>());
  Block* block = blocks_[next_].get();
  block->request = next_++;
  return block;
}

ir::Tensor PoolAllocator::allocate(ir::DType dtype, const ir::Shape& shape) {
  const size_t bytes = static_cast<size_t>(ir::num_elements(shape)) * ir::dtype_size(dtype);
  const size_t want = std::max(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  Block* block = next_block();
  const size_t i = block->request;
  if (mode_ == Mode::kPlanned && i < requests_.size() && requests_[i].bytes == want) {
    block->data = arena_ + requests_[i].offset;
    block->own = false;
  } else {
    if (mode_ == Mode::kPlanned) plan_missed_ = true;
    block->data = own_buffer(want);
    block->own = true;
    if (mode_ == Mode::kRecording) {
      if (requests_.size() <= i) requests_.resize(i + 1);
      requests_[i] = Request{want, clock_, -1, 0};
    }
  }
  ++clock_;
  block->capacity = want;
  block->used = bytes;
  block->refs = 0;
  in_use_ += static_cast<int64_t>(bytes);
  live_capacity_ += static_cast<int64_t>(want);
  peak_ = std::max(peak_, in_use_);
  if (mode_ == Mode::kRecording) pool_ = std::max(pool_, live_capacity_);
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
  live_capacity_ -= static_cast<int64_t>(block->capacity);
  if (mode_ == Mode::kRecording && block->request < requests_.size()) {
    requests_[block->request].dies = clock_;
  }
  ++clock_;
  if (block->own) drop_own(block->data, block->capacity);
  block->data = nullptr;
  block->own = false;
  block->used = 0;
  block->refs = 0;
}

// Greedy by size, best fit: the largest request first, each at the start of the smallest gap
// between the requests already placed that live at the same time, else after the last of them.
// Returns the bytes the requests span.
size_t PoolAllocator::place(std::vector<Request>& requests) {
  std::vector<size_t> order(requests.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });
  std::vector<size_t> placed;  // request indices, by offset
  size_t total = 0;
  for (size_t i : order) {
    Request& r = requests[i];
    size_t end = 0, best = SIZE_MAX, best_gap = SIZE_MAX;
    for (size_t j : placed) {
      const Request& q = requests[j];
      if (!overlap(r.born, r.dies, q.born, q.dies)) continue;
      if (q.offset >= end && q.offset - end >= r.bytes && q.offset - end < best_gap) {
        best = end;
        best_gap = q.offset - end;
      }
      end = std::max(end, q.offset + q.bytes);
    }
    r.offset = best != SIZE_MAX ? best : end;
    total = std::max(total, r.offset + r.bytes);
    const auto at = std::upper_bound(placed.begin(), placed.end(), i, [&](size_t a, size_t b) {
      return requests[a].offset < requests[b].offset;
    });
    placed.insert(at, i);
  }
  return total;
}

}  // namespace ptq::runtime
