// The HTML report as a person sees it: built for resnet18 and two variants, opened in headless
// Chromium (Debian `chromium`), its rendered DOM text checked and a screenshot taken.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <fstream>
#include <sstream>

#include "common/files.h"
#include "model_util.h"
#include "qdq_builder.h"
#include "ptq/report.h"
#include "ptq/util/atomic_file.h"

namespace ptq::report {
namespace {

using ptq::testing::read_file;

namespace fs = std::filesystem;
using testing::load_test_model;
using testing::made_up_table;

class HtmlReport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fs::path("ptq_report_html_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Runs chromium headless with the flags that keep it off the network; returns its exit code.
  int chromium(const std::string& args, const fs::path& stdout_file) {
    const fs::path profile = dir_ / "profile";
    fs::create_directories(profile);
    const std::string cmd =
        "timeout 180 chromium --headless --no-sandbox --disable-gpu --disable-quic "
        "--no-first-run --disable-background-networking --disable-component-update "
        "--disable-sync --hide-scrollbars --user-data-dir='" +
        profile.string() + "' " + args + " > '" + stdout_file.string() + "' 2> '" +
        (dir_ / "chromium.err").string() + "'";
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  fs::path dir_;
};

ir::Model quantized(const std::string& name, const planner::PlanOptions& options) {
  ir::Model m = load_test_model(name);
  auto r = planner::quantize(m, made_up_table(m, options), options);
  EXPECT_TRUE(r.has_value()) << r.status().message();
  return m;
}

TEST_F(HtmlReport, OpensInChromiumWithEverySection) {
  // The main model quantizes every conv, the first (3 input channels) too: lint says so.
  planner::PlanOptions all_convs;
  all_convs.min_conv_channels = 0;
  const ir::Model main = quantized("resnet18", all_convs);
  const ir::Model standard = quantized("resnet18", {});
  const ir::Model fp32 = load_test_model("resnet18");

  auto eval = parse_eval_json(R"({"top1": 0.6875, "top5": 0.9125})", "all.eval.json");
  auto eval_std = parse_eval_json(R"({"top1": 0.7031, "top5": 0.9188})", "std.eval.json");
  ASSERT_TRUE(eval.has_value() && eval_std.has_value());
  std::vector<ModelEntry> models(3);
  models[0] = {"resnet18.all.int8.onnx", "out/resnet18.all.int8.onnx", 11800000, &main, *eval};
  models[1] = {"resnet18.int8.onnx", "out/resnet18.int8.onnx", 11790000, &standard, *eval_std};
  models[2] = {"resnet18.onnx", "models/resnet18.onnx", 46748540, &fp32, std::nullopt};

  auto sens = parse_sensitivity_json(R"({"metric": "sqnr", "mode": "only", "layers": [
      {"name": "/conv1/Conv", "metric": 18.5},
      {"name": "/layer1/layer1.0/conv1/Conv", "metric": 31.2},
      {"name": "/fc/Gemm", "metric": 27.9}], "float_set": ["/conv1/Conv"]})",
                                     "sens.json");
  ASSERT_TRUE(sens.has_value()) << sens.status().message();

  auto trace = parse_trace_json(R"({"model_a": "resnet18.onnx", "jump_db": 10, "tensors": [
      {"name": "/relu/Relu_output_0", "op_type": "Relu", "sqnr_db": 33.5, "cosine": 0.9997},
      {"name": "/layer1/layer1.0/relu/Relu_output_0", "op_type": "Relu", "sqnr_db": 9.5,
       "jump": true},
      {"name": "output", "op_type": "Gemm", "sqnr_db": 9.1}]})",
                                "trace.json");
  ASSERT_TRUE(trace.has_value()) << trace.status().message();

  HtmlOptions options;
  options.generated_by = "ptq report test";
  options.trace = &*trace;
  DotOptions dot;
  dot.title = "resnet18.all.int8.onnx";
  auto svg = render_svg(graph_dot(main, dot));
  ASSERT_TRUE(svg.has_value()) << svg.status().message();
  options.graph_svg = *svg;
  const std::string html = html_report(models, &*sens, options);

  // Self-contained: no script, no stylesheet link, no fetched image.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("<?xml"), std::string::npos) << "Graphviz's prolog stays out";

  const fs::path page = dir_ / "report.html";
  ASSERT_TRUE(util::write_file_atomic(page, html).is_ok());

  const fs::path dom_file = dir_ / "dom.html";
  ASSERT_EQ(chromium("--dump-dom 'file://" + page.string() + "'", dom_file), 0)
      << read_file(dir_ / "chromium.err");
  const std::string dom = read_file(dom_file);
  for (const char* text : {"ptq report: resnet18.all.int8.onnx",
                           "Summary",
                           "weighted ops in INT8",
                           "Precision by op type",
                           "Lint: TensorRT placement rules",
                           "small-conv",
                           "leave it float (ptq quantize --exclude /conv1/Conv)",
                           "Sensitivity",
                           "sqnr",
                           "/layer1/layer1.0/conv1/Conv",
                           "Layers kept float",
                           "Error along the graph",
                           "/layer1/layer1.0/relu/Relu_output_0",
                           "Variants side by side",
                           "resnet18.int8.onnx",
                           "resnet18.onnx",
                           "top1",
                           "0.6875",
                           "0.7031",
                           "44.6 MiB",
                           "Graph",
                           "Layers",
                           "ptq report test"}) {
    EXPECT_NE(dom.find(text), std::string::npos) << "missing in the rendered page: " << text;
  }
  // 21 weighted ops in resnet18; all of them INT8 in the main model, 20 in the standard one.
  EXPECT_NE(dom.find("21 of 21"), std::string::npos);
  EXPECT_NE(dom.find("20 / 21"), std::string::npos);
  EXPECT_NE(dom.find("<svg"), std::string::npos) << "inline SVG survives parsing";

  const fs::path png = dir_ / "report.png";
  ASSERT_EQ(chromium("--screenshot='" + png.string() + "' --window-size=1200,2000 'file://" +
                         page.string() + "'",
                     dir_ / "shot.out"),
            0)
      << read_file(dir_ / "chromium.err");
  ASSERT_TRUE(fs::exists(png));
  const std::string bytes = read_file(png);
  ASSERT_GT(bytes.size(), 24u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
  auto be32 = [&](size_t at) {
    return (static_cast<uint32_t>(static_cast<uint8_t>(bytes[at])) << 24) |
           (static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + 1])) << 16) |
           (static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + 2])) << 8) |
           static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + 3]));
  };
  EXPECT_EQ(be32(16), 1200u);  // IHDR width
  EXPECT_EQ(be32(20), 2000u);  // IHDR height
  // A blank 1200x2000 page compresses to a few KiB; text, tables and charts do not.
  EXPECT_GT(bytes.size(), 60000u);
  // Kept for a person to look at (PTQ_REPORT_SCREENSHOT=path).
  if (const char* keep = std::getenv("PTQ_REPORT_SCREENSHOT")) {
    fs::copy_file(png, keep, fs::copy_options::overwrite_existing);
    fs::copy_file(page, std::string(keep) + ".html", fs::copy_options::overwrite_existing);
  }
}

