// SHA-256's compression function on the x86 SHA extensions (SHA-NI: Intel since Ice Lake
// server / Goldmont, AMD since Zen), chosen at run time: about 5-8x the portable loop, which
// matters because calibration hashes every weight of the model (45 MB for ResNet-18).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ptq::onnx {

// Whether this CPU has the SHA extensions and SSE4.1 (never on non-x86 builds).
bool sha256_x86_available();

// Runs `blocks` 64-byte blocks from `p` through the state h[8] (a, b, ..., h). Only call when
// sha256_x86_available().
void sha256_x86_blocks(uint32_t h[8], const uint8_t* p, size_t blocks);

}  // namespace ptq::onnx
