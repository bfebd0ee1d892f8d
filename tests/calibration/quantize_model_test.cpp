// calibration::quantize_model, the quantize flow of `ptq quantize` and ptqkit.quantize, and
// prepare_for_planning, on the residual model built in code with a front end of .npy data.
#include <gtest/gtest.h>

#include <algorithm>

#include "calib_test_util.h"
#include "common/files.h"
#include "ptq/calibration.h"
#include "ptq/planner.h"
#include "ptq/runtime.h"

namespace ptq::calibration {
namespace {

using ptq::testing::read_file;

// Data from a .npy file, one CPU worker, and a record of what the flow reported.
class TestFrontEnd : public QuantizeFrontEnd {
 public:
  explicit TestFrontEnd(std::string npy) : npy_(std::move(npy)) {}

  Expected<data::Dataset> open_data(const ir::Graph& graph) override {
    data::DatasetSpec spec;
    spec.sources.push_back({.input = "", .path = npy_});
    spec.default_batch = 4;
    PTQ_ASSIGN_OR_RETURN(data::Dataset d, data::Dataset::open(spec));
    PTQ_RETURN_IF_ERROR(d.bind(graph));
    return d;
  }
  Expected<std::vector<runtime::Executor*>> calibration_workers(const ir::Model& model) override {
    PTQ_ASSIGN_OR_RETURN(executor_, runtime::Executor::create(model, *cpu_, {}));
    return std::vector<runtime::Executor*>{executor_.get()};
  }
  ProgressFn start_pass(std::string_view stage, int64_t) override {
    events.push_back("start " + std::string(stage));
    return [](const Progress&) { return Status::ok(); };
  }
  void end_pass() override { events.emplace_back("end"); }
  Status warn(const std::string& message) override {
    warnings.push_back(message);
    return fail_warnings ? invalid_input("warning made an error: {}", message) : Status::ok();
  }
  void phase_done(std::string_view phase) override { events.emplace_back(phase); }

  std::vector<std::string> events;
  std::vector<std::string> warnings;
  bool fail_warnings = false;

 private:
  std::string npy_;
  std::unique_ptr<runtime::Backend> cpu_ = runtime::make_cpu_backend();
  std::unique_ptr<runtime::Executor> executor_;
};

class QuantizeModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::save_and_load(testing::residual_model(1), model);
    ASSERT_TRUE(data::save_npy(npy, testing::residual_samples(8, 3)).is_ok());
  }
  QuantizeRequest request(const std::string& out) const {
    QuantizeRequest r{.model = model, .out = out};
    r.calibration.method = {.name = "minmax"};
    r.calibration.date = "2024-01-01T00:00:00Z";
    r.settings.plan.min_conv_channels = 0;  // the block's conv has 16 inputs: quantize it
    return r;
  }

  testing::TempDir dir;
  std::string model = dir / "m.onnx";
  std::string npy = dir / "x.npy";
};

TEST_F(QuantizeModelTest, CalibratesWritesTheCacheAndTheModelInOrder) {
  TestFrontEnd front_end(npy);
  QuantizeRequest r = request(dir / "q.onnx");
  r.cache_out = dir / "q.calib.json";
  r.settings.plan.per_tensor_weights = true;
  auto q = quantize_model(r, front_end);
  ASSERT_TRUE(q.has_value()) << q.status().message();
  EXPECT_TRUE(q->written);
  EXPECT_EQ(q->method, "minmax");
  EXPECT_GT(q->result.quantize_nodes, 0);
  EXPECT_EQ(front_end.events, (std::vector<std::string>{"load model", "start calibration", "end",
                                                        "calibrate", "quantize", "write model"}));
  auto cache = calib::read_cache(dir / "q.calib.json");
  ASSERT_TRUE(cache.has_value()) << cache.status().message();
  EXPECT_EQ(cache->options.at("per_tensor_weights"), "true");  // the settings are recorded
  auto written = onnx::load_model(dir / "q.onnx");
  ASSERT_TRUE(written.has_value()) << written.status().message();
  EXPECT_EQ(*written->metadata("ptqkit.cache_hash"),
            onnx::sha256_hex(calib::json_cache_string(*cache)));
}

