// dist::Communicator over MPI_COMM_WORLD. Reductions are MPI_Allreduce with MIN, MAX or SUM on
// whole arrays (one call per array, so the cost is the array's bytes, not a call per tensor).
#include "mpi_world.h"

#include <mpi.h>

#include <cstdlib>

namespace ptq::dist {

namespace {

int count_of(size_t n) { return static_cast<int>(n); }

template <typename T>
void allreduce(std::span<T> values, MPI_Datatype type, MPI_Op op) {
  if (values.empty()) return;
  MPI_Allreduce(MPI_IN_PLACE, values.data(), count_of(values.size()), type, op, MPI_COMM_WORLD);
}

}  // namespace

bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return true;
  }
  return false;
}

std::unique_ptr<MpiWorld> MpiWorld::start_if_launched(int* argc, char*** argv) {
  if (!launched_by_mpi()) return nullptr;
  // The statistics, workers and prefetching run on threads of their own; MPI is called from
  // the main thread only.
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  return std::unique_ptr<MpiWorld>(new MpiWorld());
}

MpiWorld::MpiWorld() {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiWorld::~MpiWorld() { MPI_Finalize(); }

void MpiWorld::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; the compiler does not know it
}

void MpiWorld::min(std::span<double> values) { allreduce(values, MPI_DOUBLE, MPI_MIN); }
void MpiWorld::max(std::span<double> values) { allreduce(values, MPI_DOUBLE, MPI_MAX); }
void MpiWorld::min(std::span<int64_t> values) { allreduce(values, MPI_INT64_T, MPI_MIN); }
void MpiWorld::sum(std::span<int64_t> values) { allreduce(values, MPI_INT64_T, MPI_SUM); }
void MpiWorld::sum(std::span<uint64_t> values) { allreduce(values, MPI_UINT64_T, MPI_SUM); }

std::vector<std::string> MpiWorld::gather(const std::string& bytes) {
  int mine = count_of(bytes.size());
  std::vector<int> sizes(rank_ == 0 ? static_cast<size_t>(size_) : 0);
  MPI_Gather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(sizes.size());
  int total = 0;
  for (size_t r = 0; r < sizes.size(); ++r) {
    offsets[r] = total;
    total += sizes[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  MPI_Gatherv(bytes.data(), mine, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (size_t r = 0; r < sizes.size(); ++r) {
    out.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(sizes[r])));
  }
  return out;
}

std::string MpiWorld::broadcast(const std::string& bytes, int root) {
  int n = count_of(bytes.size());
  MPI_Bcast(&n, 1, MPI_INT, root, MPI_COMM_WORLD);
  std::string out = rank_ == root ? bytes : std::string(static_cast<size_t>(n), '\0');
  MPI_Bcast(out.data(), n, MPI_BYTE, root, MPI_COMM_WORLD);
  return out;
}

}  // namespace ptq::dist