// The error trace's chart: one point per tensor in order, the jump red with a dashed line and
// its name under the axis, +inf hollow at the top.
TEST(HtmlTrace, ChartsEveryTensorAndMarksTheJump) {
  testing::QdqBuilder b;
  b.input("x", {1, 4});
  b.node("Relu", "r", {b.qdq("x")}, {"y"});
  b.output("y");
  ModelEntry entry;
  entry.label = entry.path = "m.onnx";
  entry.model = &b.model;
  ErrorTrace trace{"t.json", "a.onnx", "m.onnx", 10.0, {}};
  const double inf = std::numeric_limits<double>::infinity();
  trace.tensors = {{"x", "", inf, 1.0, -inf, false, false},
                   {"x_dq", "", 35.0, 0.9999, 5.0, false, true},
                   {"y<1>", "Relu", 4.0, 0.8, 31.0, true, false}};
  HtmlOptions options;
  options.trace = &trace;
  const std::string html = html_report(std::span(&entry, 1), nullptr, options);
  EXPECT_NE(html.find("<a href=\"#trace\">"), std::string::npos);
  EXPECT_NE(html.find("<h2 id=\"trace\">Error along the graph</h2>"), std::string::npos);
  EXPECT_NE(html.find("1 jump in red"), std::string::npos);
  size_t circles = 0;
  for (size_t at = html.find("<circle"); at != std::string::npos;
       at = html.find("<circle", at + 1)) {
    ++circles;
  }
  EXPECT_EQ(circles, 3u);
  EXPECT_NE(html.find("fill=\"#fff\" stroke=\"#2e86c1\"><title>x: SQNR inf dB"),
            std::string::npos);
  EXPECT_NE(html.find("<title>y&lt;1&gt; (Relu): SQNR 4 dB, cosine 0.800000, drop 31 dB, error "
                      "jumps here</title>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("class=\"jump\""), std::string::npos);
  EXPECT_NE(html.find("fill=\"#c0392b\">y&lt;1&gt;</text>"), std::string::npos);
  EXPECT_NE(html.find("<td>x_dq (dq)</td>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

// Without a drawing, the graph's text (e.g. its DOT) is shown escaped before the footer.
TEST(HtmlGraphText, ShownEscapedOnlyWithoutADrawing) {
  testing::QdqBuilder b;
  b.input("x", {1, 4});
  b.node("Relu", "r", {b.qdq("x")}, {"y"});
  b.output("y");
  ModelEntry entry;
  entry.label = entry.path = "m.onnx";
  entry.model = &b.model;
  HtmlOptions options;
  options.graph_note = "no drawing";
  options.graph_text = "a -> b [label=\"<q>\"]";
  const std::string html = html_report(std::span(&entry, 1), nullptr, options);
  EXPECT_NE(html.find("<pre class=\"dot\">a -&gt; b [label=&quot;&lt;q&gt;&quot;]</pre>\n<footer>"),
            std::string::npos)
      << html;
  options.graph_svg = "<svg></svg>";
  EXPECT_EQ(html_report(std::span(&entry, 1), nullptr, options).find("<pre"), std::string::npos);
}

}  // namespace
}  // namespace ptq::report
