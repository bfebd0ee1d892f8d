#include "data_options.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace ptq::apps {

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    out.push_back(text.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

Expected<std::vector<int64_t>> parse_ints(const std::string& text, const char* option) {
  std::vector<int64_t> out;
  for (const std::string& item : split(text, ',')) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size() || v <= 0) {
      return usage_error("{} '{}': expected positive integers separated by commas", option, text);
    }
    out.push_back(v);
  }
  return out;
}

Expected<std::vector<double>> parse_doubles(const std::string& text, const char* option) {
  std::vector<double> out;
  for (const std::string& item : split(text, ',')) {
    try {
      size_t used = 0;
      const double v = std::stod(item, &used);
      if (used != item.size() || !std::isfinite(v)) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      return usage_error("{} '{}': expected numbers separated by commas", option, text);
    }
  }
  return out;
}

// --batch-axis NAME=K|none into spec.batch_axes.
Status parse_batch_axes(const std::vector<std::string>& args, data::DatasetSpec& spec) {
  for (const std::string& arg : args) {
    const size_t eq = arg.rfind('=');
    if (eq == std::string::npos || eq == 0) {
      return usage_error("--batch-axis '{}': expected NAME=K or NAME=none", arg);
    }
    const std::string name = arg.substr(0, eq), value = arg.substr(eq + 1);
    int64_t axis = data::kNoBatchAxis;
    if (value != "none") {
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), axis);
      if (ec != std::errc() || end != value.data() + value.size() || axis < 0) {
        return usage_error("--batch-axis '{}': K must be an axis (0, 1, ...) or none", arg);
      }
    }
    if (!spec.batch_axes.emplace(name, axis).second) {
      return usage_error("--batch-axis given twice for '{}'", name);
    }
  }
  return {};
}

}  // namespace

void add_source_option(CLI::App& app, const std::string& flag, std::vector<std::string>& sources,
                       const std::string& help, bool required) {
  CLI::Option* o = app.add_option(flag, sources, help)->type_name("[NAME=]SRC");
  o->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  if (required) o->required();
}

void add_data_options(CLI::App& app, DataOptions& o, const DataOptionsConfig& config) {
  o.default_batch = config.default_batch;
  add_source_option(app, config.flag, o.data,
                    "samples: FILE.npy, FILE.npz, DIR of .npy/.pb/images, backend-style "
                    "test_data_set_* DIR, FILE.bin (with --shape); NAME=SRC per input",
                    config.required);
  app.add_option("--shape", o.shape, "shape of one record of a raw .bin source, e.g. 1,3,224,224")
      ->type_name("[NAME=]D,D,...")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--resize", o.resize, "images: shorter side to S, or exactly H,W (bilinear)")
      ->type_name("S|H,W");
  app.add_option("--crop", o.crop, "images: centre crop (default: the model's H,W)")
      ->type_name("H,W");
  app.add_option("--mean", o.mean, "images: per-channel mean subtracted after scaling")
      ->type_name("A[,B,C]");
  app.add_option("--std", o.stddev, "images: per-channel divisor after the mean")
      ->type_name("A[,B,C]");
  app.add_option("--scale", o.scale, "images: pixel range, 1 for [0,1] or 255 for [0,255]")
      ->capture_default_str();
  app.add_option("--layout", o.layout, "images: nchw or nhwc (default: from the model)")
      ->check(CLI::IsMember({"nchw", "nhwc"}));
  app.add_flag("--bgr", o.bgr, "images: channels in BGR order");
  app.add_option("--batch", o.batch,
                 fmt::format("samples per batch (default {}; a fixed batch dim in the model "
                             "sets it)",
                             config.default_batch));
  app.add_option("--batch-axis", o.batch_axis,
                 "input NAME's batch axis is K (e.g. 1 for [seq, batch, hidden]); none: feed "
                 "its data whole, unbatched (default: from the model and the data)")
      ->type_name("NAME=K|none")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_flag("--cast", o.cast,
               "convert data whose element type differs from the input's (refused otherwise)");
  app.add_option("--samples", o.samples, "use only the first N samples (after shuffling)");
  app.add_flag("--shuffle", o.shuffle, "shuffle the samples (seed 0 unless --seed)");
  o.seed_option = app.add_option("--seed", o.seed, "shuffle with this seed");
  o.finite_only = config.finite_only;
  if (config.finite_only) {
    app.add_flag("--allow-nonfinite", o.allow_nonfinite,
                 "run samples holding NaN or Inf (by default they stop the command)");
  }
}

