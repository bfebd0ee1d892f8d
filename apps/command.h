// The ptq command line: one file per subcommand, each thin over the library.
// A subcommand registers its options on `app` and returns the function that runs it.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "ptq/status.h"

namespace ptq::apps {

using Runner = std::function<Status()>;

// Options every subcommand shares.
struct GlobalOptions {
  bool quiet = false;
};

#define PTQ_COMMAND(name) Runner register_##name(CLI::App& app, GlobalOptions& global);
#include "commands.inc"
#undef PTQ_COMMAND

}  // namespace ptq::apps
