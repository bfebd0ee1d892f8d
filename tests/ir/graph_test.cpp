#include <gtest/gtest.h>

#include "ptq/ir.h"
#include "ptq/ir/builders.h"

using namespace ptq::ir;

namespace {
Node node(std::string op, std::vector<std::string> in, std::vector<std::string> out,
          std::string name = "") {
  return make_node(std::move(op), std::move(name), std::move(in), std::move(out));
}
}  // namespace

//   x ──► A ──► a ──► B ──► b ──► C ──► y
//          └────────────────────► ┘
TEST(Graph, TopologicalOrderSortsUnorderedNodes) {
  Graph g;
  g.inputs.push_back({"x", {}, {}});
  g.nodes.push_back(node("Add", {"b", "a"}, {"y"}, "C"));
  g.nodes.push_back(node("Relu", {"a"}, {"b"}, "B"));
  g.nodes.push_back(node("Relu", {"x"}, {"a"}, "A"));
  auto order = topological_order(g);
  ASSERT_TRUE(order.has_value()) << order.status().message();
  EXPECT_EQ(*order, (std::vector<size_t>{2, 1, 0}));
}

TEST(Graph, TopologicalOrderKeepsFileOrderWhenSorted) {
  Graph g;
  g.inputs.push_back({"x", {}, {}});
  g.nodes.push_back(node("Relu", {"x"}, {"a"}));
  g.nodes.push_back(node("Relu", {"x"}, {"b"}));
  g.nodes.push_back(node("Add", {"a", "b"}, {"c"}));
  auto order = topological_order(g);
  ASSERT_TRUE(order.has_value());
  EXPECT_EQ(*order, (std::vector<size_t>{0, 1, 2}));
}

TEST(Graph, CycleIsNamed) {
  Graph g;
  g.nodes.push_back(node("Relu", {"b"}, {"a"}, "first"));
  g.nodes.push_back(node("Relu", {"a"}, {"b"}, "second"));
  auto order = topological_order(g);
  ASSERT_FALSE(order.has_value());
  EXPECT_NE(order.status().message().find("cycle"), std::string::npos);
  EXPECT_NE(order.status().message().find("'first'"), std::string::npos);
}

TEST(Graph, MissingProducerAndDoubleProducerAreNamed) {
  Graph g;
  g.nodes.push_back(node("Relu", {"nowhere"}, {"a"}, "r"));
  auto order = topological_order(g);
  ASSERT_FALSE(order.has_value());
  EXPECT_NE(order.status().message().find("'nowhere'"), std::string::npos);

  Graph h;
  h.inputs.push_back({"x", {}, {}});
  h.nodes.push_back(node("Relu", {"x"}, {"a"}, "one"));
  h.nodes.push_back(node("Relu", {"x"}, {"a"}, "two"));
  order = topological_order(h);
  ASSERT_FALSE(order.has_value());
  EXPECT_NE(order.status().message().find("two producers"), std::string::npos);
}

TEST(Graph, IndexAndAttributes) {
  Graph g;
  g.inputs.push_back(
      {"x", {DType::kFloat32, std::vector<Dim>{Dim::symbol("N"), Dim::of(3)}, {}}, {}});
  Node conv = node("Conv", {"x", "w"}, {"y"}, "conv");
  conv.set_attr(ints_attr("strides", {2, 2}));
  g.nodes.push_back(conv);
  g.nodes.push_back(node("Relu", {"y"}, {"z"}));
  g.nodes.push_back(node("Sigmoid", {"y"}, {"s"}));
  g.set_initializer("w", Tensor(DType::kFloat32, {4, 3, 1, 1}));
  GraphIndex idx(g);
  EXPECT_EQ(idx.producer("y"), 0);
  EXPECT_EQ(idx.producer("x"), -1);
  EXPECT_EQ(idx.consumers("y"), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(g.nodes[0].attr_ints("strides", {}), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(g.nodes[0].attr_int("group", 1), 1);
  EXPECT_EQ(g.value_dtype("w"), DType::kFloat32);
  EXPECT_EQ(dims_str(g.inputs[0].type.dims), "[N, 3]");
  EXPECT_FALSE(g.inputs[0].type.concrete().has_value());
}
