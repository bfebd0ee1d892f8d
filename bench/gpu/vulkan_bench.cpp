// ptq_vulkan_bench: the Vulkan backend's speed on a real GPU (bench/gpu/run_device.sh runs it
// next to bench/gpu/torch_ref.py and prints the ratios).
//   gemm N...      GEMM kernel throughput (TFLOP/s) on device buffers, N x N x N
//   resnet18 B     ResNet-18 (224x224, BN folded into conv as in an exported model, random
//                  weights) forward through the Vulkan executor: ms per batch, end to end
//                  (input upload and output download included)
//   calib S B      entropy calibration of that ResNet-18 over S random samples in batches of B:
//                  both passes (min/max, then histograms) with every activation observed
//   pipelines      time to build the pipelines ResNet-18 calibration uses: one at a time, then
//                  all at once on a fresh context (set PTQ_PIPELINE_CACHE=off and
//                  __GL_SHADER_DISK_CACHE=0 for cold compiles)
//   --tile l|w|m|s gemm: force the 128x128, 64x256, 64x128 or 64x64 block tile
//   --cpu          also time resnet18/calib on the CPU executor
//   --device N     Vulkan device index
// Output: one JSON object per line, for run_device.sh to parse.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "buffer.h"
#include "context.h"
#include "env_options.h"
#include "gemm_vulkan.h"
#include "ptq/calibrators.h"
#include "ptq/ir.h"
#include "ptq/runtime.h"
#include "ptq/vulkan.h"
#include "recorder.h"

