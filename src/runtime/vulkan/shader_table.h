// The embedded SPIR-V of the compute shaders (generated shader_table.cpp in the build folder).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ptq::vulkan {

struct ShaderCode {
  std::string_view name;
  const uint32_t* words;
  size_t bytes;
};

// The shader compiled under `name` in CMakeLists.txt's PTQ_SHADERS list, or null.
const ShaderCode* find_shader(std::string_view name);

}  // namespace ptq::vulkan
