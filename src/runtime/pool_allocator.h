// The executor's activation memory: one arena whose layout is planned from the lifetimes seen
// in the first run of an input shape, reused by every later run of that shape.
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
  size_t request = 0;   // its request's index in the run
  bool own = false;     // holds its own buffer (recording, or a request the plan missed)
};

// A run of a model asks for the same buffer sizes in the same order whenever its input shapes
// are the same. So the first run of a shape ("recording") takes each buffer from the system and
// gives it back as soon as it dies (resident memory follows the live set), noting when each was
// asked for and freed; then every buffer gets an offset so that buffers alive at the same time
// never overlap (largest first, each into the tightest gap: "greedy by size, best fit"), and
// later runs of that shape ("planned") hand out slices of one arena in request order. Plans of
// a few shapes are kept (a calibration pass ends on a smaller batch, then starts again), all in
// the one arena, which is as large as the largest of them. A request the plan does not expect
// (another size, or more requests) gets its own buffer for that run, and the next run of that
// shape records again. Within a run, a dead buffer of up to 4 MiB may be handed to the next
// request of its exact size instead of going back to the system (32 MiB of them at most; all
// go back when the run ends).
class PoolAllocator final : public Allocator {
 public:
  PoolAllocator() = default;
  PoolAllocator(const PoolAllocator&) = delete;
  PoolAllocator& operator=(const PoolAllocator&) = delete;
  ~PoolAllocator() override;

  // Starts a run; `key` identifies its input shapes (a different key records a new plan).
  void begin_run(const std::vector<int64_t>& key);
  // Ends a run whose blocks have all been released; a successful recording becomes the plan.
  void end_run(bool ok);

  ir::Tensor allocate(ir::DType dtype, const ir::Shape& shape) override;

  // Blocks handed out since the last call (a kernel's outputs and scratch).
  std::vector<Block*> take_fresh();
  // The block's tensor died: its bytes are free for later requests.
  void release(Block* block);

  int64_t in_use_bytes() const { return in_use_; }
  int64_t peak_bytes() const { return peak_; }
  // Bytes held for activations: the arena (planned), or the peak of live buffers (recording).
  int64_t pool_bytes() const { return pool_; }

 private:
  // One request of the recorded run: its size and its lifetime in request/release ticks.
  struct Request {
    size_t bytes = 0;
    int64_t born = 0, dies = 0;
    size_t offset = 0;
  };
  enum class Mode { kRecording, kPlanned };
  // Offsets for the requests of one input shape, and the arena bytes they need.
  struct Plan {
    std::vector<Request> requests;
    size_t bytes = 0;
  };
  static constexpr size_t kMaxPlans = 8;

  Block* next_block();
  static size_t place(std::vector<Request>& requests);
  void drop_arena();
  std::byte* own_buffer(size_t bytes);
  void drop_own(std::byte* data, size_t bytes);
  void drop_spares();

  Mode mode_ = Mode::kRecording;
  std::vector<int64_t> key_;  // this run's
  std::map<std::vector<int64_t>, Plan> plans_;
  bool plan_missed_ = false;  // this planned run made a request the plan did not expect
  std::vector<Request> requests_;  // this run's: recorded, or its plan's
  std::vector<std::unique_ptr<Block>> blocks_;  // one per request of the run, reused
  size_t next_ = 0;                             // requests made in this run
  int64_t clock_ = 0;
  std::byte* arena_ = nullptr;
  size_t arena_bytes_ = 0;
  std::vector<Block*> fresh_;
  // Buffers of dead blocks kept for a later request of the same size in this run (small ones
  // only, up to kSpareBytes): a recording run of a model of small tensors would otherwise map,
  // fault in and unmap a fresh buffer for every value.
  std::multimap<size_t, std::byte*> spares_;
  size_t spare_bytes_ = 0;
  static constexpr size_t kSpareMax = size_t{4} << 20;    // the largest buffer kept
  static constexpr size_t kSpareBytes = size_t{32} << 20;  // all of them
  int64_t in_use_ = 0;
  int64_t live_capacity_ = 0;  // bytes of live blocks, rounded as allocated
  int64_t peak_ = 0;
  int64_t pool_ = 0;
};

}  // namespace ptq::runtime