Expected<data::DatasetSpec> make_dataset_spec(const DataOptions& o) {
  return make_dataset_spec(o, o.data);
}

Expected<data::DatasetSpec> make_dataset_spec(const DataOptions& o,
                                              const std::vector<std::string>& sources) {
  data::DatasetSpec spec;
  for (const std::string& s : sources) spec.sources.push_back(data::parse_source(s));
  for (const std::string& s : o.shape) {
    const size_t eq = s.find('=');
    const std::string name = eq == std::string::npos ? "" : s.substr(0, eq);
    PTQ_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                         parse_ints(eq == std::string::npos ? s : s.substr(eq + 1), "--shape"));
    if (spec.raw_shapes.count(name)) {
      return usage_error("--shape given twice for {}",
                         name.empty() ? "all inputs" : "'" + name + "'");
    }
    spec.raw_shapes[name] = dims;
  }
  data::ImageOptions& img = spec.image;
  if (!o.resize.empty()) {
    PTQ_ASSIGN_OR_RETURN(img.resize, parse_ints(o.resize, "--resize"));
    if (img.resize.size() > 2) return usage_error("--resize takes S or H,W, not '{}'", o.resize);
  }
  if (!o.crop.empty()) {
    PTQ_ASSIGN_OR_RETURN(img.crop, parse_ints(o.crop, "--crop"));
    if (img.crop.size() != 2) return usage_error("--crop takes H,W, not '{}'", o.crop);
  }
  if (!o.mean.empty()) {
    PTQ_ASSIGN_OR_RETURN(img.mean, parse_doubles(o.mean, "--mean"));
  }
  if (!o.stddev.empty()) {
    PTQ_ASSIGN_OR_RETURN(img.stddev, parse_doubles(o.stddev, "--std"));
  }
  if (!(o.scale > 0) || !std::isfinite(o.scale)) {
    return usage_error("--scale must be a positive number (1 or 255)");
  }
  img.scale = o.scale;
  img.bgr = o.bgr;
  if (o.layout == "nchw") img.layout = data::Layout::kNCHW;
  if (o.layout == "nhwc") img.layout = data::Layout::kNHWC;
  if (o.batch < 0) return usage_error("--batch must be positive");
  if (o.samples < 0) return usage_error("--samples must be positive");
  spec.batch = o.batch;
  PTQ_RETURN_IF_ERROR(parse_batch_axes(o.batch_axis, spec));
  spec.cast = o.cast;
  spec.default_batch = o.default_batch;
  spec.samples = o.samples;
  const bool seeded = o.seed_option != nullptr && o.seed_option->count() > 0;
  spec.shuffle = o.shuffle || seeded;
  spec.seed = o.seed;
  spec.finite_only = o.finite_only && !o.allow_nonfinite;
  return spec;
}

Expected<data::Dataset> open_dataset(const DataOptions& o, const ir::Graph& graph) {
  PTQ_ASSIGN_OR_RETURN(data::DatasetSpec spec, make_dataset_spec(o));
  PTQ_ASSIGN_OR_RETURN(data::Dataset ds, data::Dataset::open(spec));
  PTQ_RETURN_IF_ERROR(ds.bind(graph));
  return ds;
}

}  // namespace ptq::apps
