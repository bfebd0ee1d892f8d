// The ptq command line: one file per subcommand, each thin over the library.
// A subcommand registers its options on `app` and returns the function that runs it.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

#include "ptq/dist.h"
#include "ptq/status.h"
#include "ptq/util/log.h"

namespace ptq::apps {

using Runner = std::function<Status()>;

// Options every subcommand shares.
struct GlobalOptions {
  bool quiet = false;  // no progress line; warnings still show (--log-level error hides them)
  std::string log_level = "info";
  std::string log_file;
  // The ranks this process shares its work with: this process alone, or the MPI job it was
  // launched in (docs/DISTRIBUTED.md). Never null.
  dist::Communicator* comm = nullptr;
};

// Checks for counts (--threads, --parallel, ...): "expected a number >= 0, not '-2'" where
// CLI11's NonNegativeNumber and PositiveNumber spell out the whole double range.
inline CLI::Validator at_least(int64_t least) {
  return CLI::Validator(
      [least](std::string& text) -> std::string {
        bool ok = false;
        try {
          size_t used = 0;
          ok = std::stod(text, &used) >= static_cast<double>(least) && used == text.size();
        } catch (const std::exception&) {
          ok = false;
        }
        if (ok) return "";
        return "expected a number >= " + std::to_string(least) + ", not '" + text + "'";
      },
      "");
}

#define PTQ_COMMAND(name) Runner register_##name(CLI::App& app, GlobalOptions& global);
#include "commands.inc"
#undef PTQ_COMMAND

}  // namespace ptq::apps
