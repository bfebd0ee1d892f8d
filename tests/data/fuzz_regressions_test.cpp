// The inputs that once crashed, or made allocate without bound, the data readers under
// libFuzzer (tests/fuzz/regressions, see its README): each is now a one-line invalid-input
// error naming the file, at open or at the first read.
#include <gtest/gtest.h>

#include "test_util.h"

namespace ptq::data::test {
namespace {

const fs::path kRegressions = fs::path(PTQ_SOURCE_DIR) / "tests" / "fuzz" / "regressions";

struct Regression {
  const char* file;
  const char* message;
};

const Regression kCases[] = {
    {"npy_zero_width_samples.npy", "gives samples of shape [0], which hold no values"},
    {"npz_member_beyond_deflate.npz",
     "npz_member_beyond_deflate.npz:x.npy: corrupt zip (records 1099511627904 bytes, more than "
     "its 78 deflated bytes hold)"},
    {"jpeg_dht_over_256_codes.jpg", "corrupt JPEG (a Huffman table at offset 214 holds 3401 codes"},
    {"jpeg_dht_over_256_codes_after_junk.jpg", "corrupt JPEG (a Huffman table at offset 110 holds"},
    {"jpeg_scan_with_undefined_table.jpg",
     "corrupt JPEG (the scan at offset 395 uses a Huffman table no DHT defines)"},
    {"png_header_beyond_its_data.png", "corrupt image (16252932x6 pixels cannot be encoded in"},
    {"png_chunk_beyond_the_file.png",
     "corrupt PNG (the chunk at offset 33 claims 1610612775 bytes"},
};

// Opens the file as a data source and reads its first sample: the first error, or OK.
Status open_and_read(const fs::path& file) {
  auto ds = Dataset::open(spec_of({file.string()}));
  if (!ds) return ds.status();
  auto batch = ds->read(0, 1);
  return batch ? Status() : batch.status();
}

TEST(FuzzRegressions, EachIsAnErrorNamingTheFile) {
  for (const Regression& r : kCases) {
    SCOPED_TRACE(r.file);
    const Status s = open_and_read(kRegressions / r.file);
    EXPECT_INVALID(s, r.message);
    EXPECT_INVALID(s, r.file);
  }
}

TEST(FuzzRegressions, EveryDataRegressionIsInTheTest) {
  // A new data input in tests/fuzz/regressions needs its expected message above.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(kRegressions)) {
    const std::string ext = e.path().extension().string();
    files += ext == ".npy" || ext == ".npz" || ext == ".png" || ext == ".jpg";
  }
  EXPECT_EQ(files, std::size(kCases));
}

}  // namespace
}  // namespace ptq::data::test
