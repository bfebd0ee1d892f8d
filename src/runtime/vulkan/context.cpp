// Instance, device choice, queue and features; the device list of `ptq info --devices`.
#include "context.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include <fmt/format.h>

#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>
#include <link.h>

#include <string_view>
#endif

#include "ptq/runtime/task_pool.h"
#include "shader_table.h"
#include "timing.h"

namespace ptq::vulkan {

namespace {

const char* result_name(VkResult r) {
  switch (r) {
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult";
  }
}

std::string version_str(uint32_t v) {
  return fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
                     VK_API_VERSION_PATCH(v));
}

// Sanitized builds only. The Vulkan loader unloads its drivers and layers when an instance is
// destroyed, long before LeakSanitizer reports at exit; a leak of theirs then has no module to
// name, so tests/vulkan/lsan.supp cannot match it (Mesa 22.3.6's lavapipe leaks 128 bytes so).
// Kept loaded (RTLD_NODELETE), their globals still reach what they allocated.
void keep_drivers_loaded() {
#if defined(__SANITIZE_ADDRESS__)
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void*) {
        const std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (name.find("libvulkan_") != std::string_view::npos ||
            name.find("libVkLayer_") != std::string_view::npos) {
          dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        }
        return 0;
      },
      nullptr);
#endif
}

Expected<VkInstance> create_instance() {
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "ptqkit";
  app.pEngineName = "ptqkit";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  const VkResult r = vkCreateInstance(&ci, nullptr, &instance);
  if (r != VK_SUCCESS) {
    return runtime_error("no usable Vulkan loader or driver (vkCreateInstance: {})",
                         result_name(r));
  }
  keep_drivers_loaded();
  return instance;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(instance, &n, nullptr);
  std::vector<VkPhysicalDevice> out(n);
  vkEnumeratePhysicalDevices(instance, &n, out.data());
  out.resize(n);
  return out;
}

int compute_queue_family(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> fams(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, fams.data());
  // Prefer a queue family with compute (graphics queues can compute too).
  for (uint32_t i = 0; i < n; ++i) {
    if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return static_cast<int>(i);
  }
  return -1;
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
  }
}

bool has_extension(VkPhysicalDevice pd, std::string_view name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data());
  return std::any_of(exts.begin(), exts.end(),
                     [&](const VkExtensionProperties& e) { return name == e.extensionName; });
}

DeviceInfo describe(VkPhysicalDevice pd, int index) {
  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  VkPhysicalDeviceDriverProperties driver{};
  driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  driver.pNext = &subgroup;
  VkPhysicalDeviceProperties2 props{};
  props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  VkPhysicalDeviceProperties base{};
  vkGetPhysicalDeviceProperties(pd, &base);
  const bool v11 = base.apiVersion >= VK_API_VERSION_1_1;
  const bool v12 = base.apiVersion >= VK_API_VERSION_1_2;
  if (v12) props.pNext = &driver;
  else if (v11) props.pNext = &subgroup;
  if (v11) vkGetPhysicalDeviceProperties2(pd, &props);
  else props.properties = base;
  VkPhysicalDeviceFeatures features{};
  vkGetPhysicalDeviceFeatures(pd, &features);
  VkPhysicalDeviceMemoryProperties mem{};
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);

  DeviceInfo info;
  info.index = index;
  info.name = props.properties.deviceName;
  info.type = type_name(props.properties.deviceType);
  info.api_version = version_str(props.properties.apiVersion);
  if (v12) info.driver = fmt::format("{} {}", driver.driverName, driver.driverInfo);
  info.vendor_id = props.properties.vendorID;
  info.device_id = props.properties.deviceID;
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i) {
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) {
      info.device_local_bytes = std::max<int64_t>(info.device_local_bytes,
                                                  static_cast<int64_t>(mem.memoryHeaps[i].size));
    }
  }
  info.subgroup_size = v11 ? subgroup.subgroupSize : 0;
  info.max_shared_memory = props.properties.limits.maxComputeSharedMemorySize;
  info.max_storage_buffer_range = props.properties.limits.maxStorageBufferRange;
  info.float64 = features.shaderFloat64 == VK_TRUE;
  info.int64 = features.shaderInt64 == VK_TRUE;
  info.cooperative_matrix = has_extension(pd, "VK_KHR_cooperative_matrix") ||
                            has_extension(pd, "VK_NV_cooperative_matrix");
  info.usable = v12 && compute_queue_family(pd) >= 0;
  return info;
}

}  // namespace

