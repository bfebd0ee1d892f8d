// Entry point: parses the command line, runs one subcommand, maps errors to exit codes
// (0 success, 1 runtime failure, 2 usage error, 3 invalid input) with one line on stderr.
// Under mpirun (a PTQ_MPI build) every rank runs the same command; an error all ranks agreed
// on is printed by rank 0 alone, and one a rank met alone ends the whole job (MPI_Abort), as
// the other ranks would otherwise wait for it forever.
#include <cstdio>
#include <exception>
#include <map>
#include <memory>

#include <fmt/format.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "command.h"
#include "env_options.h"
#include "ptq/util/log.h"
#include "ptq/version.h"

#if defined(PTQ_HAVE_MPI)
#include "mpi_world.h"
#endif

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

// The MPI job this process was launched in, if any; this process alone otherwise.
struct World {
#if defined(PTQ_HAVE_MPI)
  std::unique_ptr<ptq::dist::MpiWorld> mpi;
#endif
  ptq::dist::Solo solo;

  World([[maybe_unused]] int* argc, [[maybe_unused]] char*** argv) {
#if defined(PTQ_HAVE_MPI)
    mpi = ptq::dist::MpiWorld::start_if_launched(argc, argv);
#endif
  }
  ptq::dist::Communicator& comm() {
#if defined(PTQ_HAVE_MPI)
    if (mpi) return *mpi;
#endif
    return solo;
  }
  // What every rank met alike (the command line) is told by rank 0 only.
  int fail_alike(int code, const std::string& message) {
    return comm().rank() == 0 ? fail(code, message) : code;
  }
  // An error of the command: agreed ones are told by rank 0; one met by this rank alone ends
  // the job.
  int fail_command(const ptq::Status& s) {
    if (comm().size() == 1) return fail(s.exit_code(), s.message());
    if (comm().failed_together()) return fail_alike(s.exit_code(), s.message());
    const int rank = comm().rank();
    fail(s.exit_code(), rank == 0 ? s.message() : fmt::format("rank {}: {}", rank, s.message()));
#if defined(PTQ_HAVE_MPI)
    mpi->abort(s.exit_code());
#endif
    return s.exit_code();
  }
};

}  // namespace

int main(int argc, char** argv) {
  using namespace ptq::apps;
  tune_malloc();
  set_process_options_from_env();
  World world(&argc, &argv);
  CLI::App app{"ptq: post-training quantization for ONNX models", "ptq"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ptq " PTQ_VERSION_STRING);
  GlobalOptions global;
  global.comm = &world.comm();
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
    return world.comm().rank() == 0 ? app.exit(e) : 0;
  } catch (const CLI::CallForAllHelp& e) {
    return world.comm().rank() == 0 ? app.exit(e) : 0;
  } catch (const CLI::CallForVersion& e) {
    return world.comm().rank() == 0 ? app.exit(e) : 0;
  } catch (const CLI::ParseError& e) {
    return world.fail_alike(2, e.what());
  }
  if (ptq::Status s = configure_log(global); !s.is_ok()) return fail(s.exit_code(), s.message());
  try {
    for (auto& [sub, run] : runners) {
      if (sub->parsed()) {
        ptq::Status s = run();
        if (!s.is_ok()) return world.fail_command(s);
        return 0;
      }
    }
  } catch (const std::bad_alloc&) {
    return world.fail_command(ptq::runtime_error("out of memory"));
  } catch (const std::exception& e) {
    return world.fail_command(ptq::runtime_error("{}", e.what()));
  }
  return world.fail_alike(2, "no subcommand given (see ptq --help)");
}
