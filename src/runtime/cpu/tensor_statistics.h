// Statistics of a host tensor for calibration (specs/calibrators.md): min/max and histogram
// counts computed in place over the tensor's data. Implemented by the calibrators work
// (tensor_statistics.cpp); declared here so the CPU backend can hand one to observers.
#pragma once

#include <cstdint>
#include <span>

#include "ptq/ir.h"
#include "ptq/runtime.h"

namespace ptq::runtime::cpu {

class HostTensorStatistics final : public TensorStatistics {
 public:
  // Borrows `t`; it must outlive this object. `threads` bounds the threads used.
  HostTensorStatistics(const ir::Tensor& t, int threads) : tensor_(t), threads_(threads) {}
  MinMaxStats minmax() const override;
  void histogram(double T, std::span<uint64_t> counts) const override;

 private:
  const ir::Tensor& tensor_;
  int threads_;
};

}  // namespace ptq::runtime::cpu
