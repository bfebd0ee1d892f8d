// apps/progress: the text of a progress line, and that nothing is printed off a terminal.
#include <gtest/gtest.h>

#include "progress.h"

namespace ptq::apps {
namespace {

TEST(ProgressLine, FormatsCountRateAndTimeLeft) {
  EXPECT_EQ(ProgressLine::format("calibrate", "pass 1/2", "samples", 128, 256, 2.0),
            "ptq calibrate: pass 1/2 128/256 samples 64.0 samples/s ETA 0:02");
  EXPECT_EQ(ProgressLine::format("eval", "", "samples", 10, 7210, 1.0),
            "ptq eval: 10/7210 samples 10.0 samples/s ETA 12:00");
  EXPECT_EQ(ProgressLine::format("sweep", "", "layers", 1, 100, 37.0),
            "ptq sweep: 1/100 layers 0.0 layers/s ETA 1:01:03");
  // Done: no ETA. Unknown total: a plain count. Too early for a rate: none.
  EXPECT_EQ(ProgressLine::format("calibrate", "", "samples", 256, 256, 4.0),
            "ptq calibrate: 256/256 samples 64.0 samples/s");
  EXPECT_EQ(ProgressLine::format("run", "", "batches", 3, 0, 1.5),
            "ptq run: 3 batches 2.0 batches/s");
  EXPECT_EQ(ProgressLine::format("run", "", "samples", 4, 256, 0.001), "ptq run: 4/256 samples");
}

TEST(ProgressLine, SilentOffATerminalAndWhenQuiet) {
  ProgressLine quiet("calibrate", "samples", 10, true);
  EXPECT_FALSE(quiet.enabled());
  // Capturing sends stderr to a file, which is not a terminal.
  ::testing::internal::CaptureStderr();
  ASSERT_FALSE(stderr_is_terminal());
  ProgressLine line("calibrate", "samples", 10, false);
  EXPECT_FALSE(line.enabled());
  line.set_stage("pass 1/2", 10);
  line.update(5);
  line.update(10);
  line.finish();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace ptq::apps
