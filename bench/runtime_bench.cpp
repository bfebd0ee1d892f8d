// End-to-end CPU runtime benchmark: one model, one batch size, one thread count.
//   runtime_bench MODEL SAMPLES BATCH THREADS SECONDS     (PTQ_BENCH_FUSE=0: no fusion)
// SAMPLES: one .npy for the model's first input, or NAME=FILE.npy[,NAME=FILE.npy...], samples
// stacked on axis 0; a batch cycles through them. Prints one line of key=value pairs:
// images_per_s, first_run_s (the first batch: packing and planning included), weight_bytes,
// peak_live_bytes, pool_bytes, rss_bytes (peak resident set while running, reset after
// loading), rss_before_bytes and process_peak_bytes (the whole process's peak, loading too).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "env_options.h"
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

// `batch` samples, cycling through those stored on axis 0.
ptq::ir::Tensor cycle(const ptq::ir::Tensor& samples, int64_t batch) {
  ptq::ir::Shape shape = samples.shape();
  const int64_t have = shape[0];
  shape[0] = batch;
  ptq::ir::Tensor input(samples.dtype(), shape);
  const size_t per = samples.nbytes() / static_cast<size_t>(have);
  for (int64_t i = 0; i < batch; ++i) {
    std::memcpy(static_cast<char*>(input.raw()) + i * per,
                static_cast<const char*>(samples.raw()) + (i % have) * per, per);
  }
  return input;
}

// The model's inputs from SAMPLES (see the usage above).
ptq::Expected<ptq::runtime::NamedTensors> read_inputs(const ptq::ir::Model& model,
                                                      const std::string& spec, int64_t batch) {
  ptq::runtime::NamedTensors in;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string item = spec.substr(start, comma - start);
    const size_t eq = item.find('=');
    const std::string name =
        eq == std::string::npos ? model.graph.real_inputs().at(0)->name : item.substr(0, eq);
    auto samples = ptq::runtime::testing::read_npy(eq == std::string::npos ? item
                                                                          : item.substr(eq + 1));
    if (!samples) return samples.status();
    in.emplace_back(name, cycle(*samples, batch));
    start = comma + 1;
  }
  return in;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ptq;
  if (argc != 6) return fail("usage: runtime_bench MODEL SAMPLES BATCH THREADS SECONDS");
  const int64_t batch = std::stoll(argv[3]);
  const int threads = std::stoi(argv[4]);
  const double seconds = std::stod(argv[5]);
  auto model = onnx::load_model(argv[1]);
  if (!model) return fail(model.status().message());
  apps::set_process_options_from_env();
  auto backend = runtime::make_cpu_backend(apps::cpu_backend_options_from_env());
  runtime::ExecutorOptions eo = apps::executor_options_from_env(threads);
  // PTQ_BENCH_FUSE=0 runs every node apart (the executor's fusion off), to measure what it gains.
  const char* fuse = std::getenv("PTQ_BENCH_FUSE");
  eo.fuse = fuse == nullptr || std::strcmp(fuse, "0") != 0;
  auto exec = runtime::Executor::create(*model, *backend, eo);
  if (!exec) return fail(exec.status().message());
  auto inputs = read_inputs(*model, argv[2], batch);
  if (!inputs) return fail(inputs.status().message());
  const runtime::NamedTensors& in = *inputs;
  const int64_t rss_before = proc_status_kb("VmRSS:");
  const int64_t load_peak = proc_status_kb("VmHWM:");
  reset_peak_rss();
  double first_run = 0.0;
  for (int i = 0; i < 2; ++i) {  // warm-up: fills the pool
    const auto start = std::chrono::steady_clock::now();
    auto r = (*exec)->run(in);
    if (!r) return fail(r.status().message());
    if (i == 0) {
      first_run = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
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
  size_t input_bytes = 0;
  for (const auto& [name, t] : in) input_bytes += t.nbytes();
  fmt::print("images_per_s={:.3f} first_run_s={:.4f} runs={} seconds={:.3f} weight_bytes={} "
             "peak_live_bytes={} pool_bytes={} input_bytes={} rss_bytes={} rss_before_bytes={} "
             "process_peak_bytes={}\n",
             static_cast<double>(runs * batch) / elapsed, first_run, runs, elapsed,
             st.weight_bytes, st.peak_live_bytes, st.pool_bytes, input_bytes,
             proc_status_kb("VmHWM:"), rss_before, std::max(load_peak, proc_status_kb("VmHWM:")));
  return 0;
}
