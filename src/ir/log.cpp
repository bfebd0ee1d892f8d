// The message log: one level, one optional file, writes serialized by a mutex (calibration
// workers and sweep threads may warn at once).
#include "ptq/util/log.h"

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

namespace ptq::log {

namespace {

constexpr std::array<std::string_view, 4> kNames = {"error", "warning", "info", "debug"};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

struct State {
  std::atomic<Level> level{Level::kInfo};
  std::mutex mutex;  // guards the rest
  std::unique_ptr<std::FILE, FileCloser> file;
  std::string program = "ptq";
};

State& state() {
  static State s;
  return s;
}

}  // namespace

Expected<Level> parse_level(std::string_view name) {
  if (name == "warn") return Level::kWarning;
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (name == kNames[i]) return static_cast<Level>(i);
  }
  return usage_error("unknown log level '{}' (choose error, warning, info or debug)", name);
}

std::string_view level_name(Level level) { return kNames[static_cast<size_t>(level)]; }

void set_level(Level level) { state().level = level; }
Level level() { return state().level; }
bool enabled(Level level) { return level <= state().level.load(); }

Status set_file(const std::string& path) {
  State& s = state();
  std::unique_ptr<std::FILE, FileCloser> file;
  if (!path.empty()) {
    file.reset(std::fopen(path.c_str(), "w"));
    if (!file) return runtime_error("cannot open the log file {}: {}", path, std::strerror(errno));
  }
  std::lock_guard lock(s.mutex);
  s.file = std::move(file);
  return Status::ok();
}

void set_program(std::string program) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.program = std::move(program);
}

void write(Level level, std::string_view message) {
  if (!enabled(level)) return;
  State& s = state();
  std::lock_guard lock(s.mutex);
  const std::string line = fmt::format("{}: {}: {}\n", s.program, level_name(level), message);
  std::fputs(line.c_str(), stderr);
  if (s.file) {
    std::fputs(line.c_str(), s.file.get());
    std::fflush(s.file.get());
  }
}

}  // namespace ptq::log
