// A private folder for one test, removed with it.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace ptq::testing {

// gtest's temporary folder / ptq_<name>_<pid>_<n>: named after the running test; pass a name
// where no test runs (SetUpTestSuite). Emptied on creation, removed on destruction.
class TempDir {
 public:
  TempDir() : TempDir(current_test()) {}
  explicit TempDir(const std::string& name) {
    static int counter = 0;
    path_ = std::filesystem::path(::testing::TempDir()) /
            ("ptq_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  static std::string current_test() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return info != nullptr ? info->name() : "x";
  }
  std::filesystem::path path_;
};

}  // namespace ptq::testing
