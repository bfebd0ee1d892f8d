// Packed constant weights shared by every kernel that packs the same bytes the same way. The
// cuts of a sensitivity sweep borrow one model's weights, so without sharing each cut's
// executor packed its own copy of every weight downstream of its unit (ResNet-18: 30 cuts,
// hundreds of megabytes zeroed and written). Entries are keyed by the weights' address and the
// packing's parameters and live while a kernel holds them; weights are immutable while a
// kernel borrowing them lives, so while an entry lives its address names one content.
#pragma once

#if !defined(PTQ_ISA_NS)
#error "include isa_begin.h first: this header is compiled once per instruction-set level"
#endif

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace ptq::runtime::cpu::PTQ_ISA_NS {

using PackedWeights = std::shared_ptr<const float[]>;

// The packing of `data` that `params` describe (its kind and shape): one already held by a
// kernel, or `floats` floats filled by `pack`. Thread-safe.
PackedWeights shared_packing(const void* data, const std::array<int64_t, 4>& params, size_t floats,
                             const std::function<void(float*)>& pack);

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS
