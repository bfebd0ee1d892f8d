// The MPI communicator the `ptq` command line uses when launched by mpirun (PTQ_MPI builds).
// Kept out of the library's public headers: a program embedding ptqkit brings its own
// dist::Communicator, and the library builds without MPI.
#pragma once

#include <memory>

#include "ptq/dist.h"

namespace ptq::dist {

class MpiWorld final : public Communicator {
 public:
  // MPI_COMM_WORLD when an MPI launcher started this process (its variables are set), else
  // null without touching MPI: run alone, `ptq` behaves as a build without MPI (Open MPI's
  // singleton start would spawn a helper daemon first).
  static std::unique_ptr<MpiWorld> start_if_launched(int* argc, char*** argv);
  ~MpiWorld() override;  // MPI_Finalize
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  // Ends every rank of the job (MPI_Abort) with exit code `code`: for an error this rank met
  // alone, which the others, waiting in a collective call, would never learn of.
  [[noreturn]] void abort(int code);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void min(std::span<double> values) override;
  void max(std::span<double> values) override;
  void min(std::span<int64_t> values) override;
  void sum(std::span<int64_t> values) override;
  void sum(std::span<uint64_t> values) override;
  std::vector<std::string> gather(const std::string& bytes) override;
  std::string broadcast(const std::string& bytes, int root) override;

 private:
  MpiWorld();
  int rank_ = 0;
  int size_ = 1;
};

// True when an MPI launcher started this process (Open MPI's mpirun, a PMIx or PMI launcher
// such as srun).
bool launched_by_mpi();

}  // namespace ptq::dist