namespace {

using namespace ptq;
using Clock = std::chrono::steady_clock;

// Device `device` with the PTQ_* variables' settings (PTQ_PIPELINE_CACHE, PTQ_VULKAN_*).
vulkan::VulkanOptions options(int device) {
  vulkan::VulkanOptions o = apps::vulkan_options_from_env();
  o.device = device;
  return o;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

[[noreturn]] void die(const Status& s) {
  fmt::print(stderr, "ptq_vulkan_bench: error: {}\n", s.message());
  std::exit(1);
}

template <typename T>
T must(Expected<T> e) {
  if (!e.has_value()) die(e.status());
  return std::move(e).value();
}

void must(const Status& s) {
  if (!s.is_ok()) die(s);
}

std::vector<float> random_floats(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// GEMM C = A·B on device buffers, `reps` dispatches in one command buffer; best of 3 submits.
void bench_gemm(vulkan::Context& ctx, int64_t n, const vulkan::GemmTile* tile) {
  const size_t elems = static_cast<size_t>(n * n);
  const std::vector<float> a = random_floats(elems, 1, 1.0f), b = random_floats(elems, 2, 1.0f);
  vulkan::Buffer A = must(vulkan::upload_buffer(ctx, a.data(), elems * 4));
  vulkan::Buffer B = must(vulkan::upload_buffer(ctx, b.data(), elems * 4));
  vulkan::Buffer C = must(vulkan::Buffer::create(ctx, elems * 4, vulkan::Buffer::Kind::kDevice));
  vulkan::Buffer out = must(vulkan::Buffer::create(ctx, elems * 4, vulkan::Buffer::Kind::kStaging));
  vulkan::GemmPush p;
  p.M = p.N = p.K = static_cast<uint32_t>(n);
  p.a_rs = p.b_rs = p.c_rs = static_cast<int32_t>(n);
  p.a_cs = p.b_cs = 1;
  p.c_bs = static_cast<int32_t>(n * n);
  const int reps = std::max<int>(
      2, static_cast<int>(std::min<int64_t>(50, (int64_t{8} << 30) / (n * n * n) + 2)));
  vulkan::DescriptorArena arena(ctx.device());
  VkCommandBuffer cmd = must(ctx.allocate_command_buffer());
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  vkBeginCommandBuffer(cmd, &bi);
  vulkan::Recorder rec(ctx, arena, cmd);
  for (int r = 0; r < reps; ++r) {
    rec.no_barrier_needed();  // every repetition writes the same C from the same A and B
    must(vulkan::record_gemm(rec, p, 1, A, B, A, C, tile));
  }
  rec.copy(C.handle(), 0, out.handle(), 0, elems * 4);
  rec.barrier();
  vkEndCommandBuffer(cmd);
  must(ctx.submit_and_wait(cmd));  // warm-up (pipeline creation, clocks)
  double best = 1e30;
  for (int t = 0; t < 3; ++t) {
    const auto t0 = Clock::now();
    must(ctx.submit_and_wait(cmd));
    best = std::min(best, seconds_since(t0));
  }
  // Spot-check a few entries against a float64 dot product.
  const auto* c = static_cast<const float*>(out.mapped());
  double worst = 0.0;
  std::mt19937 rng(3);
  for (int s = 0; s < 16; ++s) {
    const int64_t i = rng() % n, j = rng() % n;
    double ref = 0.0;
    for (int64_t k = 0; k < n; ++k) ref += static_cast<double>(a[i * n + k]) * b[k * n + j];
    worst = std::max(worst, std::fabs(ref - c[i * n + j]) / std::sqrt(static_cast<double>(n)));
  }
  const double tflops = 2.0 * static_cast<double>(n) * n * n * reps / best / 1e12;
  const vulkan::GemmTile used = tile != nullptr ? *tile : vulkan::gemm_tile(ctx, n, n, 1);
  fmt::print(
      "{{\"bench\": \"gemm\", \"n\": {}, \"tile\": \"{}x{}\", \"reps\": {}, \"seconds\": {:.6f}, "
      "\"tflops\": {:.3f}, \"max_err_per_sqrt_k\": {:.3g}}}\n",
      n, used.m, used.n, reps, best, tflops, worst);
  ctx.free_command_buffer(cmd);
}

// Pipeline build times of the shaders a ResNet-18 calibration dispatches.
void bench_pipelines(int device) {
  const std::vector<std::pair<std::string, uint32_t>> shaders = {
      {"conv_gemm", 5}, {"conv_gemm_m", 5}, {"conv_gemm_w", 5}, {"conv_gemm_l", 5},
      {"gemm", 4},      {"gemm_m", 4},      {"gemm_l", 4},      {"pool", 2},
      {"binary", 3},    {"unary", 2},       {"minmax", 2},      {"histogram", 2}};
  {
    const auto t_ctx = Clock::now();
    auto ctx = must(vulkan::Context::create(options(device)));
    fmt::print("{{\"bench\": \"context\", \"ms\": {:.1f}}}\n", seconds_since(t_ctx) * 1e3);
    for (const auto& [name, bindings] : shaders) {
      const auto t0 = Clock::now();
      must(ctx->pipeline(name, bindings, 128).status());
      fmt::print("{{\"bench\": \"pipeline\", \"shader\": \"{}\", \"ms\": {:.1f}}}\n", name,
                 seconds_since(t0) * 1e3);
    }
  }
  auto ctx = must(vulkan::Context::create(options(device)));
  const auto t0 = Clock::now();
  must(ctx->prepare_pipelines(shaders));
  fmt::print("{{\"bench\": \"pipelines_parallel\", \"count\": {}, \"ms\": {:.1f}}}\n",
             shaders.size(), seconds_since(t0) * 1e3);
}

// ---- ResNet-18 built in code (what torchvision's resnet18 exports to, BN folded) ----------

struct Builder {
  ir::Model m;
  std::mt19937 rng{7};
  int count = 0;

  std::string conv(const std::string& x, int64_t ic, int64_t oc, int64_t k, int64_t s, int64_t p) {
    const std::string name = fmt::format("conv{}", count++);
    const float scale = std::sqrt(2.0f / static_cast<float>(ic * k * k)) * 1.7f;
    ir::Tensor w(ir::DType::kFloat32, {oc, ic, k, k});
    std::uniform_real_distribution<float> d(-scale, scale);
    for (float& v : w.span<float>()) v = d(rng);
    ir::Tensor b(ir::DType::kFloat32, {oc});
    for (float& v : b.span<float>()) v = d(rng) * 0.1f;
    m.graph.set_initializer(name + ".w", std::move(w));
    m.graph.set_initializer(name + ".b", std::move(b));
    ir::Node n;
    n.op_type = "Conv";
    n.name = name;
    n.inputs = {x, name + ".w", name + ".b"};
    n.outputs = {name + ".y"};
    n.attributes = {ints("kernel_shape", {k, k}), ints("strides", {s, s}),
                    ints("pads", {p, p, p, p})};
    m.graph.nodes.push_back(n);
    return name + ".y";
  }
  std::string op(const std::string& type, std::vector<std::string> in,
                 std::vector<ir::Attribute> attrs = {}) {
    ir::Node n;
    n.op_type = type;
    n.name = fmt::format("{}{}", type, count++);
    n.inputs = std::move(in);
    n.outputs = {n.name + ".y"};
    n.attributes = std::move(attrs);
    m.graph.nodes.push_back(n);
    return n.outputs[0];
  }
  static ir::Attribute ints(std::string name, std::vector<int64_t> v) {
    ir::Attribute a;
    a.name = std::move(name);
    a.type = ir::AttrType::kInts;
    a.ints = std::move(v);
    return a;
  }
  std::string block(const std::string& x, int64_t ic, int64_t oc, int64_t s) {
    std::string y = op("Relu", {conv(x, ic, oc, 3, s, 1)});
    y = conv(y, oc, oc, 3, 1, 1);
    const std::string id = (s != 1 || ic != oc) ? conv(x, ic, oc, 1, s, 0) : x;
    return op("Relu", {op("Add", {y, id})});
  }
};

ir::Model resnet18() {
  Builder b;
  b.m.set_opset("", 13);
  ir::ValueInfo in;
  in.name = "input";
  in.type.dtype = ir::DType::kFloat32;
  b.m.graph.inputs.push_back(in);
  std::string x = b.op("Relu", {b.conv("input", 3, 64, 7, 2, 3)});
  x = b.op("MaxPool", {x}, {Builder::ints("kernel_shape", {3, 3}), Builder::ints("strides", {2, 2}),
                            Builder::ints("pads", {1, 1, 1, 1})});
  int64_t c = 64;
  for (int64_t oc : {64, 128, 256, 512}) {
    x = b.block(x, c, oc, oc == 64 ? 1 : 2);
    x = b.block(x, oc, oc, 1);
    c = oc;
  }
  x = b.op("GlobalAveragePool", {x});
  ir::Attribute axis;
  axis.name = "axis";
  axis.type = ir::AttrType::kInt;
  axis.i = 1;
  x = b.op("Flatten", {x}, {axis});
  ir::Tensor w(ir::DType::kFloat32, {1000, 512}), bias(ir::DType::kFloat32, {1000});
  std::uniform_real_distribution<float> d(-0.05f, 0.05f);
  for (float& v : w.span<float>()) v = d(b.rng);
  for (float& v : bias.span<float>()) v = d(b.rng);
  b.m.graph.set_initializer("fc.w", std::move(w));
  b.m.graph.set_initializer("fc.b", std::move(bias));
  ir::Attribute tb;
  tb.name = "transB";
  tb.type = ir::AttrType::kInt;
  tb.i = 1;
  x = b.op("Gemm", {x, "fc.w", "fc.b"}, {tb});
  ir::ValueInfo out;
  out.name = x;
  b.m.graph.outputs.push_back(out);
  return std::move(b.m);
}

ir::Tensor random_images(int64_t n, uint32_t seed) {
  ir::Tensor t(ir::DType::kFloat32, {n, 3, 224, 224});
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (float& v : t.span<float>()) v = d(rng);
  return t;
}

std::unique_ptr<runtime::Executor> make_executor(const ir::Model& model, bool gpu, int device,
                                                 std::unique_ptr<runtime::Backend>& cpu_backend) {
  if (gpu) {
    vulkan::VulkanOptions o = options(device);
    o.strict = true;
    o.threads = 8;
    return must(vulkan::make_vulkan_executor(model, o));
  }
  cpu_backend = runtime::make_cpu_backend(apps::cpu_backend_options_from_env());
  runtime::ExecutorOptions eo = apps::executor_options_from_env(
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return must(runtime::Executor::create(model, *cpu_backend, eo));
}

void bench_resnet(const ir::Model& model, int64_t batch, bool gpu, int device) {
  std::unique_ptr<runtime::Backend> cpu_backend;
  auto exec = make_executor(model, gpu, device, cpu_backend);
  const ir::Tensor x = random_images(batch, 11);
  const runtime::NamedTensors in = {{"input", x.view()}};
  auto t0 = Clock::now();
  must(exec->run(in).status());
  const double first = seconds_since(t0);
  const int reps = gpu ? 20 : 3;
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    t0 = Clock::now();
    must(exec->run(in).status());
    times.push_back(seconds_since(t0));
  }
  std::sort(times.begin(), times.end());
  fmt::print("{{\"bench\": \"resnet18\", \"backend\": \"{}\", \"batch\": {}, \"first_ms\": {:.2f}, "
             "\"median_ms\": {:.3f}, \"best_ms\": {:.3f}}}\n", gpu ? "vulkan" : "cpu", batch,
             first * 1e3, times[times.size() / 2] * 1e3, times.front() * 1e3);
}

// Both calibration passes over every float activation, entropy at the end.
class Calibration final : public runtime::Observer {
 public:
  std::vector<std::string> wanted(const ir::Graph& g) override {
    std::vector<std::string> names;
    for (const ir::Node& n : g.nodes) names.push_back(n.outputs[0]);
    return names;
  }
  Status observe(const runtime::ObservedTensor& t) override {
    if (first_pass) {
      amax[t.name] = std::max(amax[t.name], t.stats.minmax().abs_max);
    } else {
      auto& h = hist[t.name];
      h.resize(2048, 0);
      t.stats.histogram(amax[t.name], h);
    }
    return Status::ok();
  }
  bool first_pass = true;
  std::map<std::string, double> amax;
  std::map<std::string, std::vector<uint64_t>> hist;
};

void bench_calibration(const ir::Model& model, int64_t samples, int64_t batch, bool gpu,
                       int device) {
  std::unique_ptr<runtime::Backend> cpu_backend;
  auto exec = make_executor(model, gpu, device, cpu_backend);
  const ir::Tensor all = random_images(samples, 12);
  Calibration cal;
  runtime::Observer* obs[] = {&cal};
  const int64_t per = all.size() / samples;
  const auto t0 = Clock::now();
  for (int pass = 0; pass < 2; ++pass) {
    cal.first_pass = pass == 0;
    for (int64_t first = 0; first < samples; first += batch) {
      const int64_t n = std::min(batch, samples - first);
      const ir::Tensor x = ir::Tensor::borrow(ir::DType::kFloat32, {n, 3, 224, 224},
                                              all.data<float>() + first * per);
      must(exec->run({{"input", x}}, obs).status());
    }
  }
  double checksum = 0.0;
  for (const auto& [name, h] : cal.hist) {
    checksum += calib::entropy_amax(calib::HistogramView{cal.amax[name], h}, calib::MethodConfig{});
  }
  fmt::print(
      "{{\"bench\": \"calib_entropy\", \"backend\": \"{}\", \"samples\": {}, \"batch\": {}, "
      "\"tensors\": {}, \"seconds\": {:.3f}, \"amax_sum\": {:.4f}}}\n",
      gpu ? "vulkan" : "cpu", samples, batch, cal.hist.size(), seconds_since(t0), checksum);
}

}  // namespace

int main(int argc, char** argv) {
  apps::set_process_options_from_env();
  std::vector<std::string> args(argv + 1, argv + argc);
  int device = 0;
  bool cpu = false;
  std::optional<vulkan::GemmTile> tile;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--device" && i + 1 < args.size()) device = std::atoi(args[i + 1].c_str());
    if (args[i] == "--cpu") cpu = true;
    if (args[i] == "--tile" && i + 1 < args.size()) {
      const std::string& t = args[i + 1];
      tile = t == "l"   ? vulkan::GemmTile{128, 128, "_l"}
             : t == "w" ? vulkan::GemmTile{64, 256, "_w"}
             : t == "m" ? vulkan::GemmTile{64, 128, "_m"}
                        : vulkan::GemmTile{};
    }
  }
  auto devices = must(vulkan::list_vulkan_devices());
  if (device < 0 || device >= static_cast<int>(devices.size())) {
    fmt::print(stderr, "ptq_vulkan_bench: no Vulkan device {} ({} found)\n", device,
               devices.size());
    return 1;
  }
  const vulkan::DeviceInfo& d = devices[static_cast<size_t>(device)];
  fmt::print("{{\"bench\": \"device\", \"name\": \"{}\", \"driver\": \"{}\", \"api\": \"{}\", "
             "\"subgroup\": {}, \"exact_histograms\": {}}}\n", d.name, d.driver, d.api_version,
             d.subgroup_size, d.int64);
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "gemm") {
      auto ctx = must(vulkan::Context::create(options(device)));
      for (size_t j = i + 1;
           j < args.size() && std::isdigit(static_cast<unsigned char>(args[j][0])); ++j) {
        bench_gemm(*ctx, std::atoll(args[j].c_str()), tile ? &*tile : nullptr);
      }
    } else if (args[i] == "pipelines") {
      bench_pipelines(device);
    } else if (args[i] == "resnet18" && i + 1 < args.size()) {
      const ir::Model model = resnet18();
      const int64_t batch = std::atoll(args[i + 1].c_str());
      bench_resnet(model, batch, true, device);
      if (cpu) bench_resnet(model, batch, false, device);
    } else if (args[i] == "calib" && i + 2 < args.size()) {
      const ir::Model model = resnet18();
      const int64_t samples = std::atoll(args[i + 1].c_str()),
                    batch = std::atoll(args[i + 2].c_str());
      bench_calibration(model, samples, batch, true, device);
      if (cpu) bench_calibration(model, samples, batch, false, device);
    }
  }
  return 0;
}
