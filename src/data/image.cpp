#include "image.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include <stb/stb_image.h>

#include "file.h"
#include "image_guard.h"

namespace ptq::data {

namespace {

// torchvision CenterCrop: int(round((size - crop) / 2.0)) with Python's round half to even.
int64_t centre_offset(int64_t size, int64_t crop) {
  const int64_t d = size - crop;
  if (d % 2 == 0) return d / 2;
  const int64_t k = d / 2;  // d > 0 here: (k + 0.5) rounds to the even neighbour
  return k % 2 == 0 ? k : k + 1;
}

// Source index and weight of one output coordinate along an axis (half-pixel centres).
struct Tap {
  int64_t i0, i1;
  double w1;
};

std::vector<Tap> taps(int64_t in, int64_t resized, int64_t offset, int64_t out) {
  std::vector<Tap> t(static_cast<size_t>(out));
  const double scale = static_cast<double>(in) / static_cast<double>(resized);
  for (int64_t o = 0; o < out; ++o) {
    double src = (static_cast<double>(o + offset) + 0.5) * scale - 0.5;
    if (src < 0) src = 0;
    auto i0 = static_cast<int64_t>(src);
    i0 = std::min(i0, in - 1);
    t[static_cast<size_t>(o)] = {i0, std::min(i0 + 1, in - 1), src - static_cast<double>(i0)};
  }
  return t;
}

struct StbFree {
  void operator()(unsigned char* p) const { stbi_image_free(p); }
};

}  // namespace

Expected<Image> decode_image(const std::filesystem::path& path, int channels) {
  PTQ_ASSIGN_OR_RETURN(File file, File::open(path));
  if (file.size() > std::numeric_limits<int>::max()) {
    return invalid_input("'{}': an image file of {} bytes is larger than stb_image reads",
                         path.string(), file.size());
  }
  PTQ_ASSIGN_OR_RETURN(std::string bytes, file.read_string(0, file.size()));
  PTQ_RETURN_IF_ERROR(check_jpeg_tables(bytes, path.string()));
  PTQ_RETURN_IF_ERROR(check_png_chunks(bytes, path.string()));
  int w = 0, h = 0, n = 0;
  std::unique_ptr<unsigned char, StbFree> px(
      stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                            static_cast<int>(bytes.size()), &w, &h, &n, channels));
  if (!px) {
    return invalid_input("'{}': cannot decode image: {}", path.string(), stbi_failure_reason());
  }
  Image img{h, w, channels, {}};
  img.pixels.assign(px.get(), px.get() + static_cast<size_t>(w) * static_cast<size_t>(h) *
                                             static_cast<size_t>(channels));
  return img;
}

Expected<std::pair<int64_t, int64_t>> image_size(const std::filesystem::path& path) {
  PTQ_ASSIGN_OR_RETURN(File file, File::open(path));
  PTQ_RETURN_IF_ERROR(check_jpeg_header_tables(file));
  int w = 0, h = 0, n = 0;
  if (!stbi_info(path.c_str(), &w, &h, &n)) {
    return invalid_input("'{}': not a readable PNG or JPEG image: {}", path.string(),
                         stbi_failure_reason());
  }
  // The densest encoding is a 1-bit PNG (8 pixels a byte) deflated 1032:1; a JPEG needs at
  // least 2 bits per 8x8 block. A header claiming more pixels than that is corrupt, and the
  // samples (sized by the first image) must not be allocated from it.
  constexpr int64_t kMaxPixelsPerByte = 8 * 1032;
  if (int64_t{w} * h / kMaxPixelsPerByte > file.size()) {
    return invalid_input("'{}': corrupt image ({}x{} pixels cannot be encoded in {} bytes)",
                         path.string(), w, h, file.size());
  }
  return std::pair<int64_t, int64_t>{h, w};
}

