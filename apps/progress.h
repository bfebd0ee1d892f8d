// A progress line on stderr for long work (calibration, sweeps, evaluation): items done, items
// per second and the time left, redrawn in place at most ~10 times a second. It prints only
// when stderr is a terminal and --quiet is not given, so scripts and logs never see it.
//
//   ProgressLine line("calibrate", "samples", dataset.size(), global.quiet);
//   line.set_stage("pass 1/2");   // optional prefix after the label
//   line.update(done);            // after each batch
//   line.finish();                // ends the line (also done by the destructor)
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ptq::apps {

class ProgressLine {
 public:
  // `label` names the work ("calibrate"), `unit` the items ("samples"), `total` their count
  // (0 when unknown: no ETA).
  ProgressLine(std::string label, std::string unit, int64_t total, bool quiet);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Whether anything is printed (stderr is a terminal and not quiet).
  bool enabled() const { return enabled_; }
  // Starts a new stage (e.g. the second pass): the rate and ETA restart from it.
  void set_stage(std::string stage, int64_t total);
  // Reports `done` items of the current stage; redraws if ~0.1 s passed or it is the last.
  void update(int64_t done);
  // Draws the final state and ends the line.
  void finish();

  // The text of one line (for tests): "ptq calibrate: pass 1/2 128/256 samples 512.0 samples/s
  // ETA 0:01".
  static std::string format(const std::string& label, const std::string& stage,
                            const std::string& unit, int64_t done, int64_t total, double seconds);

 private:
  using Clock = std::chrono::steady_clock;
  void draw(int64_t done);
  std::string label_, unit_, stage_;
  int64_t total_ = 0;
  bool enabled_ = false;
  bool drawn_ = false;
  size_t last_width_ = 0;
  int64_t last_done_ = 0;
  int64_t drawn_done_ = -1;
  Clock::time_point start_, last_draw_;
};

// True when stderr is a terminal.
bool stderr_is_terminal();

}  // namespace ptq::apps
