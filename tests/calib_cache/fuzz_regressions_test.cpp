// The inputs that once crashed the cache readers under libFuzzer (tests/fuzz/regressions, see
// its README): each now reads as a one-line invalid-input error naming the file and the line.
#include <gtest/gtest.h>

#include <filesystem>

#include "ptq/calib_cache.h"

namespace ptq::calib {
namespace {

namespace fs = std::filesystem;

const fs::path kRegressions = fs::path(PTQ_SOURCE_DIR) / "tests" / "fuzz" / "regressions";

struct Regression {
  const char* file;
  const char* message;
};

const Regression kCases[] = {
    {"ort_json_number_overflow.json",
     "ort_json_number_overflow.json:2: invalid JSON: number overflow parsing '1e999'"},
    {"ptqkit_json_number_overflow.json",
     "ptqkit_json_number_overflow.json:2: invalid JSON: number overflow parsing '1e999'"},
};

TEST(FuzzRegressions, EachIsAnErrorNamingFileAndLine) {
  for (const Regression& r : kCases) {
    SCOPED_TRACE(r.file);
    auto table = read_cache(kRegressions / r.file);
    ASSERT_FALSE(table.has_value());
    EXPECT_EQ(table.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(table.status().message().find(r.message), std::string::npos)
        << table.status().message();
    EXPECT_EQ(table.status().message().find('\n'), std::string::npos);
  }
}

TEST(FuzzRegressions, EveryCacheRegressionIsInTheTest) {
  // A new cache input in tests/fuzz/regressions needs its expected message above.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(kRegressions)) {
    files += e.path().extension() == ".json" || e.path().extension() == ".cache";
  }
  EXPECT_EQ(files, std::size(kCases));
}

}  // namespace
}  // namespace ptq::calib
