// ptq::log: level names, filtering by level, and the log file receiving what stderr shows.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/files.h"
#include "ptq/util/log.h"

namespace ptq::log {
namespace {

using ptq::testing::read_file;

TEST(Log, LevelsParseAndNameThemselves) {
  for (Level l : {Level::kError, Level::kWarning, Level::kInfo, Level::kDebug}) {
    auto parsed = parse_level(level_name(l));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, l);
  }
  EXPECT_EQ(*parse_level("warn"), Level::kWarning);
  auto bad = parse_level("loud");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.status().code(), StatusCode::kUsage);
  EXPECT_EQ(bad.status().message(),
            "unknown log level 'loud' (choose error, warning, info or debug)");
}

TEST(Log, FileReceivesTheMessagesTheLevelShows) {
  const std::string name = "ptq_log_test_" + std::to_string(::getpid()) + ".txt";
  const auto path = std::filesystem::temp_directory_path() / name;
  ASSERT_TRUE(set_file(path.string()).is_ok());
  set_level(Level::kWarning);
  EXPECT_TRUE(enabled(Level::kError));
  EXPECT_FALSE(enabled(Level::kInfo));
  warn("{} clips {}%", "conv1", 3);
  info("not shown");
  debug("not shown");
  set_level(Level::kDebug);
  debug("shown");
  set_program("tool");
  error("last");
  ASSERT_TRUE(set_file("").is_ok());  // closes it
  set_program("ptq");
  set_level(Level::kInfo);
  EXPECT_EQ(read_file(path),
            "ptq: warning: conv1 clips 3%\nptq: debug: shown\ntool: error: last\n");
  std::filesystem::remove(path);

  auto missing = set_file("/nonexistent-dir/x.log");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.message().find("/nonexistent-dir/x.log"), std::string::npos);
}

}  // namespace
}  // namespace ptq::log
