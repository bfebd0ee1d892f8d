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
  return !(T > 0.0) || (ctx_.exact_histograms() && std::isfinite(T) &&
                        static_cast<double>(static_cast<float>(T)) == T);
}

namespace {

constexpr size_t kSlotBytes = kBins * sizeof(uint32_t);

struct HistogramPush {
  uint32_t n, t_bits;
  float t;
  uint32_t zero_range;
};

void add_counts(const uint32_t* from, std::span<uint64_t> counts) {
  for (size_t b = 0; b < kBins; ++b) counts[b] += from[b];
}

}  // namespace

Status HistogramRunner::grow(size_t jobs) {
  if (jobs <= slots_) return Status::ok();
  PTQ_ASSIGN_OR_RETURN(counts_, Buffer::create(ctx_, jobs * kSlotBytes, Buffer::Kind::kDevice));
  PTQ_ASSIGN_OR_RETURN(staging_, Buffer::create(ctx_, jobs * kSlotBytes, Buffer::Kind::kStaging));
  slots_ = jobs;
  return Status::ok();
}

Status HistogramRunner::record(Recorder& rec, const DeviceTensor& t, double T, size_t slot) {
  HistogramPush push{};
  push.n = static_cast<uint32_t>(t.size());
  push.t = static_cast<float>(T);
  std::memcpy(&push.t_bits, &push.t, 4);
  push.zero_range = T > 0.0 ? 0 : 1;
  const bool exact = ctx_.exact_histograms() && exact_for(T);
  const Binding counts(counts_.handle(), slot * kSlotBytes, kSlotBytes);
  return rec.dispatch(exact ? "histogram" : "histogram_f32", {t, counts}, push,
                      groups_for(t.size(), 256, 512));
}

// Runs `jobs` into slots 0.. of the staging buffer: one command buffer, one wait. The jobs
// write disjoint slots and only read their tensors, so no barrier separates them.
Status HistogramRunner::submit(std::span<const HistogramJob> jobs) {
  for (const HistogramJob& job : jobs) {
    if (job.tensor.dtype != ir::DType::kFloat32)
      return runtime_error("vulkan: histogram of a non-float32 tensor");
  }
  PTQ_RETURN_IF_ERROR(grow(jobs.size()));
  PTQ_ASSIGN_OR_RETURN(VkCommandBuffer cmd, ctx_.allocate_command_buffer());
  Status st = [&]() -> Status {
    DescriptorArena descriptors(ctx_.device());
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    PTQ_VK(vkBeginCommandBuffer(cmd, &bi));
    Recorder rec(ctx_, descriptors, cmd);
    rec.fill(counts_.handle(), 0, jobs.size() * kSlotBytes, 0);
    for (size_t j = 0; j < jobs.size(); ++j) {
      if (j > 0) rec.no_barrier_needed();
      PTQ_RETURN_IF_ERROR(record(rec, jobs[j].tensor, jobs[j].T, j));
    }
    rec.copy(counts_.handle(), 0, staging_.handle(), 0, jobs.size() * kSlotBytes);
    rec.barrier();
    PTQ_VK(vkEndCommandBuffer(cmd));
    return ctx_.submit_and_wait(cmd);
  }();
  ctx_.free_command_buffer(cmd);
  return st;
}

Status HistogramRunner::run(const std::string& name, const DeviceTensor& t, double T,
                            std::span<uint64_t> counts) {
  if (counts.size() != kBins) return runtime_error("vulkan: histograms have {} bins", kBins);
  asked_[name].push_back(T);
  if (auto it = ready_.find({name, T}); it != ready_.end()) {
    add_counts(it->second.data(), counts);
    return Status::ok();
  }
  const HistogramJob job{name, t, T};
  PTQ_RETURN_IF_ERROR(submit(std::span(&job, 1)));
  add_counts(static_cast<const uint32_t*>(staging_.mapped()), counts);
  return Status::ok();
}

Status HistogramRunner::prefetch(std::span<const std::pair<std::string, DeviceTensor>> tensors) {
  ready_.clear();
  std::vector<HistogramJob> jobs;
  for (const auto& [name, t] : tensors) {
    auto it = asked_.find(name);
    if (it == asked_.end()) continue;
    std::vector<double> ranges = std::move(it->second);
    asked_.erase(it);
    std::sort(ranges.begin(), ranges.end());
    ranges.erase(std::unique(ranges.begin(), ranges.end()), ranges.end());
    for (double T : ranges) {
      if (std::isfinite(T)) jobs.push_back({name, t, T});
    }
  }
  if (jobs.empty()) return Status::ok();
  PTQ_RETURN_IF_ERROR(submit(jobs));
  const auto* slots = static_cast<const uint32_t*>(staging_.mapped());
  for (size_t j = 0; j < jobs.size(); ++j) {
    const uint32_t* from = slots + j * kBins;
    ready_[{jobs[j].name, jobs[j].T}] = std::vector<uint32_t>(from, from + kBins);
  }
  return Status::ok();
}

void VulkanTensorStatistics::histogram(double T, std::span<uint64_t> counts) const {
  Status st = runner_.run(name_, t_, T, counts);
  if (!st.is_ok() && error_.is_ok()) error_ = st;
}

}  // namespace ptq::vulkan
