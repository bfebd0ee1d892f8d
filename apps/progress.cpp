#include "progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

namespace ptq::apps {

namespace {

std::string clock_str(double seconds) {
  const int64_t s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace

bool stderr_is_terminal() { return ::isatty(::fileno(stderr)) != 0; }

ProgressLine::ProgressLine(std::string label, std::string unit, int64_t total, bool quiet)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      enabled_(!quiet && stderr_is_terminal()),
      start_(Clock::now()),
      last_draw_(start_) {}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::set_stage(std::string stage, int64_t total) {
  stage_ = std::move(stage);
  total_ = total;
  last_done_ = 0;
  drawn_done_ = -1;
  start_ = Clock::now();
}

void ProgressLine::update(int64_t done) {
  last_done_ = done;
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (drawn_ && done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(done);
}

void ProgressLine::finish() {
  if (!enabled_ || !drawn_) return;
  if (last_done_ != drawn_done_) draw(last_done_);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  drawn_ = false;
}

std::string ProgressLine::format(const std::string& label, const std::string& stage,
                                 const std::string& unit, int64_t done, int64_t total,
                                 double seconds) {
  std::string s = fmt::format("ptq {}:", label);
  if (!stage.empty()) s += " " + stage;
  s += total > 0 ? fmt::format(" {}/{} {}", done, total, unit) : fmt::format(" {} {}", done, unit);
  if (seconds >= 0.25 && done > 0) {  // a rate from the first few milliseconds means nothing
    const double rate = static_cast<double>(done) / seconds;
    s += fmt::format(" {:.1f} {}/s", rate, unit);
    if (total > 0 && done < total)
      s += " ETA " + clock_str(static_cast<double>(total - done) / rate);
  }
  return s;
}

void ProgressLine::draw(int64_t done) {
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  std::string line = format(label_, stage_, unit_, done, total_, seconds);
  const size_t width = line.size();
  if (width < last_width_) line.append(last_width_ - width, ' ');  // wipe a longer old line
  last_width_ = width;
  drawn_done_ = done;
  fmt::print(stderr, "\r{}", line);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace ptq::apps