Status vk_status(VkResult r, std::string_view what) {
  if (r == VK_SUCCESS) return Status::ok();
  std::string_view call = what.substr(0, what.find('('));
  return runtime_error("vulkan: {} failed: {}", call, result_name(r));
}

Expected<std::vector<DeviceInfo>> list_vulkan_devices() {
  PTQ_ASSIGN_OR_RETURN(VkInstance instance, create_instance());
  std::vector<DeviceInfo> out;
  int index = 0;
  for (VkPhysicalDevice pd : physical_devices(instance)) out.push_back(describe(pd, index++));
  vkDestroyInstance(instance, nullptr);
  return out;
}

Expected<std::unique_ptr<Context>> Context::create(const VulkanOptions& options) {
  std::unique_ptr<Context> ctx(new Context());
  ctx->timing_ = options.timing;
  PTQ_RETURN_IF_ERROR(ctx->init(options.device, options.pipeline_cache_dir));
  return ctx;
}

Status Context::init(int index, const std::string& cache_dir) {
  const auto t0 = std::chrono::steady_clock::now();
  PTQ_ASSIGN_OR_RETURN(instance_, create_instance());
  const double instance_ms = ms_since(t0);
  const std::vector<VkPhysicalDevice> devices = physical_devices(instance_);
  if (devices.empty()) return runtime_error("vulkan: the loader found no device");
  if (index < 0 || index >= static_cast<int>(devices.size())) {
    // A bad index is bad input (exit 3), like a missing file.
    return invalid_input("vulkan: no device {} (there are {}; see ptq info --devices)", index,
                         devices.size());
  }
  physical_ = devices[static_cast<size_t>(index)];
  info_ = describe(physical_, index);
  if (!info_.usable) {
    return runtime_error("vulkan: device {} '{}' is not usable (needs Vulkan 1.2 and a compute "
                         "queue; it has {})", index, info_.name, info_.api_version);
  }
  vkGetPhysicalDeviceProperties(physical_, &props_);
  vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
  queue_family_ = static_cast<uint32_t>(compute_queue_family(physical_));

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{};
  qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qci.queueFamilyIndex = queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkPhysicalDeviceFeatures features{};
  features.shaderInt64 = info_.int64 ? VK_TRUE : VK_FALSE;
  features.shaderFloat64 = info_.float64 ? VK_TRUE : VK_FALSE;
  VkDeviceCreateInfo dci{};
  dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.pEnabledFeatures = &features;
  const auto t1 = std::chrono::steady_clock::now();
  PTQ_VK(vkCreateDevice(physical_, &dci, nullptr, &device_));
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  const double device_ms = ms_since(t1);

  VkCommandPoolCreateInfo pci{};
  pci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = queue_family_;
  PTQ_VK(vkCreateCommandPool(device_, &pci, nullptr, &command_pool_));
  VkFenceCreateInfo fci{};
  fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  PTQ_VK(vkCreateFence(device_, &fci, nullptr, &fence_));
  const auto t2 = std::chrono::steady_clock::now();
  open_pipeline_cache(cache_dir);
  if (pipeline_cache_ == VK_NULL_HANDLE) {
    VkPipelineCacheCreateInfo cci{};
    cci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
    PTQ_VK(vkCreatePipelineCache(device_, &cci, nullptr, &pipeline_cache_));
  }
  if (timing_) {
    fmt::print(stderr,
               "ptq: vulkan: started in {:.1f} ms: instance {:.1f} ms, device {:.1f} ms, "
               "pipeline cache {:.1f} ms ({} bytes read)\n",
               ms_since(t0), instance_ms, device_ms, ms_since(t2), cache_loaded_bytes_);
  }
  return Status::ok();
}

std::string default_pipeline_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    return (std::filesystem::path(x) / "ptqkit").string();
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return (std::filesystem::path(h) / ".cache" / "ptqkit").string();
  }
  return {};
}

