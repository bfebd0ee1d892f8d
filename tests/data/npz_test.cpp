// .npz reading: np.savez (stored) and np.savez_compressed (deflated) members, names, errors.
#include <gtest/gtest.h>
#include <zlib.h>

#include <chrono>

#include "test_util.h"

namespace ptq::data::test {
namespace {

using ir::DType;

// Little-endian bytes of v.
std::string le(uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

// A raw deflate stream of `npy_header` followed by `mib` MiB of zeros. Each MiB is compressed
// once after a full flush (no reference to earlier data), so its blocks can be repeated: a
// 2.4 GB member costs 2.4 MB of stream and no time to build.
std::string deflate_header_and_zeros(const std::string& npy_header, int64_t mib) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  auto run = [&](std::string in, int flush) {
    std::string out(deflateBound(&z, in.size()) + 64, '\0');
    z.next_in = reinterpret_cast<Bytef*>(in.data());
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    EXPECT_NE(deflate(&z, flush), Z_STREAM_ERROR);
    EXPECT_EQ(z.avail_in, 0u);
    out.resize(out.size() - z.avail_out);
    return out;
  };
  std::string stream = run(npy_header, Z_FULL_FLUSH);
  const std::string mib_of_zeros = run(std::string(1 << 20, '\0'), Z_FULL_FLUSH);
  for (int64_t i = 0; i < mib; ++i) stream += mib_of_zeros;
  stream += run("", Z_FINISH);
  deflateEnd(&z);
  return stream;
}

// A zip holding one deflated member whose directory records `size` bytes and `crc`.
std::string zip_of_one_member(const std::string& name, const std::string& stream, uint64_t size,
                              uint32_t crc) {
  const std::string sizes = le(crc, 4) + le(stream.size(), 4) + le(size, 4);
  const std::string local = le(0x04034b50, 4) + le(20, 2) + le(0, 2) + le(8, 2) + le(0, 4) +
                            sizes + le(name.size(), 2) + le(0, 2) + name;
  const std::string central = le(0x02014b50, 4) + le(20, 2) + le(20, 2) + le(0, 2) + le(8, 2) +
                              le(0, 4) + sizes + le(name.size(), 2) + le(0, 2) + le(0, 2) +
                              le(0, 2) + le(0, 2) + le(0, 4) + le(0, 4) + name;
  const uint64_t central_at = local.size() + stream.size();
  const std::string end = le(0x06054b50, 4) + le(0, 2) + le(0, 2) + le(1, 2) + le(1, 2) +
                          le(central.size(), 4) + le(central_at, 4) + le(0, 2);
  return local + stream + central + end;
}

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
  const ir::Graph g =
      graph_of({batched("y", DType::kInt64, {2}), batched("x", DType::kFloat32, {3, 4})});
  ASSERT_TRUE(ds->bind(g).is_ok());
  auto b = ds->batch(0);
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->size(), 2u);
  EXPECT_EQ((*b)[0].first, "y");
  EXPECT_EQ((*b)[1].first, "x");
  // A member that is no model input is an error naming it.
  const ir::Graph other =
      graph_of({batched("x", DType::kFloat32, {3, 4}), batched("z", DType::kInt64, {2})});
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

TEST(Npz, HugeDeflatedMemberIsRefusedByItsHeaderBeforeInflating) {
  // x.npy claims 2400 samples of 256x1024 float32 (2.4 GB), and its stream really inflates to
  // that. The directory's CRC is wrong on purpose: a reader that inflated the member before
  // checking its header would fail on it (after ~30 s) instead of naming the shape.
  TempDir dir;
  const int64_t mib = 2400;
  const std::string header = npy_bytes("<f4", {mib, 256, 1024}, "");
  const uint64_t size = header.size() + static_cast<uint64_t>(mib << 20);
  write_bytes(dir / "huge.npz", zip_of_one_member("x.npy", deflate_header_and_zeros(header, mib),
                                                  size, 0x12345678));
  const auto start = std::chrono::steady_clock::now();
  auto ds = Dataset::open(spec_of({(dir / "huge.npz").string()}));
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_EQ(ds->inputs()[0].sample_shape, (ir::Shape{256, 1024}));
  EXPECT_INVALID(ds->bind(graph_of({batched("x", DType::kFloat32, {256, 512})})),
                 "huge.npz:x.npy gives samples of [256, 1024]");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(Npz, DeflatedMemberLargerThanItsDirectorySizeIsRefusedAtOpen) {
  // The header claims 2.4 GB; the directory (and the stream) hold 1 MiB of data.
  TempDir dir;
  const std::string header = npy_bytes("<f4", {2400, 256, 1024}, "");
  const uint64_t size = header.size() + (1 << 20);
  write_bytes(dir / "short.npz", zip_of_one_member("x.npy", deflate_header_and_zeros(header, 1),
                                                   size, 0));
  EXPECT_INVALID(Dataset::open(spec_of({(dir / "short.npz").string()})),
                 "short.npz:x.npy: truncated: float32 [2400, 256, 1024] needs 2516582400 data "
                 "bytes but has 1048576");
}

TEST(Npz, CorruptDeflatedDataFailsTheFirstRead) {
  // The header inflates, but the stream ends before the data the directory records: that
  // shows when a sample is read.
  TempDir dir;
  const std::string header = npy_bytes("<f4", {4, 2}, "");
  const uint64_t size = header.size() + 32;
  write_bytes(dir / "bad.npz",
              zip_of_one_member("x.npy", deflate_header_and_zeros(header, 0), size, 0));
  auto ds = Dataset::open(spec_of({(dir / "bad.npz").string()}));
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_INVALID(ds->read(0, 1), "bad.npz:x.npy");
  EXPECT_INVALID(ds->read(1, 1), "bad.npz:x.npy");  // the failure is kept, not retried
}

TEST(Npz, Zip64SizesAbove2To63AreCorrupt) {
  // The regression input's ZIP64 extra field (right after the central entry's name) with its
  // uncompressed size set to 2^64 - 1, which reads back negative as int64.
  TempDir dir;
  std::string zip = read_bytes(fs::path(PTQ_SOURCE_DIR) / "tests" / "fuzz" / "regressions" /
                               "npz_member_beyond_deflate.npz");
  const size_t central = zip.rfind("PK\x01\x02");
  ASSERT_NE(central, std::string::npos);
  zip.replace(central + 46 + 5 + 4, 8, std::string(8, '\xff'));
  write_bytes(dir / "negative.npz", zip);
  EXPECT_INVALID(Dataset::open(spec_of({(dir / "negative.npz").string()})),
                 "negative.npz:x.npy: corrupt zip (a ZIP64 size or offset above 2^63)");
}

}  // namespace
}  // namespace ptq::data::test
