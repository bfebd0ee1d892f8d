// The dist module (ptq_dist): what calibration and sensitivity sweeps need from the processes
// they share their work with. A Communicator is one process's view of a fixed group of ranks
// (0 .. size()-1); every call is collective: each rank makes the same calls in the same order.
// The library sees only this interface (no MPI type or header): the single-process one below
// is the default, and the `ptq` command line brings an MPI one when built with PTQ_MPI and
// launched by mpirun (docs/DISTRIBUTED.md).
//
//   dist::Solo solo;                                  // this process alone
//   PTQ_RETURN_IF_ERROR(comm.agree(local_status));    // every rank fails if one did
//   comm.max(values);                                 // element-wise over the ranks
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ptq/status.h"

namespace ptq::dist {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Element-wise over every rank's `values` (the same length on each); the result on every
  // rank. Exact: min, max and integer sums do not depend on the order they are taken in.
  virtual void min(std::span<double> values) = 0;
  virtual void max(std::span<double> values) = 0;
  virtual void min(std::span<int64_t> values) = 0;
  virtual void sum(std::span<int64_t> values) = 0;
  virtual void sum(std::span<uint64_t> values) = 0;
  // Every rank's `bytes` on rank 0, in rank order (other ranks get an empty list).
  virtual std::vector<std::string> gather(const std::string& bytes) = 0;
  // `root`'s bytes on every rank.
  virtual std::string broadcast(const std::string& bytes, int root) = 0;

  // Every rank's outcome agreed: ok when every rank's `local` is ok, else on every rank the
  // error with the smallest `order` (ties: the lowest rank), so that the error reported is the
  // one a single process would meet first (calibration passes its first failing batch).
  Status agree(const Status& local, int64_t order = 0);
  // Whether agree() has returned an error: every rank then holds it, and rank 0 reports it.
  bool failed_together() const { return failed_together_; }

 private:
  bool failed_together_ = false;
};

// This process alone: every reduction returns its input.
class Solo final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void min(std::span<double> /*values*/) override {}
  void max(std::span<double> /*values*/) override {}
  void min(std::span<int64_t> /*values*/) override {}
  void sum(std::span<int64_t> /*values*/) override {}
  void sum(std::span<uint64_t> /*values*/) override {}
  std::vector<std::string> gather(const std::string& bytes) override { return {bytes}; }
  std::string broadcast(const std::string& bytes, int /*root*/) override { return bytes; }
};

// A fixed-layout byte record for gather()/broadcast(): numbers as their bytes (doubles
// bit-exact), strings with their length.
class Writer {
 public:
  void i64(int64_t v);
  void f64(double v);
  void str(const std::string& s);
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  // Each read fails (a runtime error) past the end.
  Expected<int64_t> i64();
  Expected<double> f64();
  Expected<std::string> str();
  bool done() const { return pos_ == bytes_.size(); }

 private:
  Status take(void* out, size_t n);
  const std::string& bytes_;
  size_t pos_ = 0;
};

}  // namespace ptq::dist
