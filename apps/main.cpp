// Entry point: parses the command line, runs one subcommand, maps errors to exit codes
// (0 success, 1 runtime failure, 2 usage error, 3 invalid input) with one line on stderr.
#include <cstdio>
#include <exception>
#include <map>

#include <fmt/format.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "command.h"
#include "env_options.h"
#include "ptq/util/log.h"
#include "ptq/version.h"

namespace {

// glibc raises its mmap threshold to the size of each large block freed (up to 32 MiB), after
// which batch-sized buffers come from the heap and fragment it: calibration's resident set then
// grows with the number of batches (+15% from 256 to 2,048 ResNet-18 samples). A fixed
// threshold keeps every buffer of 1 MiB or more mapped and returned on free, so memory stays
// flat in the sample count (measured: 370 MiB for 64 and for 384 samples).
// The smaller blocks live on the heaps, which grow and shrink in large steps: kept when freed
// instead of handed back as soon as 128 KiB lie free at a heap's top, and grown 64 MiB at a
// time. A sensitivity sweep makes and frees many graphs and executors on several threads; each
// step of a thread's heap was a system call (mprotect to grow, madvise to trim: 746 in the
// small transformer's sweep, 21 after) holding the memory-map lock that the other threads'
// page faults wait on (the sweep 5-6 % faster; calibration's peak memory the same;
// docs/perf-history.md, Sensitivity sweeps, session 17).
void tune_malloc() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
}

int fail(int code, const std::string& message) {
  ptq::log::write(ptq::log::Level::kError, message);
  return code;
}

// --log-level and --log-file, set before the subcommand runs.
ptq::Status configure_log(const ptq::apps::GlobalOptions& global) {
  PTQ_ASSIGN_OR_RETURN(ptq::log::Level level, ptq::log::parse_level(global.log_level));
  ptq::log::set_level(level);
  return ptq::log::set_file(global.log_file);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ptq::apps;
  tune_malloc();
  set_process_options_from_env();
  CLI::App app{"ptq: post-training quantization for ONNX models", "ptq"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ptq " PTQ_VERSION_STRING);
  GlobalOptions global;
  std::map<CLI::App*, Runner> runners;
  auto add = [&](Runner (*reg)(CLI::App&, GlobalOptions&), const char* name, const char* help) {
    CLI::App* sub = app.add_subcommand(name, help);
    sub->add_flag("--quiet,-q", global.quiet,
                  "no progress line (warnings still show; --log-level error hides them)");
    sub->add_option("--log-level", global.log_level,
                    "messages shown on stderr: error, warning, info or debug")
        ->capture_default_str();
    sub->add_option("--log-file", global.log_file, "also write the messages to this file");
    runners[sub] = reg(*sub, global);
  };
#define PTQ_COMMAND(name) add(&register_##name, #name, "");
#include "commands.inc"
#undef PTQ_COMMAND

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(2, e.what());
  }
  if (ptq::Status s = configure_log(global); !s.is_ok()) return fail(s.exit_code(), s.message());
  try {
    for (auto& [sub, run] : runners) {
      if (sub->parsed()) {
        ptq::Status s = run();
        if (!s.is_ok()) return fail(s.exit_code(), s.message());
        return 0;
      }
    }
  } catch (const std::bad_alloc&) {
    return fail(1, "out of memory");
  } catch (const std::exception& e) {
    return fail(1, e.what());
  }
  return fail(2, "no subcommand given (see ptq --help)");
}