// Compiled pipelines persist across runs in a VkPipelineCache file per device and driver (the
// driver checks the header too). The cache is an optimisation: any failure to read or write
// it only costs compile time.
void Context::open_pipeline_cache(const std::string& cache_dir) {
  if (cache_dir.empty()) return;
  const std::filesystem::path dir(cache_dir);
  std::string uuid;
  for (uint8_t byte : props_.pipelineCacheUUID) uuid += fmt::format("{:02x}", byte);
  cache_file_ =
      (dir / fmt::format("pipelines-{:04x}-{:04x}-{}.bin", props_.vendorID, props_.deviceID, uuid))
          .string();
  std::vector<char> data;
  if (std::ifstream in(cache_file_, std::ios::binary); in) {
    data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  VkPipelineCacheCreateInfo cci{};
  cci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  cci.initialDataSize = data.size();
  cci.pInitialData = data.empty() ? nullptr : data.data();
  if (vkCreatePipelineCache(device_, &cci, nullptr, &pipeline_cache_) != VK_SUCCESS) {
    pipeline_cache_ = VK_NULL_HANDLE;  // unusable data: start empty
    return;
  }
  cache_loaded_bytes_ = data.size();
}

void Context::save_pipeline_cache() {
  if (cache_file_.empty() || pipeline_cache_ == VK_NULL_HANDLE) return;
  size_t size = 0;
  if (vkGetPipelineCacheData(device_, pipeline_cache_, &size, nullptr) != VK_SUCCESS) return;
  if (size <= cache_loaded_bytes_) return;  // nothing new was compiled
  std::vector<char> data(size);
  if (vkGetPipelineCacheData(device_, pipeline_cache_, &size, data.data()) != VK_SUCCESS) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(cache_file_).parent_path(), ec);
  // Write a private file and rename it over the cache, so concurrent runs never see half a file.
  const std::string tmp = fmt::format("{}.{}.tmp", cache_file_, static_cast<const void*>(this));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out.write(data.data(), static_cast<std::streamsize>(size));
    if (!out) {
      out.close();
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, cache_file_, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

Context::~Context() {
  const auto t0 = std::chrono::steady_clock::now();
  double cache_ms = 0.0, device_ms = 0.0;
  if (device_ != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device_);
    pipelines_.clear();
    const auto t1 = std::chrono::steady_clock::now();
    save_pipeline_cache();
    cache_ms = ms_since(t1);
    if (pipeline_cache_ != VK_NULL_HANDLE)
      vkDestroyPipelineCache(device_, pipeline_cache_, nullptr);
    if (fence_ != VK_NULL_HANDLE) vkDestroyFence(device_, fence_, nullptr);
    if (command_pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(device_, command_pool_, nullptr);
    const auto t2 = std::chrono::steady_clock::now();
    vkDestroyDevice(device_, nullptr);
    device_ms = ms_since(t2);
  }
  if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
  if (timing_ && device_ != VK_NULL_HANDLE) {
    fmt::print(stderr, "ptq: vulkan: stopped in {:.1f} ms: pipeline cache saved {:.1f} ms, device "
               "destroyed {:.1f} ms\n", ms_since(t0), cache_ms, device_ms);
  }
}

Expected<uint32_t> Context::memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                                        VkMemoryPropertyFlags preferred) const {
  int fallback = -1;
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    const VkMemoryPropertyFlags f = memory_.memoryTypes[i].propertyFlags;
    if ((f & required) != required) continue;
    if ((f & preferred) == preferred) return i;
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  if (fallback < 0) return runtime_error("vulkan: no memory type with flags {:#x}", required);
  return static_cast<uint32_t>(fallback);
}

Expected<const Pipeline*> Context::pipeline(std::string_view name, uint32_t bindings,
                                            uint32_t push_bytes) {
  auto it = pipelines_.find(std::string(name));
  if (it != pipelines_.end()) return static_cast<const Pipeline*>(it->second.get());
  PTQ_ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> p, build_pipeline(name, bindings, push_bytes));
  const Pipeline* out = p.get();
  pipelines_.emplace(std::string(name), std::move(p));
  return out;
}

