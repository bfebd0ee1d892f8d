#include "sha256.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "ptq/onnx.h"

// FIPS 180-2 appendix B test vectors.
TEST(Sha256, FipsVectors) {
  EXPECT_EQ(ptq::onnx::sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(ptq::onnx::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(ptq::onnx::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(ptq::onnx::sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// The SHA-extension path (where this CPU has it) against the portable loop, on random bytes of
// every length 0..300 and a few large ones, fed in random-sized pieces.
TEST(Sha256, HardwarePathMatchesPortable) {
  using ptq::onnx::Sha256;
  std::mt19937 rng(7);
  std::vector<uint8_t> bytes(1 << 20);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 300; ++n) lengths.push_back(n);
  for (size_t n : {4095u, 65536u, 1000003u}) lengths.push_back(n);
  for (size_t n : lengths) {
    Sha256 best, portable(Sha256::Impl::kPortable);
    for (size_t at = 0; at < n;) {
      const size_t piece = std::min<size_t>(n - at, rng() % 200);
      best.update(bytes.data() + at, piece);
      portable.update(bytes.data() + at, piece);
      at += piece;
    }
    ASSERT_EQ(best.hex_digest(), portable.hex_digest()) << n << " bytes";
  }
}
