// Ranks of a distributed run as threads of one test process: a dist::Communicator per thread
// whose collectives meet at a barrier. What `mpirun` gives the command line, without MPI, so
// the library's distributed paths run in every test build (the sanitizers' included).
//   testing::ThreadRanks ranks(3);
//   ranks.run([&](dist::Communicator& comm) { results[comm.rank()] = calibrate(..., comm); });
#pragma once

#include <barrier>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ptq/dist.h"

namespace ptq::testing {

class ThreadRanks {
 public:
  explicit ThreadRanks(int size) : size_(size), barrier_(size), slots_(static_cast<size_t>(size)) {}

  // Runs fn on `size` threads, rank r's on thread r, and waits for them.
  void run(const std::function<void(dist::Communicator&)>& fn) {
    std::vector<std::thread> threads;
    for (int r = 0; r < size_; ++r) {
      threads.emplace_back([this, r, &fn] {
        Rank rank(*this, r);
        fn(rank);
      });
    }
    for (std::thread& t : threads) t.join();
  }

 private:
  class Rank final : public dist::Communicator {
   public:
    Rank(ThreadRanks& group, int rank) : g_(group), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return g_.size_; }
    void min(std::span<double> v) override {
      reduce(v, [](double a, double b) { return a < b ? a : b; });
    }
    void max(std::span<double> v) override {
      reduce(v, [](double a, double b) { return a > b ? a : b; });
    }
    void min(std::span<int64_t> v) override {
      reduce(v, [](int64_t a, int64_t b) { return a < b ? a : b; });
    }
    void sum(std::span<int64_t> v) override {
      reduce(v, [](int64_t a, int64_t b) { return a + b; });
    }
    void sum(std::span<uint64_t> v) override {
      reduce(v, [](uint64_t a, uint64_t b) { return a + b; });
    }
    std::vector<std::string> gather(const std::string& bytes) override {
      g_.slots_[static_cast<size_t>(rank_)] = bytes;
      g_.barrier_.arrive_and_wait();
      std::vector<std::string> all;
      if (rank_ == 0) all = g_.slots_;
      g_.barrier_.arrive_and_wait();
      return all;
    }
    std::string broadcast(const std::string& bytes, int root) override {
      if (rank_ == root) g_.slots_[static_cast<size_t>(root)] = bytes;
      g_.barrier_.arrive_and_wait();
      std::string out = g_.slots_[static_cast<size_t>(root)];
      g_.barrier_.arrive_and_wait();
      return out;
    }

   private:
    // Every rank combines all ranks' arrays in rank order, as MPI_Allreduce may in any.
    template <typename T, typename Op>
    void reduce(std::span<T> v, Op op) {
      g_.slots_[static_cast<size_t>(rank_)].assign(reinterpret_cast<const char*>(v.data()),
                                                   v.size_bytes());
      g_.barrier_.arrive_and_wait();
      std::vector<T> out(v.size());
      for (size_t r = 0; r < g_.slots_.size(); ++r) {
        const std::string& s = g_.slots_[r];
        for (size_t i = 0; i < v.size(); ++i) {
          T x;
          std::memcpy(&x, s.data() + i * sizeof(T), sizeof(T));
          out[i] = r == 0 ? x : op(out[i], x);
        }
      }
      g_.barrier_.arrive_and_wait();
      std::copy(out.begin(), out.end(), v.begin());
    }

    ThreadRanks& g_;
    int rank_;
  };

  int size_;
  std::barrier<> barrier_;
  std::vector<std::string> slots_;
};

}  // namespace ptq::testing
