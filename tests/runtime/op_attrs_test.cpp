// The op attributes both backends read (ptq/runtime/op_attrs.h): windows with their defaults,
// auto_pad and ceil_mode resolved, ConvTranspose's output_shape, axes, integer inputs.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "ptq/ir/builders.h"
#include "ptq/runtime/op_attrs.h"

namespace ptq::runtime {
namespace {

using V = std::vector<int64_t>;

ir::Node node_with(std::vector<ir::Attribute> attrs, std::string op = "Conv") {
  ir::Node n = ir::make_node(std::move(op), "n1", {"x", "w"}, {"y"});
  n.attributes = std::move(attrs);
  return n;
}

TEST(OpAttrs, WindowDefaults) {
  const Expected<Window> w = read_window(node_with({}), {3, 3});
  ASSERT_TRUE(w) << w.status().message();
  EXPECT_EQ(w->strides, (V{1, 1}));
  EXPECT_EQ(w->dilations, (V{1, 1}));
  EXPECT_EQ(w->pads, (V{0, 0, 0, 0}));
  EXPECT_EQ(w->auto_pad, "NOTSET");
  EXPECT_FALSE(w->ceil_mode);
}

TEST(OpAttrs, WindowErrorsNameTheNode) {
  for (const ir::Attribute& bad : {ir::ints_attr("strides", {2}), ir::ints_attr("strides", {0, 1}),
                                   ir::ints_attr("pads", {1, 1, -1, 1}),
                                   ir::string_attr("auto_pad", "SAME")}) {
    const Expected<Window> w = read_window(node_with({bad}), {3, 3});
    ASSERT_FALSE(w) << bad.name;
    EXPECT_NE(w.status().message().find("'n1'"), std::string::npos) << w.status().message();
  }
}

// SAME_*: out = ceil(in / stride); the odd pad goes to the end (UPPER) or the start (LOWER).
TEST(OpAttrs, SamePadsSplitByAutoPad) {
  for (const auto& [mode, begin, end] :
       {std::tuple{"SAME_UPPER", 0, 1}, std::tuple{"SAME_LOWER", 1, 0}}) {
    const ir::Node n =
        node_with({ir::string_attr("auto_pad", mode), ir::ints_attr("strides", {2})});
    Expected<Window> w = read_window(n, {3});
    ASSERT_TRUE(w);
    const Expected<V> out = forward_output_dims(node_with({}), *w, {6});
    ASSERT_TRUE(out);
    EXPECT_EQ(*out, V{3}) << mode;
    EXPECT_EQ(w->pads, (V{begin, end})) << mode;
  }
}

// ceil_mode keeps a last partial window, unless it would start in the end padding.
TEST(OpAttrs, CeilModeAddsTheLastWindow) {
  Expected<Window> down = read_window(node_with({ir::ints_attr("strides", {2})}, "MaxPool"), {3});
  Expected<Window> up = read_window(
      node_with({ir::ints_attr("strides", {2}), ir::int_attr("ceil_mode", 1)}, "MaxPool"), {3});
  ASSERT_TRUE(down && up);
  EXPECT_EQ(*forward_output_dims(node_with({}), *down, {6}), V{2});
  EXPECT_EQ(*forward_output_dims(node_with({}), *up, {6}), V{3});
  Expected<Window> padded = read_window(
      node_with({ir::ints_attr("strides", {2}), ir::int_attr("ceil_mode", 1),
                 ir::ints_attr("pads", {0, 1})}, "MaxPool"), {2});
  ASSERT_TRUE(padded);
  EXPECT_EQ(*forward_output_dims(node_with({}), *padded, {4}), V{2});  // not 3: all padding
}

TEST(OpAttrs, WindowLargerThanTheInputIsAnError) {
  Expected<Window> w = read_window(node_with({}), {5});
  ASSERT_TRUE(w);
  EXPECT_FALSE(forward_output_dims(node_with({}), *w, {4}));
}

// ConvTranspose: full = stride * (in - 1) + output_padding + extent - pads; output_shape sets
// the output and the pads follow, floor-halved (a negative total extends the end).
TEST(OpAttrs, TransposeOutputDims) {
  Expected<Window> w = read_window(node_with({ir::ints_attr("strides", {2})}), {3});
  ASSERT_TRUE(w);
  Window plain = *w;
  EXPECT_EQ(*transpose_output_dims(node_with({}), plain, {3}), V{7});
  const ir::Node shaped = node_with({ir::ints_attr("output_shape", {8})}, "ConvTranspose");
  Window wide = *w;
  ASSERT_EQ(*transpose_output_dims(shaped, wide, {3}), V{8});
  EXPECT_EQ(wide.pads, (V{0, -1}));
  const ir::Node padded = node_with({ir::ints_attr("output_padding", {1})}, "ConvTranspose");
  Window more = *w;
  EXPECT_EQ(*transpose_output_dims(padded, more, {3}), V{8});
  const ir::Node bad = node_with({ir::ints_attr("output_padding", {1, 1})}, "ConvTranspose");
  Window any = *w;
  EXPECT_FALSE(transpose_output_dims(bad, any, {3}));
}

TEST(OpAttrs, AxesShapesAndIntegerInputs) {
  const ir::Node n = node_with({}, "Softmax");
  EXPECT_EQ(*normalize_axis(n, -1, 4), 3);
  EXPECT_EQ(*normalize_axis(n, 0, 4), 0);
  EXPECT_FALSE(normalize_axis(n, 4, 4));
  EXPECT_FALSE(normalize_axis(n, -5, 4));
  EXPECT_EQ(dims_product({2, 3, 4}, 1, 3), 12);
  EXPECT_EQ(dims_product({2, 3, 4}, 1, 9), 12);  // dims past the rank count as 1
  EXPECT_EQ(dims_product({2, 3, 4}, 2, 2), 1);
  const std::vector<int32_t> pads = {1, -2, 3};
  EXPECT_EQ(to_int64s(ir::make_tensor<int32_t>({3}, pads)), (V{1, -2, 3}));
}

}  // namespace
}  // namespace ptq::runtime
