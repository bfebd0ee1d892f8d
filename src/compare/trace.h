// Per-tensor error tracing (include/ptq/compare.h, Options::per_tensor): two observers, one on
// each model's executor. The reference model runs first and its observer keeps a copy of each
// traced tensor of the batch (buffers reused batch after batch); the test model's observer
// adds each of its values against that copy into the tensor's float64 sums as it is produced.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ptq/compare.h"

namespace ptq::compare {

class Tracer {
 public:
  explicit Tracer(std::vector<TensorPair> pairs);
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Each batch: next_batch(), then run the reference with reference_observer(), then the test
  // model with test_observer().
  void next_batch() { ++batch_; }
  runtime::Observer& reference_observer() { return reference_; }
  runtime::Observer& test_observer() { return test_; }

  // The traced tensors (those whose reference value was float and seen), in pair order, with
  // their inputs and jump marks worked out on `reference`.
  std::vector<TensorTrace> finish(const ir::Graph& reference, double jump_db) const;

 private:
  struct Entry {
    TensorPair pair;
    metrics::Agreement agreement;
    ir::Tensor held;  // the reference value of batch `held_batch`
    int64_t held_batch = -1;
  };

  class ReferenceObserver final : public runtime::Observer {
   public:
    explicit ReferenceObserver(Tracer& t) : t_(t) {}
    std::vector<std::string> wanted(const ir::Graph& graph) override;
    Status observe(const runtime::ObservedTensor& tensor) override;

   private:
    Tracer& t_;
  };
  class TestObserver final : public runtime::Observer {
   public:
    explicit TestObserver(Tracer& t) : t_(t) {}
    std::vector<std::string> wanted(const ir::Graph& graph) override;
    Status observe(const runtime::ObservedTensor& tensor) override;

   private:
    Tracer& t_;
  };

  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> by_reference_;
  std::unordered_map<std::string, std::vector<size_t>> by_test_;
  int64_t batch_ = -1;
  ReferenceObserver reference_{*this};
  TestObserver test_{*this};
};

// Where each traced tensor's error comes from (TensorTrace::inputs, reference_db, jump), from
// the reference graph's producers.
void mark_jumps(const ir::Graph& reference, double jump_db, std::vector<TensorTrace>& traces);

}  // namespace ptq::compare