Status Context::prepare_pipelines(const std::vector<std::pair<std::string, uint32_t>>& shaders) {
  std::vector<std::pair<std::string, uint32_t>> todo;
  for (const auto& s : shaders) {
    const bool queued =
        std::any_of(todo.begin(), todo.end(), [&](const auto& t) { return t.first == s.first; });
    if (!queued && pipelines_.count(s.first) == 0) todo.push_back(s);
  }
  if (todo.empty()) return Status::ok();
  std::vector<Expected<std::unique_ptr<Pipeline>>> built;
  built.reserve(todo.size());
  for (size_t i = 0; i < todo.size(); ++i)
    built.emplace_back(runtime_error("vulkan: pipeline not built"));
  const int workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto build = [&](int64_t i) {
    const auto& [name, bindings] = todo[static_cast<size_t>(i)];
    built[static_cast<size_t>(i)] = build_pipeline(name, bindings, 128);
  };
  runtime::run_tasks(workers, static_cast<int64_t>(todo.size()), build);
  for (size_t i = 0; i < todo.size(); ++i) {
    if (!built[i].has_value()) return built[i].status();
    pipelines_.emplace(todo[i].first, std::move(built[i]).value());
  }
  return Status::ok();
}

// vkCreateComputePipelines may run on several threads at once (the pipeline cache is
// internally synchronized); nothing else here touches shared state.
Expected<std::unique_ptr<Pipeline>> Context::build_pipeline(std::string_view name,
                                                            uint32_t bindings,
                                                            uint32_t push_bytes) const {
  const ShaderCode* code = find_shader(name);
  if (code == nullptr) return runtime_error("vulkan: no embedded shader '{}'", name);
  auto p = std::make_unique<Pipeline>(device_);
  p->bindings = bindings;
  p->push_bytes = push_bytes;

  VkShaderModuleCreateInfo mci{};
  mci.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  mci.codeSize = code->bytes;
  mci.pCode = code->words;
  PTQ_VK(vkCreateShaderModule(device_, &mci, nullptr, &p->module));

  std::vector<VkDescriptorSetLayoutBinding> b(bindings);
  for (uint32_t i = 0; i < bindings; ++i) {
    b[i] = VkDescriptorSetLayoutBinding{i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                                        VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  }
  VkDescriptorSetLayoutCreateInfo lci{};
  lci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  lci.bindingCount = bindings;
  lci.pBindings = b.data();
  PTQ_VK(vkCreateDescriptorSetLayout(device_, &lci, nullptr, &p->set_layout));

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  VkPipelineLayoutCreateInfo plci{};
  plci.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  plci.setLayoutCount = 1;
  plci.pSetLayouts = &p->set_layout;
  plci.pushConstantRangeCount = push_bytes > 0 ? 1 : 0;
  plci.pPushConstantRanges = push_bytes > 0 ? &range : nullptr;
  PTQ_VK(vkCreatePipelineLayout(device_, &plci, nullptr, &p->layout));

  VkComputePipelineCreateInfo cpci{};
  cpci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpci.stage.module = p->module;
  cpci.stage.pName = "main";
  cpci.layout = p->layout;
  PTQ_VK(vkCreateComputePipelines(device_, pipeline_cache_, 1, &cpci, nullptr, &p->pipeline));
  return p;
}

Pipeline::~Pipeline() {
  if (pipeline != VK_NULL_HANDLE) vkDestroyPipeline(device_, pipeline, nullptr);
  if (layout != VK_NULL_HANDLE) vkDestroyPipelineLayout(device_, layout, nullptr);
  if (set_layout != VK_NULL_HANDLE) vkDestroyDescriptorSetLayout(device_, set_layout, nullptr);
  if (module != VK_NULL_HANDLE) vkDestroyShaderModule(device_, module, nullptr);
}

Expected<VkCommandBuffer> Context::allocate_command_buffer() {
  VkCommandBufferAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ai.commandPool = command_pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  PTQ_VK(vkAllocateCommandBuffers(device_, &ai, &cmd));
  return cmd;
}

void Context::free_command_buffer(VkCommandBuffer cmd) {
  if (cmd != VK_NULL_HANDLE) vkFreeCommandBuffers(device_, command_pool_, 1, &cmd);
}

Status Context::submit_and_wait(VkCommandBuffer cmd) {
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  PTQ_VK(vkResetFences(device_, 1, &fence_));
  PTQ_VK(vkQueueSubmit(queue_, 1, &si, fence_));
  PTQ_VK(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX));
  return Status::ok();
}

}  // namespace ptq::vulkan
