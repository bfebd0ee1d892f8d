// apps/data_options: the shared data options parse into the DatasetSpec they promise.
#include <gtest/gtest.h>

#include "data_options.h"
#include "test_util.h"

namespace ptq::apps {
namespace {

// Parses `args` (after the program name) with the data options added to a fresh app.
Expected<data::DatasetSpec> parse(std::vector<std::string> args, DataOptions& o) {
  CLI::App app("test");
  add_data_options(app, o);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);
  return make_dataset_spec(o);
}

TEST(DataOptions, EveryOptionReachesTheSpec) {
  DataOptions o;
  auto spec = parse({"--data", "a=x.npy", "--data", "dir/", "--shape", "a=1,3,8,8", "--shape",
                     "2,4", "--resize", "256", "--crop", "224,224", "--mean",
                     "0.485,0.456,0.406", "--std", "0.229,0.224,0.225", "--scale", "255",
                     "--layout", "nhwc", "--bgr", "--batch", "7", "--samples", "50", "--seed",
                     "42", "--batch-axis", "a=1", "--batch-axis", "min=none", "--cast"},
                    o);
  ASSERT_TRUE(spec.has_value()) << spec.status().message();
  ASSERT_EQ(spec->sources.size(), 2u);
  EXPECT_EQ(spec->sources[0].input, "a");
  EXPECT_EQ(spec->sources[0].path, "x.npy");
  EXPECT_EQ(spec->sources[1].input, "");
  EXPECT_EQ(spec->raw_shapes.at("a"), (ir::Shape{1, 3, 8, 8}));
  EXPECT_EQ(spec->raw_shapes.at(""), (ir::Shape{2, 4}));
  EXPECT_EQ(spec->image.resize, (std::vector<int64_t>{256}));
  EXPECT_EQ(spec->image.crop, (std::vector<int64_t>{224, 224}));
  EXPECT_EQ(spec->image.mean, (std::vector<double>{0.485, 0.456, 0.406}));
  EXPECT_EQ(spec->image.stddev, (std::vector<double>{0.229, 0.224, 0.225}));
  EXPECT_EQ(spec->image.scale, 255.0);
  EXPECT_EQ(spec->image.layout, data::Layout::kNHWC);
  EXPECT_TRUE(spec->image.bgr);
  EXPECT_EQ(spec->batch, 7);
  EXPECT_EQ(spec->samples, 50);
  EXPECT_TRUE(spec->shuffle);
  EXPECT_EQ(spec->seed, 42u);
  EXPECT_EQ(spec->batch_axes, (std::map<std::string, int64_t>{{"a", 1}, {"min", -1}}));
  EXPECT_TRUE(spec->cast);
}

TEST(DataOptions, DefaultsAndUsageErrors) {
  DataOptions o;
  auto spec = parse({"--data", "x.npy"}, o);
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->batch, 0);
  EXPECT_EQ(spec->default_batch, 1);
  EXPECT_FALSE(spec->shuffle);
  EXPECT_FALSE(spec->image.layout.has_value());
  EXPECT_TRUE(spec->batch_axes.empty());
  EXPECT_FALSE(spec->cast);
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--data", "x", "--resize", "1,2,3"},
        std::vector<std::string>{"--data", "x", "--crop", "224"},
        std::vector<std::string>{"--data", "x", "--mean", "0.5,abc"},
        std::vector<std::string>{"--data", "x", "--shape", "1,-3"},
        std::vector<std::string>{"--data", "x", "--scale", "0"},
        std::vector<std::string>{"--data", "x", "--batch-axis", "a"},
        std::vector<std::string>{"--data", "x", "--batch-axis", "a=-1"},
        std::vector<std::string>{"--data", "x", "--batch-axis", "a=one"}}) {
    DataOptions fresh;
    auto s = parse(bad, fresh);
    ASSERT_FALSE(s.has_value()) << bad[2];
    EXPECT_EQ(s.status().code(), StatusCode::kUsage) << bad[2];
    EXPECT_NE(s.status().message().find(bad[2]), std::string::npos) << s.status().message();
  }
  DataOptions missing;
  CLI::App app("test");
  add_data_options(app, missing);
  std::vector<std::string> none;
  EXPECT_THROW(app.parse(none), CLI::RequiredError);
}

}  // namespace
}  // namespace ptq::apps
