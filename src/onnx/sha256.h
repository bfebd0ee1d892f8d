// SHA-256 (FIPS 180-4), streaming. Small and dependency-free: the graph hash that calibration
// caches record must not depend on which crypto library a machine has.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ptq::onnx {

class Sha256 {
 public:
  // kBest uses the CPU's SHA extensions where it has them (sha256_x86.h); kPortable never
  // does (tests compare the two).
  enum class Impl { kBest, kPortable };
  explicit Sha256(Impl impl = Impl::kBest);
  void update(const void* data, size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  // Finishes the hash; the object must not be updated afterwards.
  std::array<uint8_t, 32> digest();
  std::string hex_digest();

 private:
  void blocks(const uint8_t* p, size_t n);
  void block(const uint8_t* p);

  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
  bool hardware_ = false;
};

}  // namespace ptq::onnx
