// Image decoding (stb_image) and the preprocessing pipeline of ImageOptions (see ptq/data.h):
// bilinear resize with half-pixel centres, centre crop, scale, mean/std, RGB/BGR, NCHW/NHWC.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ptq/data.h"
#include "ptq/status.h"

namespace ptq::data {

// 8-bit pixels, rows of width x channels (HWC).
struct Image {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
  std::vector<uint8_t> pixels;
};

// Decodes a PNG or JPEG into `channels` (1: stb's luma, 3: RGB) channels.
Expected<Image> decode_image(const std::filesystem::path& path, int channels);
// Reads only the header: {height, width}.
Expected<std::pair<int64_t, int64_t>> image_size(const std::filesystem::path& path);

// The settled pipeline for one input.
struct ImagePlan {
  int64_t channels = 3;           // 1 or 3
  Layout layout = Layout::kNCHW;
  std::vector<int64_t> resize;    // {}, {S} or {H, W}
  std::vector<int64_t> crop;      // {} or {H, W}
  double scale = 1.0;
  std::vector<double> mean;       // one per channel
  std::vector<double> stddev;     // one per channel
  bool bgr = false;
};

// Where one image of h x w lands: its resized size and the crop window in it.
struct Geometry {
  int64_t resized_h = 0, resized_w = 0;
  int64_t top = 0, left = 0;
  int64_t out_h = 0, out_w = 0;
};

// Fills mean/stddev to one value per channel; errors name the option.
Status expand_normalisation(ImagePlan& plan);
// The geometry for an image of h x w; an image smaller than the crop is an error naming `what`.
Expected<Geometry> plan_geometry(const ImagePlan& plan, int64_t h, int64_t w,
                                 const std::string& what);
// Writes out_h x out_w x channels floats in the plan's layout (one sample, no batch axis).
void preprocess(const Image& image, const ImagePlan& plan, const Geometry& g, float* dst);

}  // namespace ptq::data
