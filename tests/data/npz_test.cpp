// .npz reading: np.savez (stored) and np.savez_compressed (deflated) members, names, errors.
#include <gtest/gtest.h>

#include "test_util.h"

namespace ptq::data::test {
namespace {

using ir::DType;

const ir::Tensor* find(const NamedTensors& batch, std::string_view name) {
  for (const auto& [n, t] : batch) {
    if (n == name) return &t;
  }
  return nullptr;
}

TEST(Npz, StoredAndDeflatedMembersReadExactly) {
  for (const char* file : {"stored.npz", "deflated.npz"}) {
    SCOPED_TRACE(file);
    auto ds = Dataset::open(spec_of({(fixtures() / file).string()}));
    ASSERT_TRUE(ds.has_value()) << ds.status().message();
    EXPECT_EQ(ds->size(), 6);
    ASSERT_EQ(ds->inputs().size(), 2u);
    auto all = ds->read(0, 6);
    ASSERT_TRUE(all.has_value()) << all.status().message();
    const ir::Tensor* x = find(*all, "x");
    const ir::Tensor* y = find(*all, "y");
    ASSERT_TRUE(x && y);
    EXPECT_EQ(x->dtype(), DType::kFloat32);
    EXPECT_EQ(x->shape(), (ir::Shape{6, 3, 4}));
    EXPECT_EQ(y->dtype(), DType::kInt64);
    EXPECT_EQ(bytes_of(*x), read_bytes(fixtures() / "npz_x.raw"));
    EXPECT_EQ(bytes_of(*y), read_bytes(fixtures() / "npz_y.raw"));
  }
}

TEST(Npz, BindsMembersToInputsByName) {
  auto ds = Dataset::open(spec_of({(fixtures() / "deflated.npz").string()}));
  ASSERT_TRUE(ds.has_value());
  // The model lists y first: batches follow the model's order.
  const ir::Graph g = graph_of({batched("y", DType::kInt64, {2}), batched("x", DType::kFloat32, {3, 4})});
  ASSERT_TRUE(ds->bind(g).is_ok());
  auto b = ds->batch(0);
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->size(), 2u);
  EXPECT_EQ((*b)[0].first, "y");
  EXPECT_EQ((*b)[1].first, "x");
  // A member that is no model input is an error naming it.
  const ir::Graph other = graph_of({batched("x", DType::kFloat32, {3, 4}), batched("z", DType::kInt64, {2})});
  EXPECT_INVALID(ds->bind(other), "'y'");
}

TEST(Npz, LargeDeflatedMemberSpanningChunks) {
  auto ds = Dataset::open(spec_of({(fixtures() / "big.npz").string()}));
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_EQ(ds->size(), 1100);
  auto all = ds->read(0, 1100);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(bytes_of((*all)[0].second), read_bytes(fixtures() / "npz_big.raw"));
}

TEST(Npz, UnnamedArrayFeedsTheOnlyInput) {
  auto ds = Dataset::open(spec_of({(fixtures() / "unnamed.npz").string()}));
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_EQ(ds->inputs()[0].name, "arr_0");
  ASSERT_TRUE(ds->bind(graph_of({batched("images", DType::kFloat32, {3, 4})})).is_ok());
  EXPECT_EQ(ds->inputs()[0].name, "images");
  auto all = ds->read(0, ds->size());
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(bytes_of((*all)[0].second), read_bytes(fixtures() / "npz_x.raw"));
}

TEST(Npz, NamedSourcePicksItsMember) {
  auto ds = Dataset::open(spec_of({"y=" + (fixtures() / "stored.npz").string()}));
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  ASSERT_EQ(ds->inputs().size(), 1u);
  EXPECT_EQ(ds->inputs()[0].name, "y");
  EXPECT_INVALID(Dataset::open(spec_of({"w=" + (fixtures() / "stored.npz").string()})),
                 "none is named 'w'");
}

TEST(Npz, Errors) {
  TempDir dir;
  const std::string stored = read_bytes(fixtures() / "stored.npz");
  const std::string deflated = read_bytes(fixtures() / "deflated.npz");
  auto open = [&](const std::string& name, const std::string& bytes) {
    write_bytes(dir / name, bytes);
    return Dataset::open(spec_of({(dir / name).string()}));
  };
  EXPECT_INVALID(open("cut.npz", stored.substr(0, stored.size() - 30)), "cut.npz");
  EXPECT_INVALID(open("cut.npz", stored.substr(0, stored.size() - 30)), "not a zip");
  EXPECT_INVALID(open("noise.npz", std::string(300, 'z')), "not a zip/npz file");
  // Flipping bytes inside the deflate stream: corrupt data or a CRC mismatch, never silence.
  std::string bad = deflated;
  for (size_t i = 100; i < 110; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
  EXPECT_INVALID(open("flipped.npz", bad), "flipped.npz:x.npy");
  // The member's data cut short while the directory still claims it (a hole in the middle).
  std::string hole = stored.substr(0, 200) + stored.substr(260);
  EXPECT_INVALID(open("hole.npz", hole), "hole.npz");
  EXPECT_INVALID(Dataset::open(spec_of({(fixtures() / "notnpy.npz").string()})),
                 "member 'readme.txt' is not a .npy array");
  EXPECT_INVALID(Dataset::open(spec_of({(fixtures() / "empty.npz").string()})), "empty source");
}

}  // namespace
}  // namespace ptq::data::test