TEST_F(QuantizeModelTest, TheCacheAloneGivesTheSameBytesWithItsRecordedOptions) {
  TestFrontEnd first(npy);
  QuantizeRequest r = request(dir / "a.onnx");
  r.cache_out = dir / "a.calib.json";
  r.settings.plan.per_tensor_weights = true;
  r.settings.bias_correction = true;
  r.smoothquant = 0.5;
  auto a = quantize_model(r, first);
  ASSERT_TRUE(a.has_value()) << a.status().message();
  EXPECT_EQ(first.events[1], "start smoothquant");
  EXPECT_GT(a->result.corrected_biases, 0);

  TestFrontEnd second("no data: the cache is all it reads");
  QuantizeRequest again = request(dir / "b.onnx");  // per-tensor, bias correction not given
  again.cache = dir / "a.calib.json";
  auto b = quantize_model(again, second);
  ASSERT_TRUE(b.has_value()) << b.status().message();
  EXPECT_TRUE(b->settings.plan.per_tensor_weights);
  EXPECT_TRUE(b->settings.bias_correction);
  EXPECT_EQ(ptq::testing::read_file(dir / "b.onnx"), ptq::testing::read_file(dir / "a.onnx"));
  EXPECT_EQ(second.events,
            (std::vector<std::string>{"load model", "read cache", "quantize", "write model"}));
}

TEST_F(QuantizeModelTest, SmoothQuantMustAgreeWithTheCache) {
  TestFrontEnd first(npy);
  QuantizeRequest r = request(dir / "a.onnx");
  r.cache_out = dir / "a.calib.json";
  ASSERT_TRUE(quantize_model(r, first).has_value());
  QuantizeRequest again = request(dir / "b.onnx");
  again.cache = dir / "a.calib.json";
  again.smoothquant = 0.5;
  TestFrontEnd second(npy);
  auto b = quantize_model(again, second);
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.status().code(), StatusCode::kUsage);
  EXPECT_NE(b.status().message().find("calibrated without SmoothQuant"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "b.onnx"));
}

TEST_F(QuantizeModelTest, AWarningMadeAnErrorStopsTheFlowBeforeTheModelIsWritten) {
  TestFrontEnd first(npy);
  ASSERT_TRUE(quantize_model(request(dir / "q.onnx"), first).has_value());
  TestFrontEnd second(npy);
  second.fail_warnings = true;
  QuantizeRequest r = request(dir / "q.onnx");
  r.model = dir / "q.onnx";
  r.out = dir / "again.onnx";
  r.requantize = true;  // warns that it strips the Q/DQ
  auto q = quantize_model(r, second);
  ASSERT_FALSE(q.has_value());
  ASSERT_EQ(second.warnings.size(), 1u);
  EXPECT_EQ(second.warnings[0].rfind("--requantize: removed ", 0), 0u) << second.warnings[0];
  EXPECT_FALSE(std::filesystem::exists(dir / "again.onnx"));
}

TEST(PrepareForPlanning, RefusesAQuantizedModelUnlessRequantizing) {
  ir::Model model = testing::residual_model(1);
  calib::CalibrationTable t;
  t.method = "minmax";
  auto names = planner::quantizable_activations(model, {});
  ASSERT_TRUE(names.has_value()) << names.status().message();
  for (const std::string& n : *names) t.tensors[n] = {.amax = 2.0, .min = -2.0, .max = 2.0};
  planner::PlanOptions plan;
  plan.min_conv_channels = 0;
  ASSERT_TRUE(planner::quantize(model, t, plan).has_value());
  ModelForms forms(model);
  std::vector<std::string> notes;
  const Status refused = prepare_for_planning(model, "q.onnx", false, forms, notes);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(refused.message().rfind("q.onnx is already quantized (", 0), 0u) << refused.message();
  EXPECT_TRUE(notes.empty());

  ASSERT_TRUE(prepare_for_planning(model, "q.onnx", true, forms, notes).is_ok());
  EXPECT_EQ(std::count_if(model.graph.nodes.begin(), model.graph.nodes.end(),
                          [](const ir::Node& n) { return n.op_type == "QuantizeLinear"; }),
            0);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("--requantize: removed ", 0), 0u) << notes[0];
  EXPECT_EQ(forms.latest_hash(), onnx::graph_hash(model));
}

TEST(PrepareForPlanning, LeavesAFloatModelOfOpset13Alone) {
  ir::Model model = testing::residual_model(1);
  const std::string before = onnx::graph_hash(model);
  ModelForms forms(model);
  std::vector<std::string> notes;
  ASSERT_TRUE(prepare_for_planning(model, "m.onnx", false, forms, notes).is_ok());
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(onnx::graph_hash(model), before);
}

}  // namespace
}  // namespace ptq::calibration
