// The process's message log: warnings, notes and debug lines for people, on stderr and
// optionally in a file. The library writes to it; the command line sets its level and file
// (`--log-level`, `--log-file`). Progress lines are not log messages (apps/progress.h).
//
//   ptq::log::warn("{} clips {:.1f}% of its values", name, pct);
//   -> "ptq: warning: conv1 clips 3.2% of its values" on stderr
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

#include "ptq/status.h"

namespace ptq::log {

// Most to least severe; a message shows when its level is at or above the set one.
enum class Level { kError, kWarning, kInfo, kDebug };

// "error", "warning" (or "warn"), "info", "debug"; a usage error naming the choices otherwise.
Expected<Level> parse_level(std::string_view name);
std::string_view level_name(Level level);  // "error", "warning", "info", "debug"

// The level shown (default kInfo).
void set_level(Level level);
Level level();
bool enabled(Level level);

// Also writes every shown message to `path` (created or truncated); an empty path stops it.
// An error naming the file when it cannot be opened.
Status set_file(const std::string& path);

// Writes "<program>: <level>: <message>" (program "ptq" unless set) when `level` is shown.
void set_program(std::string program);
void write(Level level, std::string_view message);

template <typename... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::kError)) write(Level::kError, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::kWarning)) write(Level::kWarning, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::kInfo)) write(Level::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::kDebug)) write(Level::kDebug, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace ptq::log
