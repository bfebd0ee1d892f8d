// End-to-end CPU runtime benchmark: one model, one batch size, one thread count.
//   runtime_bench MODEL SAMPLES.npy BATCH THREADS SECONDS     (PTQ_BENCH_FUSE=0: no fusion)
// Prints one line of key=value pairs: images_per_s, weight_bytes, peak_live_bytes, pool_bytes,
// rss_bytes (peak resident set while running, reset after loading) and rss_before_bytes.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "npy_lite.h"
#include "ptq/onnx.h"
#include "ptq/runtime.h"

namespace {

// VmHWM / VmRSS from /proc/self/status, in bytes.
int64_t proc_status_kb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) return std::stoll(line.substr(std::strlen(key))) * 1024;
  }
  return -1;
}

// Resets the peak resident set size so it measures the run, not the model loader.
void reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
}

int fail(const std::string& m) {
  fmt::print(stderr, "runtime_bench: error: {}\n", m);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ptq;
  if (argc != 6) return fail("usage: runtime_bench MODEL SAMPLES.npy BATCH THREADS SECONDS");
  const int64_t batch = std::stoll(argv[3]);
  const int threads = std::stoi(argv[4]);
  const double seconds = std::stod(argv[5]);
  auto model = onnx::load_model(argv[1]);
  if (!model) return fail(model.status().message());
  auto samples = runtime::testing::read_npy(argv[2]);
  if (!samples) return fail(samples.status().message());
  // The batch cycles through the samples.
  ir::Shape shape = samples->shape();
  const int64_t have = shape[0];
  shape[0] = batch;
  ir::Tensor input(samples->dtype(), shape);
  const size_t per = samples->nbytes() / static_cast<size_t>(have);
  for (int64_t i = 0; i < batch; ++i) {
    std::memcpy(static_cast<char*>(input.raw()) + i * per,
                static_cast<const char*>(samples->raw()) + (i % have) * per, per);
  }
  auto backend = runtime::make_cpu_backend();
  // PTQ_BENCH_FUSE=0 runs every node apart (the executor's fusion off), to measure what it gains.
  const char* fuse = std::getenv("PTQ_BENCH_FUSE");
  const bool fused = fuse == nullptr || std::strcmp(fuse, "0") != 0;
  auto exec = runtime::Executor::create(*model, *backend, {threads, fused});
  if (!exec) return fail(exec.status().message());
  runtime::NamedTensors in;
  in.emplace_back(model->graph.real_inputs().at(0)->name, std::move(input));
  const int64_t rss_before = proc_status_kb("VmRSS:");
  reset_peak_rss();
  for (int i = 0; i < 2; ++i) {  // warm-up: fills the pool
    auto r = (*exec)->run(in);
    if (!r) return fail(r.status().message());
  }
  int runs = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0.0;
  while (elapsed < seconds || runs < 3) {
    auto r = (*exec)->run(in);
    if (!r) return fail(r.status().message());
    ++runs;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const runtime::RunStats st = (*exec)->last_run_stats();
  fmt::print("images_per_s={:.3f} runs={} seconds={:.3f} weight_bytes={} peak_live_bytes={} "
             "pool_bytes={} input_bytes={} rss_bytes={} rss_before_bytes={}\n",
             static_cast<double>(runs * batch) / elapsed, runs, elapsed, st.weight_bytes,
             st.peak_live_bytes, st.pool_bytes, in[0].second.nbytes(), proc_status_kb("VmHWM:"),
             rss_before);
  return 0;
}
