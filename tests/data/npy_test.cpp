// .npy reading (as NumPy writes it, and hand-made edge cases), load_npy, save_npy, NpyWriter.
#include <gtest/gtest.h>

#include <cstring>

#include "test_util.h"

namespace ptq::data::test {
namespace {

using ir::DType;

// Every sample of a one-source dataset, in order, as one tensor.
ir::Tensor read_all(const Dataset& ds) {
  auto t = ds.read(0, ds.size());
  EXPECT_TRUE(t.has_value()) << t.status().message();
  return t.has_value() ? std::move((*t)[0].second) : ir::Tensor();
}

struct DtypeCase {
  const char* name;
  DType dtype;
};

TEST(Npy, ReadsEveryDtypeAsNumpyWritesIt) {
  const DtypeCase cases[] = {{"f4", DType::kFloat32}, {"f2", DType::kFloat16},
                             {"f8", DType::kFloat64}, {"u1", DType::kUInt8},
                             {"i1", DType::kInt8},    {"i4", DType::kInt32},
                             {"i8", DType::kInt64},   {"b1", DType::kBool}};
  for (const DtypeCase& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path npy = fixtures() / (std::string(c.name) + ".npy");
    auto ds = Dataset::open(spec_of({npy.string()}));
    ASSERT_TRUE(ds.has_value()) << ds.status().message();
    EXPECT_EQ(ds->size(), 5);
    ASSERT_EQ(ds->inputs().size(), 1u);
    EXPECT_EQ(ds->inputs()[0].dtype, c.dtype);
    EXPECT_EQ(ds->inputs()[0].sample_shape, (ir::Shape{2, 3}));
    const ir::Tensor all = read_all(*ds);
    EXPECT_EQ(all.shape(), (ir::Shape{5, 2, 3}));
    EXPECT_EQ(bytes_of(all), read_bytes(fixtures() / (std::string(c.name) + ".raw")));
    auto whole = load_npy(npy);
    ASSERT_TRUE(whole.has_value()) << whole.status().message();
    EXPECT_EQ(bytes_of(*whole), read_bytes(fixtures() / (std::string(c.name) + ".raw")));
  }
}

TEST(Npy, ConvertsBigEndianData) {
  for (const char* name : {"be_f4", "be_i8"}) {
    SCOPED_TRACE(name);
    auto ds = Dataset::open(spec_of({(fixtures() / (std::string(name) + ".npy")).string()}));
    ASSERT_TRUE(ds.has_value()) << ds.status().message();
    EXPECT_EQ(bytes_of(read_all(*ds)), read_bytes(fixtures() / (std::string(name) + ".raw")));
    // One sample from the middle, read by offset, is swapped too.
    auto one = ds->read(3, 1);
    ASSERT_TRUE(one.has_value());
    const std::string raw = read_bytes(fixtures() / (std::string(name) + ".raw"));
    const size_t sample = raw.size() / 5;
    EXPECT_EQ(bytes_of((*one)[0].second), raw.substr(3 * sample, sample));
  }
}

TEST(Npy, ReadsFormatVersions2And3) {
  for (const char* name : {"v2", "v3"}) {
    SCOPED_TRACE(name);
    auto ds = Dataset::open(spec_of({(fixtures() / (std::string(name) + ".npy")).string()}));
    ASSERT_TRUE(ds.has_value()) << ds.status().message();
    EXPECT_EQ(ds->size(), 4);
    EXPECT_EQ(bytes_of(read_all(*ds)), read_bytes(fixtures() / (std::string(name) + ".raw")));
  }
}

TEST(Npy, HandMadeHeaders) {
  TempDir dir;
  const std::vector<float> v = random_floats(6, 3);
  const std::string data(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  // Double quotes, no trailing comma, odd spacing: all valid Python literals.
  std::string npy = npy_bytes("<f4", {3, 2}, data);
  const std::string dict = "{\"descr\":\"<f4\" ,\"fortran_order\":False,\"shape\":( 3 ,2 )}";
  std::string custom = "\x93NUMPY\x01";
  custom += '\0';
  std::string padded = dict + std::string(128 - 10 - dict.size() - 1, ' ') + "\n";
  custom += static_cast<char>(padded.size());
  custom += '\0';
  custom += padded + data;
  write_bytes(dir / "custom.npy", custom);
  auto ds = Dataset::open(spec_of({(dir / "custom.npy").string()}));
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_EQ(ds->size(), 3);
  EXPECT_EQ(bytes_of(read_all(*ds)), data);
}

TEST(Npy, Errors) {
  TempDir dir;
  const std::vector<float> v = random_floats(6, 4);
  const std::string data(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  auto open = [&](const std::string& name, const std::string& bytes) {
    write_bytes(dir / name, bytes);
    return Dataset::open(spec_of({(dir / name).string()}));
  };
  EXPECT_INVALID(Dataset::open(spec_of({(fixtures() / "fortran.npy").string()})), "Fortran");
  EXPECT_INVALID(Dataset::open(spec_of({(fixtures() / "fortran.npy").string()})), "fortran.npy");
  EXPECT_INVALID(Dataset::open(spec_of({(fixtures() / "structured.npy").string()})),
                 "structured");
  EXPECT_INVALID(Dataset::open(spec_of({(fixtures() / "complex.npy").string()})),
                 "unsupported dtype '<c8'");
  const std::string good = npy_bytes("<f4", {3, 2}, data);
  EXPECT_INVALID(open("short.npy", good.substr(0, good.size() - 4)), "truncated");
  EXPECT_INVALID(open("short.npy", good.substr(0, good.size() - 4)), "short.npy");
  EXPECT_INVALID(open("header.npy", good.substr(0, 40)), "truncated .npy header");
  EXPECT_INVALID(open("magic.npy", "PK" + good.substr(2)), "bad magic");
  EXPECT_INVALID(open("version.npy", good.substr(0, 6) + "\x07" + good.substr(7)),
                 "unsupported .npy format version 7");
  EXPECT_INVALID(open("empty.npy", npy_bytes("<f4", {0, 2}, "")), "empty source");
  EXPECT_INVALID(open("dtype.npy", npy_bytes("<U3", {2}, std::string(24, 'a'))),
                 "unsupported dtype '<U3'");
  EXPECT_INVALID(open("garbage.npy", npy_bytes("<f4", {3, 2}, data).replace(20, 5, "#####")),
                 "bad .npy header");
  EXPECT_INVALID(load_npy(dir / "short.npy"), "truncated");
  EXPECT_INVALID(load_npy(dir / "absent.npy"), "absent.npy");
}

TEST(Npy, SaveNpyIsReadByNumpy) {
  TempDir dir;
  const std::vector<float> v = random_floats(12, 5);
  const ir::Tensor f = ir::make_tensor<float>({3, 4}, std::span<const float>(v));
  const ir::Tensor i = ir::make_tensor<int64_t>({5}, {-3, 1LL << 40, 7, 0, -9});
  ASSERT_TRUE(save_npy(dir / "f.npy", f).is_ok());
  ASSERT_TRUE(save_npy(dir / "i.npy", i).is_ok());
  write_bytes(dir / "f.raw", bytes_of(f));
  write_bytes(dir / "i.raw", bytes_of(i));
  const std::string check = fmt::format(
      "-c \"import numpy as np, sys; d=sys.argv[1]; "
      "f=np.load(d+'/f.npy'); i=np.load(d+'/i.npy'); "
      "assert f.dtype==np.float32 and f.shape==(3,4) and "
      "f.tobytes()==open(d+'/f.raw','rb').read(); "
      "assert i.dtype==np.int64 and i.shape==(5,) and i.tobytes()==open(d+'/i.raw','rb').read()\" "
      "'{}'",
      dir.path().string());
  EXPECT_EQ(python(check), 0);
  auto back = load_npy(dir / "f.npy");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(bytes_of(*back), bytes_of(f));
}

TEST(Npy, NpyWriterStreamsRowsAndCommitsAtomically) {
  TempDir dir;
  const std::vector<float> v = random_floats(10, 6);
  auto w = NpyWriter::create(dir / "out.npy", DType::kFloat32, {2}, 5);
  ASSERT_TRUE(w.has_value()) << w.status().message();
  ASSERT_TRUE(
      (*w)->append(ir::make_tensor<float>({3, 2}, std::span<const float>(v.data(), 6))).is_ok());
  EXPECT_FALSE(fs::exists(dir / "out.npy"));
  ASSERT_TRUE((*w)->append(ir::make_tensor<float>({2, 2}, std::span<const float>(v.data() + 6, 4)))
                  .is_ok());
  ASSERT_TRUE((*w)->commit().is_ok());
  auto back = load_npy(dir / "out.npy");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->shape(), (ir::Shape{5, 2}));
  EXPECT_EQ(std::memcmp(back->raw(), v.data(), 40), 0);

  auto short_w = NpyWriter::create(dir / "short.npy", DType::kFloat32, {2}, 5);
  ASSERT_TRUE(short_w.has_value());
  ASSERT_TRUE((*short_w)
                  ->append(ir::make_tensor<float>({1, 2}, std::span<const float>(v.data(), 2)))
                  .is_ok());
  EXPECT_FALSE((*short_w)
                   ->append(ir::make_tensor<float>({1, 3}, std::span<const float>(v.data(), 3)))
                   .is_ok());
  EXPECT_FALSE((*short_w)->commit().is_ok());
  short_w->reset();
  EXPECT_FALSE(fs::exists(dir / "short.npy"));
}

TEST(Npy, SamplesWithoutValuesAreRefused) {
  // 10^14 samples of shape (0): no data bytes bound the count, which the dataset's sample
  // order would allocate (found while writing fuzz_npy_reader).
  TempDir dir;
  write_bytes(dir / "empty_rows.npy", npy_bytes("<f4", {100000000000000, 0}, ""));
  EXPECT_INVALID(Dataset::open(spec_of({(dir / "empty_rows.npy").string()})),
                 "empty_rows.npy gives samples of shape [0], which hold no values");
}

}  // namespace
}  // namespace ptq::data::test
