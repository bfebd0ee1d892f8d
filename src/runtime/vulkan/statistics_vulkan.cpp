#include "statistics_vulkan.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "recorder.h"

namespace ptq::vulkan {

namespace {

constexpr size_t kBins = 2048;

float key_to_float(uint32_t key) {
  const uint32_t bits = (key & 0x80000000u) != 0 ? key & 0x7fffffffu : ~key;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

runtime::MinMaxStats decode_minmax(const uint32_t* slot) {
  runtime::MinMaxStats s;
  if (slot[4] != 0) {
    s.min = static_cast<double>(key_to_float(~slot[0])) + 0.0;
    s.max = static_cast<double>(key_to_float(slot[1])) + 0.0;
  }
  s.abs_max = std::max(std::fabs(s.min), std::fabs(s.max));
  s.nonfinite = slot[2];
  s.first_nonfinite = slot[2] != 0 ? static_cast<int64_t>(~slot[3]) : -1;
  return s;
}

bool HistogramRunner::exact_for(double T) const {
  return !(T > 0.0) ||
         (ctx_.exact_histograms() && std::isfinite(T) && static_cast<double>(static_cast<float>(T)) == T);
}

Status HistogramRunner::run(const DeviceTensor& t, double T, std::span<uint64_t> counts) {
  if (t.dtype != ir::DType::kFloat32) return runtime_error("vulkan: histogram of a non-float32 tensor");
  if (counts.size() != kBins) return runtime_error("vulkan: histograms have {} bins", kBins);
  if (!counts_.valid()) {
    PTQ_ASSIGN_OR_RETURN(counts_, Buffer::create(ctx_, kBins * 4, Buffer::Kind::kDevice));
    PTQ_ASSIGN_OR_RETURN(staging_, Buffer::create(ctx_, kBins * 4, Buffer::Kind::kStaging));
  }
  struct {
    uint32_t n, t_bits;
    float t;
    uint32_t zero_range;
  } push{};
  push.n = static_cast<uint32_t>(t.size());
  push.t = static_cast<float>(T);
  std::memcpy(&push.t_bits, &push.t, 4);
  push.zero_range = T > 0.0 ? 0 : 1;
  const bool exact = ctx_.exact_histograms() && exact_for(T);

  PTQ_ASSIGN_OR_RETURN(VkCommandBuffer cmd, ctx_.allocate_command_buffer());
  Status st = [&]() -> Status {
    DescriptorArena descriptors(ctx_.device());
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    PTQ_VK(vkBeginCommandBuffer(cmd, &bi));
    Recorder rec(ctx_, descriptors, cmd);
    rec.fill(counts_.handle(), 0, kBins * 4, 0);
    PTQ_RETURN_IF_ERROR(rec.dispatch(exact ? "histogram" : "histogram_f32", {t, counts_}, push,
                                     groups_for(t.size(), 256, 512)));
    rec.copy(counts_.handle(), 0, staging_.handle(), 0, kBins * 4);
    rec.barrier();
    PTQ_VK(vkEndCommandBuffer(cmd));
    return ctx_.submit_and_wait(cmd);
  }();
  ctx_.free_command_buffer(cmd);
  PTQ_RETURN_IF_ERROR(st);
  const auto* c = static_cast<const uint32_t*>(staging_.mapped());
  for (size_t b = 0; b < kBins; ++b) counts[b] += c[b];
  return Status::ok();
}

void VulkanTensorStatistics::histogram(double T, std::span<uint64_t> counts) const {
  Status st = runner_.run(t_, T, counts);
  if (!st.is_ok() && error_.is_ok()) error_ = st;
}

}  // namespace ptq::vulkan
