// Test files compiled once per instruction-set level (like the kernel files they test, see
// src/runtime/cpu/isa_begin.h): PTQ_ISA_TEST(Suite, Name) is a test of this copy's level, named
// Suite_<level> (GemmPacked_avx2), skipped on a CPU that lacks the level. PTQ_ISA_FIXTURE(Suite)
// declares each suite once before its tests.
#pragma once

#include <gtest/gtest.h>

#include "ptq/runtime.h"
#include "ptq/status.h"

namespace ptq::testing_isa {

// The level a test file's copy runs: PTQ_ISA 0, 1, 2 is CpuIsa kBaseline, kAvx2, kAvx512.
// This copy's level (a const: internal linkage, one value per copy).
const runtime::CpuIsa kLevel = static_cast<runtime::CpuIsa>(PTQ_ISA + 1);

template <int Level>
class IsaLevelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (static_cast<int>(runtime::best_cpu_isa()) < Level + 1) {
      GTEST_SKIP() << "this CPU or build does not run level " << Level;
    }
  }
};

}  // namespace ptq::testing_isa

#define PTQ_ISA_SUITE(suite) PTQ_CONCAT(suite, PTQ_CONCAT(_, PTQ_ISA_NS))
#define PTQ_ISA_FIXTURE(suite) \
  using PTQ_ISA_SUITE(suite) = ::ptq::testing_isa::IsaLevelTest<PTQ_ISA>
#define PTQ_ISA_TEST(suite, name) TEST_F(PTQ_ISA_SUITE(suite), name)
