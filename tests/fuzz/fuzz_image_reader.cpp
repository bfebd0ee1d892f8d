// libFuzzer target: an image file as a data source (stb_image's PNG and JPEG decoders, then
// the preprocessing), once at its own size and once resized and centre-cropped as ImageNet
// models are fed. Any bytes must give a sample or a Status.
#include "input_file.h"
#include "ptq/data.h"

namespace {

void read_with(const std::filesystem::path& path, const ptq::data::ImageOptions& options) {
  ptq::data::DatasetSpec spec;
  spec.sources.push_back({"", path});
  spec.image = options;
  auto ds = ptq::data::Dataset::open(spec);
  if (ds) (void)ds->read(0, 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ptq::fuzz::write_input(data, size, "input.png");
  read_with(path, {});
  ptq::data::ImageOptions imagenet;
  imagenet.resize = {8};
  imagenet.crop = {6, 6};
  imagenet.mean = {0.485, 0.456, 0.406};
  imagenet.stddev = {0.229, 0.224, 0.225};
  read_with(path, imagenet);
  return 0;
}
