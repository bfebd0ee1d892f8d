// Runs the built `ptq` binary as a subprocess for end-to-end CLI tests:
//   auto r = ptq::testing::run_ptq({"info", "model.onnx", "--json"});
//   EXPECT_EQ(r.exit_code, 0) << r.err;
// The binary is PTQ_BINARY_DIR/ptq (the test target must depend on `ptq`). stdout and stderr go
// to temporary files, so large outputs cannot deadlock a pipe.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ptq::testing {

struct PtqResult {
  int exit_code = -1;  // the process's exit status; 128 + N when killed by signal N
  std::string out;     // stdout
  std::string err;     // stderr
};

inline std::filesystem::path ptq_binary() { return std::filesystem::path(PTQ_BINARY_DIR) / "ptq"; }

namespace detail {

inline std::string slurp_fd(int fd) {
  std::string s;
  ::lseek(fd, 0, SEEK_SET);
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return s;
}

inline int temp_fd() {
  std::string name = (std::filesystem::temp_directory_path() / "ptq_cli_XXXXXX").string();
  int fd = ::mkstemp(name.data());
  if (fd >= 0) ::unlink(name.c_str());  // removed at close
  return fd;
}

}  // namespace detail

// Runs `program args...` (a path, or a name looked up on PATH; optionally in `cwd`) and waits
// for it.
inline PtqResult run_program(const std::string& program, const std::vector<std::string>& args,
                             const std::filesystem::path& cwd = {}) {
  PtqResult r;
  const std::string& bin = program;
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(bin.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int out_fd = detail::temp_fd();
  const int err_fd = detail::temp_fd();
  if (out_fd < 0 || err_fd < 0) {
    r.err = "run_ptq: cannot create temporary files";
    return r;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execvp(bin.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  if (pid > 0) ::waitpid(pid, &status, 0);
  r.out = detail::slurp_fd(out_fd);
  r.err = detail::slurp_fd(err_fd);
  if (pid < 0) {
    r.err = "run_ptq: fork failed";
  } else if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.exit_code = 128 + WTERMSIG(status);
  }
  return r;
}

// Runs `ptq args...` (optionally in `cwd`) and waits for it.
inline PtqResult run_ptq(const std::vector<std::string>& args,
                         const std::filesystem::path& cwd = {}) {
  return run_program(ptq_binary().string(), args, cwd);
}

}  // namespace ptq::testing
