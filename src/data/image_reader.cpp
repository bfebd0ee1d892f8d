// A folder of images as float32 samples: decode, resize, crop, normalise (image.h).
#include "reader.h"

namespace ptq::data {

namespace {

class ImageReader final : public SampleReader {
 public:
  ImageReader(std::string where, std::vector<std::filesystem::path> files, ImageOptions options,
              std::vector<std::pair<int32_t, int32_t>> sizes)
      : where_(std::move(where)),
        files_(std::move(files)),
        options_(std::move(options)),
        sizes_(std::move(sizes)) {}

  // Settles the plan for a model whose layout, channels and size are unknown (unbound use).
  Status init() { return settle(std::nullopt, 3, -1, -1); }

  const std::string& where() const override { return where_; }
  ir::DType dtype() const override { return ir::DType::kFloat32; }
  int64_t count() const override { return static_cast<int64_t>(files_.size()); }
  ir::Shape sample_shape() const override { return shapes_.common(); }
  int64_t shape_count() const override { return shapes_.size(); }
  ir::Shape shape_at(int64_t k) const override { return shapes_.shape(k); }
  int64_t shape_of(int64_t i) const override { return shapes_.id(i); }

  ir::Shape item_shape() const override { return sample_shape(); }
  bool preprocessed() const override { return true; }

  Status adapt(const ir::ValueInfo& input, int64_t /*record_rank*/) override {
    if (!input.type.dims) return {};
    const auto& dims = *input.type.dims;
    if (dims.size() != 4) {
      return invalid_input("input '{}' is {}: images need a rank-4 input (NCHW or NHWC)",
                           input.name, ir::dims_str(input.type.dims));
    }
    auto is_channels = [](const ir::Dim& d) { return d.value == 1 || d.value == 3; };
    Layout layout = options_.layout.value_or(
        !is_channels(dims[1]) && is_channels(dims[3]) ? Layout::kNHWC : Layout::kNCHW);
    const bool nchw = layout == Layout::kNCHW;
    const ir::Dim& c = nchw ? dims[1] : dims[3];
    const ir::Dim& h = nchw ? dims[2] : dims[1];
    const ir::Dim& w = nchw ? dims[3] : dims[2];
    if (c.known() && !is_channels(c)) {
      return invalid_input("input '{}' is {}: images give 1 or 3 channels, not {}", input.name,
                           ir::dims_str(input.type.dims), c.value);
    }
    return settle(layout, c.known() ? c.value : 3, h.known() ? h.value : -1,
                  w.known() ? w.value : -1);
  }

  Status read(int64_t i, void* dst) const override {
    const auto& path = files_[static_cast<size_t>(i)];
    PTQ_ASSIGN_OR_RETURN(Image img, decode_image(path, static_cast<int>(plan_.channels)));
    PTQ_ASSIGN_OR_RETURN(Geometry g, plan_geometry(plan_, img.height, img.width, path.string()));
    if (geometry_shape(g) != shapes_.shape(shapes_.id(i))) {
      const auto [h, w] = sizes_[static_cast<size_t>(i)];
      return invalid_input("'{}' is {}x{} but was {}x{} when the folder was opened",
                           path.string(), img.height, img.width, h, w);
    }
    preprocess(img, plan_, g, static_cast<float*>(dst));
    return {};
  }

 private:
  // Model H x W (when fixed) decide what the options leave open: no --resize and no --crop
  // resizes to exactly H x W; --resize without --crop centre-crops to H x W.
  Status settle(std::optional<Layout> layout, int64_t channels, int64_t model_h, int64_t model_w) {
    ImagePlan p;
    p.channels = channels;
    p.layout = layout.value_or(options_.layout.value_or(Layout::kNCHW));
    p.resize = options_.resize;
    p.crop = options_.crop;
    p.scale = options_.scale;
    p.mean = options_.mean;
    p.stddev = options_.stddev;
    p.bgr = options_.bgr;
    const bool model_size = model_h > 0 && model_w > 0;
    if (model_size && p.crop.empty()) {
      if (p.resize.empty()) {
        p.resize = {model_h, model_w};
      } else {
        p.crop = {model_h, model_w};
      }
    }
    PTQ_RETURN_IF_ERROR(expand_normalisation(p));
    plan_ = std::move(p);
    // Each image's sample shape: one for all with a fixed size, else one per distinct size.
    shapes_.clear();
    for (size_t i = 0; i < files_.size(); ++i) {
      PTQ_ASSIGN_OR_RETURN(Geometry g, plan_geometry(plan_, sizes_[i].first, sizes_[i].second,
                                                     files_[i].string()));
      shapes_.add(geometry_shape(g));
    }
    return {};
  }

  ir::Shape geometry_shape(const Geometry& g) const {
    const int64_t c = plan_.channels, h = g.out_h, w = g.out_w;
    return plan_.layout == Layout::kNCHW ? ir::Shape{c, h, w} : ir::Shape{h, w, c};
  }

  std::string where_;
  std::vector<std::filesystem::path> files_;
  ImageOptions options_;
  std::vector<std::pair<int32_t, int32_t>> sizes_;  // each file's height and width
  ImagePlan plan_;
  ShapeTable shapes_;
};

}  // namespace

Expected<std::unique_ptr<SampleReader>> make_image_reader(
    std::string where, std::vector<std::filesystem::path> files, const ImageOptions& options) {
  for (int64_t v : options.resize) {
    if (v <= 0) return invalid_input("--resize values must be positive");
  }
  for (int64_t v : options.crop) {
    if (v <= 0) return invalid_input("--crop values must be positive");
  }
  if (options.resize.size() > 2) return invalid_input("--resize takes S or H,W");
  if (!options.crop.empty() && options.crop.size() != 2) return invalid_input("--crop takes H,W");
  if (!(options.scale > 0)) return invalid_input("--scale must be positive");
  // Headers only, every file: an unreadable image fails now rather than mid-calibration.
  std::vector<std::pair<int32_t, int32_t>> sizes;
  for (const auto& file : files) {
    PTQ_ASSIGN_OR_RETURN(auto size, image_size(file));
    sizes.emplace_back(static_cast<int32_t>(size.first), static_cast<int32_t>(size.second));
  }
  auto reader =
      std::make_unique<ImageReader>(std::move(where), std::move(files), options, std::move(sizes));
  PTQ_RETURN_IF_ERROR(reader->init());
  return std::unique_ptr<SampleReader>(std::move(reader));
}

}  // namespace ptq::data
