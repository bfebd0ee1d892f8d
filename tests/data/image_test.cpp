// Image folders: PNG/JPEG decoding and the preprocessing pipeline, checked against the
// independent float64 NumPy reference tests/reference/image_preprocess.py.
//
// Tolerance: the pipeline computes in double and rounds once to float32, so it must agree
// with the float64 reference to |got - want| <= 1e-6 * max(1, |want|) (float32 carries ~6e-8).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "image.h"
#include "test_util.h"

namespace ptq::data::test {
namespace {

using ir::DType;

std::vector<fs::path> fixture_images() {
  return {fixtures() / "images" / "img_0.png", fixtures() / "images" / "img_1.png",
          fixtures() / "images" / "img_2.png"};
}

// Runs the reference on `images` with `args`; returns its float64 output.
ir::Tensor reference(const std::string& args, const std::vector<fs::path>& images) {
  TempDir out;
  std::string cmd =
      fmt::format("reference/image_preprocess.py '{}' {}", (out / "ref.npy").string(), args);
  for (const fs::path& p : images) cmd += " '" + p.string() + "'";
  EXPECT_EQ(python(cmd), 0) << cmd;
  auto t = load_npy(out / "ref.npy");
  EXPECT_TRUE(t.has_value()) << t.status().message();
  return t.has_value() ? std::move(*t) : ir::Tensor();
}

// Every sample of a bound dataset against the reference, within `tol` relative (see top).
void expect_matches(const Dataset& ds, const ir::Tensor& want, double tol = 1e-6) {
  auto got = ds.read(0, ds.size());
  ASSERT_TRUE(got.has_value()) << got.status().message();
  const ir::Tensor& t = (*got)[0].second;
  ASSERT_EQ(t.dtype(), DType::kFloat32);
  ASSERT_EQ(t.shape(), want.shape());
  const float* g = t.data<float>();
  const double* w = want.data<double>();
  double worst = 0.0;
  for (int64_t i = 0; i < t.size(); ++i) {
    worst = std::max(worst, std::abs(g[i] - w[i]) / std::max(1.0, std::abs(w[i])));
  }
  EXPECT_LE(worst, tol);
  std::printf("worst relative difference %.3g (tolerance %.3g)\n", worst, tol);
}

Dataset open_bound(const DatasetSpec& spec, const ir::Graph& g) {
  auto ds = Dataset::open(spec);
  EXPECT_TRUE(ds.has_value()) << ds.status().message();
  Status s = ds->bind(g);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return std::move(*ds);
}

TEST(Image, DecodesPngExactly) {
  for (int i = 0; i < 3; ++i) {
    auto img = decode_image(fixtures() / "images" / fmt::format("img_{}.png", i), 3);
    ASSERT_TRUE(img.has_value()) << img.status().message();
    auto px = load_npy(fixtures() / fmt::format("img_{}.pixels.npy", i));
    ASSERT_TRUE(px.has_value());
    EXPECT_EQ(px->shape(), (ir::Shape{img->height, img->width, 3}));
    ASSERT_EQ(img->pixels.size(), px->nbytes());
    EXPECT_EQ(std::memcmp(img->pixels.data(), px->raw(), px->nbytes()), 0);
  }
}

TEST(Image, ExactResizeWithMeanStdNchw) {
  DatasetSpec spec = spec_of({(fixtures() / "images").string()});
  spec.image.resize = {24, 20};
  spec.image.mean = {0.485, 0.456, 0.406};
  spec.image.stddev = {0.229, 0.224, 0.225};
  Dataset ds = open_bound(spec, graph_of({batched("x", DType::kFloat32, {3, 24, 20})}));
  EXPECT_EQ(ds.size(), 3);
  expect_matches(ds, reference("--resize 24,20 --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225",
                               fixture_images()));
}

TEST(Image, ShorterSideResizeCropFromModelBgrNhwc255) {
  DatasetSpec spec = spec_of({(fixtures() / "images").string()});
  spec.image.resize = {32};
  spec.image.scale = 255;
  spec.image.bgr = true;
  spec.image.mean = {103.94, 116.78, 123.68};
  // Layout NHWC and the 28x28 crop both come from the model.
  Dataset ds = open_bound(spec, graph_of({batched("x", DType::kFloat32, {28, 28, 3})}));
  EXPECT_EQ(ds.inputs()[0].sample_shape, (ir::Shape{28, 28, 3}));
  expect_matches(ds, reference("--resize 32 --crop 28,28 --scale 255 --bgr --layout nhwc "
                               "--mean 103.94,116.78,123.68",
                               fixture_images()));
}

TEST(Image, GrayscaleModelResizedToItsSize) {
  DatasetSpec spec = spec_of({(fixtures() / "images").string()});
  spec.image.mean = {0.5};
  spec.image.stddev = {0.25};
  Dataset ds = open_bound(spec, graph_of({batched("x", DType::kFloat32, {1, 16, 16})}));
  expect_matches(ds,
                 reference("--resize 16,16 --channels 1 --mean 0.5 --std 0.25", fixture_images()));
}

TEST(Image, UpsampleAndExplicitCropWithSymbolicSize) {
  DatasetSpec spec = spec_of({(fixtures() / "images").string()});
  spec.image.resize = {64, 80};
  spec.image.crop = {59, 70};
  const ir::Graph g = graph_of({input("x", DType::kFloat32,
                                      {ir::Dim::symbol("n"), ir::Dim::of(3), ir::Dim::symbol("h"),
                                       ir::Dim::symbol("w")})});
  Dataset ds = open_bound(spec, g);
  expect_matches(ds, reference("--resize 64,80 --crop 59,70", fixture_images()));
}

TEST(Image, NoResizeKeepsPixelsAndFeedsFloat16) {
  DatasetSpec spec = spec_of({(fixtures() / "images" / "img_2.png").string()});
  auto ds = Dataset::open(spec);
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_EQ(ds->inputs()[0].sample_shape, (ir::Shape{3, 30, 30}));
  expect_matches(*ds, reference("", {fixtures() / "images" / "img_2.png"}));
  // A float16 model gets the same values, rounded to half.
  ASSERT_TRUE(ds->bind(graph_of({batched("x", DType::kFloat16, {3, 30, 30})})).is_ok());
  auto b = ds->batch(0);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ((*b)[0].second.dtype(), DType::kFloat16);
  auto px = load_npy(fixtures() / "img_2.pixels.npy");
  ASSERT_TRUE(px.has_value());
  // Channel 1 (G) of pixel (4, 7): NCHW index 1*900 + 4*30 + 7; pixels are HWC.
  const float g = ir::half_to_float((*b)[0].second.data<uint16_t>()[900 + 4 * 30 + 7]);
  EXPECT_NEAR(g, px->data<uint8_t>()[(4 * 30 + 7) * 3 + 1] / 255.0, 1e-3);
}

// Each image at its own size, or its shorter side resized (aspect kept), for a model with
// dynamic height and width: one batch per size, each equal to the reference pipeline.
TEST(Image, DynamicSizeModelTakesEachImagesOwnSizeOrAspect) {
  const ir::Graph g = graph_of({input("x", DType::kFloat32,
                                      {ir::Dim::symbol("n"), ir::Dim::of(3), ir::Dim::symbol("h"),
                                       ir::Dim::symbol("w")})});
  const std::vector<std::vector<ir::Shape>> shapes{{{3, 37, 53}, {3, 48, 40}, {3, 30, 30}},
                                                   {{3, 24, 34}, {3, 28, 24}, {3, 24, 24}}};
  for (size_t r = 0; r < 2; ++r) {
    DatasetSpec spec = spec_of({(fixtures() / "images").string()});
    if (r == 1) spec.image.resize = {24};
    spec.batch = 4;
    Dataset ds = open_bound(spec, g);
    EXPECT_EQ(ds.inputs()[0].sample_shape, (ir::Shape{3, -1, -1}));
    ASSERT_EQ(ds.num_batches(), 3);
    for (int64_t k = 0; k < 3; ++k) {
      EXPECT_EQ(ds.batch_samples(k), 1);
      auto batch = ds.batch(k);
      ASSERT_TRUE(batch.has_value()) << batch.status().message();
      const ir::Shape& w = shapes[r][static_cast<size_t>(k)];
      EXPECT_EQ((*batch)[0].second.shape(), (ir::Shape{1, w[0], w[1], w[2]}));
      const ir::Tensor want = reference(r == 1 ? "--resize 24" : "",
                                        {fixture_images()[static_cast<size_t>(k)]});
      ASSERT_EQ(want.size(), (*batch)[0].second.size());
      const float* got = (*batch)[0].second.data<float>();
      for (int64_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(got[i], want.data<double>()[i], 1e-6 * std::max(1.0, std::abs(
                                                               want.data<double>()[i])));
      }
    }
  }
}

TEST(Image, JpegCloseToAnIndependentDecoder) {
  DatasetSpec spec = spec_of({(fixtures() / "jpeg").string()});
  auto ds = Dataset::open(spec);
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_EQ(ds->inputs()[0].sample_shape, (ir::Shape{3, 32, 48}));
  // stb_image and libjpeg (Pillow) differ by a few levels in IDCT and chroma upsampling.
  expect_matches(*ds, reference("", {fixtures() / "jpeg" / "smooth.jpg"}), 6.0 / 255.0);
}

TEST(Image, Errors) {
  TempDir dir;
  fs::create_directories(dir / "bad");
  fs::copy_file(fixtures() / "images" / "img_0.png", dir / "bad" / "a.png");
  write_bytes(dir / "bad" / "b.png", "this is not a PNG file at all");
  EXPECT_INVALID(Dataset::open(spec_of({(dir / "bad").string()})), "b.png");

  // Sizes differ and nothing sets one: two images read as one batch are named with theirs.
  auto mixed = Dataset::open(spec_of({(fixtures() / "images").string()}));
  ASSERT_TRUE(mixed.has_value());
  EXPECT_INVALID(mixed->read(0, 2), "samples 0 and 1 of");
  EXPECT_INVALID(mixed->read(0, 2), "[3, 37, 53] and [3, 48, 40]");

  DatasetSpec crop = spec_of({(fixtures() / "images").string()});
  crop.image.resize = {20, 20};
  crop.image.crop = {24, 24};
  EXPECT_INVALID(Dataset::open(crop), "smaller than the 24x24 crop");

  DatasetSpec mean = spec_of({(fixtures() / "images").string()});
  mean.image.resize = {8, 8};
  mean.image.mean = {0.1, 0.2};
  EXPECT_INVALID(Dataset::open(mean), "--mean has 2 values");

  DatasetSpec ok = spec_of({(fixtures() / "images").string()});
  ok.image.resize = {8, 8};
  auto ds = Dataset::open(ok);
  ASSERT_TRUE(ds.has_value());
  EXPECT_INVALID(ds->bind(graph_of({batched("x", DType::kFloat32, {4, 8, 8})})), "1 or 3 channels");
  EXPECT_INVALID(ds->bind(graph_of({batched("x", DType::kFloat32, {8, 8})})), "rank-4");
  EXPECT_INVALID(ds->bind(graph_of({batched("x", DType::kInt64, {3, 8, 8})})),
                 "input 'x' is int64 but");

  // Corrupt pixel data after a valid header: stbi_info passes, decoding fails at read.
  std::string png = read_bytes(fixtures() / "images" / "img_0.png");
  for (size_t i = png.size() / 2; i < png.size() / 2 + 64; ++i)
    png[i] = static_cast<char>(png[i] ^ 0x33);
  write_bytes(dir / "corrupt" / "c.png", png);
  auto corrupt = Dataset::open(spec_of({(dir / "corrupt").string()}));
  ASSERT_TRUE(corrupt.has_value()) << corrupt.status().message();
  EXPECT_INVALID(corrupt->read(0, 1), "cannot decode image");
}

TEST(Image, ValidJpegsOfEveryKindPassTheTableGuard) {
  // The fuzz corpus's seeds: baseline, grey, progressive (whose first DC scan names AC tables
  // that no DHT has defined yet, and does not decode with them) and chroma-subsampled.
  const fs::path seeds = fs::path(PTQ_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "image";
  for (const char* name : {"baseline.jpg", "gray.jpg", "progressive.jpg", "subsampled.jpg"}) {
    SCOPED_TRACE(name);
    auto img = decode_image(seeds / name, 3);
    ASSERT_TRUE(img.has_value()) << img.status().message();
    EXPECT_GT(img->height * img->width, 0);
  }
}

TEST(Image, HuffmanTableOfMoreThan256CodesIsRefusedBeforeStbReadsIt) {
  // stb_image 2.27 overflows its tables on such a DHT; before the frame header, stbi_info
  // (at open) reads it too. Here one sits right after SOI of a valid JPEG: 16 counts of 32.
  TempDir dir;
  const std::string jpeg = read_bytes(fixtures() / "jpeg" / "smooth.jpg");
  const std::string dht = std::string("\xff\xc4\x00\x13\x00", 5) + std::string(16, '\x20');
  fs::create_directories(dir / "early");
  write_bytes(dir / "early" / "a.jpg", jpeg.substr(0, 2) + dht + jpeg.substr(2));
  EXPECT_INVALID(Dataset::open(spec_of({(dir / "early").string()})),
                 "a.jpg: corrupt JPEG (a Huffman table at offset 6 holds 512 codes, more "
                 "than 256)");
  // After the frame header only the decoder reads it: refused at the first read.
  const size_t sos = jpeg.find("\xff\xda");
  ASSERT_NE(sos, std::string::npos);
  fs::create_directories(dir / "late");
  write_bytes(dir / "late" / "b.jpg", jpeg.substr(0, sos) + dht + jpeg.substr(sos));
  auto late = Dataset::open(spec_of({(dir / "late").string()}));
  ASSERT_TRUE(late.has_value()) << late.status().message();
  EXPECT_INVALID(late->read(0, 1), "b.jpg: corrupt JPEG (a Huffman table at offset");
}

}  // namespace
}  // namespace ptq::data::test