Status expand_normalisation(ImagePlan& plan) {
  auto expand = [&](std::vector<double>& v, double fallback, const char* name) -> Status {
    if (v.empty()) v.assign(static_cast<size_t>(plan.channels), fallback);
    if (v.size() == 1) v.assign(static_cast<size_t>(plan.channels), v[0]);
    if (static_cast<int64_t>(v.size()) != plan.channels) {
      return invalid_input("--{} has {} values but the images have {} channels", name, v.size(),
                           plan.channels);
    }
    return {};
  };
  PTQ_RETURN_IF_ERROR(expand(plan.mean, 0.0, "mean"));
  PTQ_RETURN_IF_ERROR(expand(plan.stddev, 1.0, "std"));
  for (double s : plan.stddev) {
    if (s == 0.0 || !std::isfinite(s))
      return invalid_input("--std values must be finite and non-zero");
  }
  return {};
}

Expected<Geometry> plan_geometry(const ImagePlan& plan, int64_t h, int64_t w,
                                 const std::string& what) {
  Geometry g{h, w, 0, 0, h, w};
  if (plan.resize.size() == 2) {
    g.resized_h = plan.resize[0];
    g.resized_w = plan.resize[1];
  } else if (plan.resize.size() == 1) {
    const int64_t s = plan.resize[0];
    if (h <= w) {
      g.resized_h = s;
      g.resized_w = s * w / h;
    } else {
      g.resized_w = s;
      g.resized_h = s * h / w;
    }
  }
  g.out_h = g.resized_h;
  g.out_w = g.resized_w;
  if (plan.crop.size() == 2) {
    if (plan.crop[0] > g.resized_h || plan.crop[1] > g.resized_w) {
      return invalid_input("{}: image of {}x{} (resized to {}x{}) is smaller than the {}x{} crop",
                           what, h, w, g.resized_h, g.resized_w, plan.crop[0], plan.crop[1]);
    }
    g.out_h = plan.crop[0];
    g.out_w = plan.crop[1];
    g.top = centre_offset(g.resized_h, g.out_h);
    g.left = centre_offset(g.resized_w, g.out_w);
  }
  if (g.out_h <= 0 || g.out_w <= 0) {
    return invalid_input("{}: image of {}x{} gives an empty {}x{} sample", what, h, w, g.out_h,
                         g.out_w);
  }
  return g;
}

void preprocess(const Image& image, const ImagePlan& plan, const Geometry& g, float* dst) {
  const std::vector<Tap> ys = taps(image.height, g.resized_h, g.top, g.out_h);
  const std::vector<Tap> xs = taps(image.width, g.resized_w, g.left, g.out_w);
  const int64_t c_n = plan.channels;
  const int64_t row = image.width * image.channels;
  const uint8_t* px = image.pixels.data();
  const double unit = plan.scale / 255.0;
  for (int64_t c = 0; c < c_n; ++c) {
    const int64_t src_c = plan.bgr && c_n == 3 ? 2 - c : c;
    const double mean = plan.mean[static_cast<size_t>(c)];
    const double inv_std = 1.0 / plan.stddev[static_cast<size_t>(c)];
    for (int64_t y = 0; y < g.out_h; ++y) {
      const Tap& ty = ys[static_cast<size_t>(y)];
      const uint8_t* r0 = px + ty.i0 * row + src_c;
      const uint8_t* r1 = px + ty.i1 * row + src_c;
      for (int64_t x = 0; x < g.out_w; ++x) {
        const Tap& tx = xs[static_cast<size_t>(x)];
        const int64_t a = tx.i0 * image.channels, b = tx.i1 * image.channels;
        const double top = r0[a] + tx.w1 * (r0[b] - r0[a]);
        const double bottom = r1[a] + tx.w1 * (r1[b] - r1[a]);
        const double v = (top + ty.w1 * (bottom - top)) * unit;
        const int64_t at = plan.layout == Layout::kNCHW ? (c * g.out_h + y) * g.out_w + x
                                                        : (y * g.out_w + x) * c_n + c;
        dst[at] = static_cast<float>((v - mean) * inv_std);
      }
    }
  }
}

}  // namespace ptq::data
