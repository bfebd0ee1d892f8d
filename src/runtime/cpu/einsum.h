// Einsum's equation (parsed once, when the kernel is made) and its labels laid over the
// actual input shapes (each run): shared by the kernel and its reference loop (einsum.cpp), the
// GEMM plan (einsum_plan.cpp) and each instruction-set level's GEMM path (einsum_fast.cpp,
// which includes this header before isa_begin.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ptq/ir.h"
#include "ptq/runtime.h"
#include "ptq/status.h"

namespace ptq::runtime::cpu::einsum {

// Labels 'A'..'Z' are 0..25 and 'a'..'z' 26..51 (so ids sort as the letters do); the dims an
// ellipsis stands for are kLetters + k, k counted from the first of the widest ellipsis.
constexpr int kLetters = 52;
constexpr int kEllipsis = -1;  // "..." in a parsed term

struct Equation {
  std::vector<std::vector<int>> terms;  // per operand
  std::vector<int> output;              // explicit output term (empty and !explicit: implicit)
  bool explicit_output = false;
};

// Parses "ij,jk->ik" (spaces ignored); fails naming the node on a malformed equation.
Expected<Equation> parse(const ir::Node& node, std::string_view text);

// The equation over actual shapes: every label's extent and where each label sits.
struct Layout {
  std::vector<int64_t> extent;         // per label id in use (0 for ids not used)
  std::vector<std::vector<int>> axes;  // per operand: the label of each axis
  std::vector<int> output;             // the label of each output axis
  std::vector<int> summed;             // labels not in the output, in order of appearance
  ir::Shape output_shape;
};

// Lays `eq` over the operands' shapes. A dim of 1 broadcasts against its label's extent;
// other disagreements fail naming the label and both shapes.
Expected<Layout> resolve(const ir::Node& node, const Equation& eq,
                         std::span<const ir::Shape> shapes);

// Element strides of operand `op` per label (a label on several of its axes: their sum, which
// walks a diagonal; a broadcast dim of 1: 0).
std::vector<int64_t> label_strides(const Layout& layout, size_t op, const ir::Shape& shape);

// A two-operand Einsum that is a batched matrix product once its operands are permuted:
// C[batch, m, n] = sum_k A[batch, m, k] B[batch, k, n] over groups of labels.
struct GemmPlan {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool trans_a = false, trans_b = false;
  // Operands whose axes are not already [batch, m|k, k|m] ([batch, k|n, n|k] for B) are first
  // copied into that order: the element strides of the copy's axes in the operand.
  std::optional<std::vector<int64_t>> permute_a, permute_b;
  ir::Shape permuted_a, permuted_b;  // the copies' shapes
  // Set when the output's axes are not [batch, m, n]: C's strides per output axis.
  std::optional<std::vector<int64_t>> scatter_c;
};

// The plan for float32 operands, or nullopt when the equation is not a matrix product (a
// repeated label, a label summed in one operand only, a broadcast dim, not two operands).
std::optional<GemmPlan> plan_gemm(const Layout& layout, std::span<const ir::Shape> shapes);

// Runs `plan` on `threads` threads (fixed tiles: bit-identical for any thread count). Each
// instruction-set level has its own, on its own sgemm (einsum_fast.cpp).
using GemmRunner = void (*)(const GemmPlan& plan, const float* a, const float* b, float* y,
                            const ir::Shape& y_shape, int threads);

// The kernel of an Einsum node (its equation parsed and checked against the inputs here):
// float32 matrix products run on `run_gemm` unless ctx.reference asks for the reference loop,
// which runs everything else. Each level's make_einsum passes its own `run_gemm`.
Expected<std::unique_ptr<Kernel>> make_kernel(const KernelContext& ctx, GemmRunner run_gemm);

}  // namespace ptq::runtime::cpu::einsum
