// The progress line `ptq` draws (apps/progress.cpp, on stderr when it is a terminal) and
// Ctrl-C: the library calls back after every batch; on the thread that started the work the
// callback asks Python whether a signal came (PyErr_CheckSignals), and a KeyboardInterrupt
// stops the run with a Status, so the library unwinds and writes nothing partial.
#include "progress.h"

#include <fmt/format.h>

#include <thread>

#include "bindings.h"

namespace ptq::python {

struct Progress::Impl {
  apps::ProgressLine line;
  std::thread::id caller = std::this_thread::get_id();
  std::string stage_word;
  int stage = 0;

  Status check_signals() const {
    if (std::this_thread::get_id() != caller) return {};  // only the main thread sees signals
    py::gil_scoped_acquire gil;
    return PyErr_CheckSignals() == 0 ? Status{} : interrupted();
  }
};

Progress::Progress(std::string label, int64_t total, bool quiet, std::string stage)
    : impl_(new Impl{.line = apps::ProgressLine(std::move(label), "samples", total, quiet),
                     .stage_word = std::move(stage)}) {}

Progress::~Progress() = default;

calibration::ProgressFn Progress::calibration_fn() {
  return [this](const calibration::Progress& p) -> Status {
    if (p.pass != impl_->stage) {
      impl_->stage = p.pass;
      impl_->line.set_stage(fmt::format("{} {}/{}", impl_->stage_word, p.pass, p.passes),
                            p.samples_total);
    }
    impl_->line.update(p.samples_done);
    return impl_->check_signals();
  };
}

Status Progress::update(int64_t done) {
  impl_->line.update(done);
  return impl_->check_signals();
}

void Progress::finish() { impl_->line.finish(); }

}  // namespace ptq::python
