// `ptq sensitivity --backend vulkan` on device 0 (Mesa's lavapipe in CI) against `--backend cpu`
// on the synthetic outlier model (outlier_model.h), in both modes: the same units, the same
// most sensitive unit (convB), and every unit's SQNR close to the CPU's (the backends differ by
// float rounding, ~1e-6 relative, far below the INT8 noise the SQNR measures: on lavapipe the
// SQNRs agree to 1e-4 dB).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/run_ptq.h"
#include "common/files.h"
#include "outlier_model.h"
#include "ptq/data.h"
#include "ptq/onnx.h"

namespace {

namespace fs = std::filesystem;
using ptq::testing::run_ptq;

class SensitivityVulkanCli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto devices = run_ptq({"info", "--devices"});
    if (devices.exit_code != 0)
      FAIL() << "no Vulkan device (install mesa-vulkan-drivers for lavapipe): " << devices.err;
    dir_ = fs::temp_directory_path() / ("ptq_sens_vk_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    model_ = (dir_ / "outlier.onnx").string();
    data_ = (dir_ / "x.npy").string();
    cache_ = (dir_ / "c.json").string();
    ASSERT_TRUE(ptq::onnx::save_model(ptq::sensitivity::testing::outlier_model(), model_).is_ok());
    std::mt19937 gen(11);
    ASSERT_TRUE(ptq::data::save_npy(
                    data_, ptq::testing::normal_tensor(gen, {16, 16, 8, 8}, 1.0f))
                    .is_ok());
    auto c = run_ptq(
        {"calibrate", model_, "--data", data_, "--method", "minmax", "-o", cache_, "--quiet"});
    ASSERT_EQ(c.exit_code, 0) << c.err;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  nlohmann::json sweep(const std::string& backend, const std::string& mode) {
    const fs::path out = dir_ / (backend + "_" + mode + ".json");
    auto r = run_ptq({"sensitivity", model_, "--cache", cache_, "--eval", data_, "--metric", "sqnr",
                      "--mode", mode, "--backend", backend, "-o", out.string(), "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << backend << " " << mode << ": " << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(ptq::testing::read_file(out))
                            : nlohmann::json{};
  }

  fs::path dir_;
  std::string model_, data_, cache_;
};

TEST_F(SensitivityVulkanCli, RankingMatchesCpu) {
  for (const std::string mode : {"only", "all-but"}) {
    const nlohmann::json cpu = sweep("cpu", mode);
    const nlohmann::json vk = sweep("vulkan", mode);
    ASSERT_TRUE(cpu.contains("layers") && vk.contains("layers")) << mode;
    const auto& cl = cpu["layers"];
    const auto& vl = vk["layers"];
    ASSERT_EQ(cl.size(), vl.size()) << mode;
    ASSERT_GE(cl.size(), 4u) << mode;
    EXPECT_EQ(cl[0]["name"], "convB") << mode;
    EXPECT_EQ(vl[0]["name"], cl[0]["name"]) << mode;
    std::map<std::string, double> cpu_db;
    for (const auto& l : cl) cpu_db[l["name"]] = l["metric"].get<double>();
    for (const auto& l : vl) {
      ASSERT_TRUE(cpu_db.contains(l["name"])) << l["name"];
      EXPECT_NEAR(l["metric"].get<double>(), cpu_db[l["name"]], 0.05) << mode << " " << l["name"];
    }
  }
}

}  // namespace
