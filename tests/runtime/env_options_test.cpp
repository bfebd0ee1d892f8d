// The PTQ_* variables the command line reads (apps/env_options.cpp), each into its options
// field: set, unset and odd values.
#include <gtest/gtest.h>

#include <stdlib.h>

#include "env_options.h"

namespace ptq::apps {
namespace {

// Sets (or, with null, unsets) one variable for the test's scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(EnvOptions, UnsetLeavesTheDefaults) {
  const ScopedEnv a("PTQ_WINOGRAD", nullptr), b("PTQ_CPU_TIMING", nullptr);
  const ScopedEnv c("PTQ_TIMING", nullptr);
  EXPECT_TRUE(cpu_backend_options_from_env().winograd);
  const runtime::ExecutorOptions eo = executor_options_from_env(3);
  EXPECT_EQ(eo.threads, 3);
  EXPECT_FALSE(eo.step_timing);
  EXPECT_TRUE(eo.fuse);
  EXPECT_FALSE(phase_timing_from_env());
}

TEST(EnvOptions, WinogradOffOnlyForZero) {
  {
    const ScopedEnv e("PTQ_WINOGRAD", "0");
    EXPECT_FALSE(cpu_backend_options_from_env().winograd);
  }
  for (const char* on : {"1", "", "off"}) {
    const ScopedEnv e("PTQ_WINOGRAD", on);
    EXPECT_TRUE(cpu_backend_options_from_env().winograd) << on;
  }
}

// The timing switches are on when set at all, as they were when the library read them.
TEST(EnvOptions, TimingSwitchesWhenSet) {
  const ScopedEnv a("PTQ_CPU_TIMING", ""), b("PTQ_TIMING", "1");
  EXPECT_TRUE(executor_options_from_env(1).step_timing);
  EXPECT_TRUE(phase_timing_from_env());
}

}  // namespace
}  // namespace ptq::apps
