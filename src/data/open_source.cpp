// Recognises what a --data argument points at and opens its readers.
#include <algorithm>
#include <cctype>
#include <map>

#include "npy.h"
#include "reader.h"
#include "zip.h"

namespace ptq::data {

namespace fs = std::filesystem;

namespace {

std::string lower_ext(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return std::tolower(c); });
  return e;
}

bool is_image_ext(const std::string& e) { return e == ".png" || e == ".jpg" || e == ".jpeg"; }

// Regular files of a folder, sorted by name (byte order), hidden files skipped.
Expected<std::vector<fs::path>> list_files(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().starts_with(".")) continue;
    if (e.is_regular_file(ec)) out.push_back(e.path());
  }
  if (ec) return invalid_input("cannot list '{}': {}", dir.string(), ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

Expected<std::vector<fs::path>> list_dirs(const fs::path& dir, std::string_view prefix) {
  std::error_code ec;
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec) && e.path().filename().string().starts_with(prefix)) {
      out.push_back(e.path());
    }
  }
  if (ec) return invalid_input("cannot list '{}': {}", dir.string(), ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

// k for "input_<k>.pb", else -1.
int64_t input_index(const fs::path& p) {
  const std::string name = p.filename().string();
  if (!name.starts_with("input_") || !name.ends_with(".pb")) return -1;
  const std::string digits = name.substr(6, name.size() - 9);
  if (digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return -1;
  }
  return std::stoll(digits);
}

Expected<Source> open_npy(Source src) {
  PTQ_ASSIGN_OR_RETURN(File f, File::open(src.path));
  PTQ_ASSIGN_OR_RETURN(NpyHeader h, read_npy_header(f, 0, f.size(), src.path));
  src.entries.push_back({"", make_contiguous_reader(std::move(f), src.path, h.data_offset, h.dtype,
                                                    h.swap, h.shape, 1)});
  return src;
}

// One member's reader. Only its header is read (a deflated member's first bytes inflated), so
// dtype and shape are checked, here and by bind(), before any data is decompressed.
Expected<std::unique_ptr<SampleReader>> open_npz_member(const File& zip, const ZipMember& m,
                                                        const std::string& what) {
  PTQ_ASSIGN_OR_RETURN(int64_t at, member_data_offset(zip, m));
  // Each member reads through its own descriptor.
  PTQ_ASSIGN_OR_RETURN(File own, File::open(zip.name()));
  if (m.method == 0) {
    PTQ_ASSIGN_OR_RETURN(NpyHeader h, read_npy_header(zip, at, at + m.size, what));
    return make_contiguous_reader(std::move(own), what, h.data_offset, h.dtype, h.swap, h.shape,
                                  1);
  }
  auto prefix = [&](int64_t from, int64_t n) -> Expected<std::string> {
    PTQ_ASSIGN_OR_RETURN(std::string bytes, inflate_prefix(zip, m, at, from + n));
    return bytes.substr(static_cast<size_t>(from));
  };
  PTQ_ASSIGN_OR_RETURN(NpyHeader h, read_npy_header(prefix, m.size, what));
  return make_deflated_member_reader(std::move(own), m, at, h, what);
}

Expected<Source> open_npz(Source src) {
  src.kind = Source::Kind::kNpz;
  PTQ_ASSIGN_OR_RETURN(File zip, File::open(src.path));
  PTQ_ASSIGN_OR_RETURN(std::vector<ZipMember> members, list_zip(zip));
  if (members.empty()) return invalid_input("empty source: '{}' holds no arrays", src.path);
  for (const ZipMember& m : members) {
    if (!m.name.ends_with(".npy")) {
      return invalid_input("'{}': member '{}' is not a .npy array", src.path, m.name);
    }
    PTQ_ASSIGN_OR_RETURN(auto reader, open_npz_member(zip, m, src.path + ":" + m.name));
    src.entries.push_back({m.name.substr(0, m.name.size() - 4), std::move(reader)});
  }
  return src;
}

Expected<Source> open_raw(Source src, const DatasetSpec& spec) {
  auto it = spec.raw_shapes.find(src.input);
  if (it == spec.raw_shapes.end()) it = spec.raw_shapes.find("");
  if (it == spec.raw_shapes.end()) {
    return usage_error("'{}' is raw float32 data: give its shape with --shape 1,3,224,224",
                       src.path);
  }
  const ir::Shape& record = it->second;
  for (int64_t d : record) {
    if (d <= 0) return usage_error("--shape {} has a dimension < 1", ir::shape_str(record));
  }
  PTQ_ASSIGN_OR_RETURN(File f, File::open(src.path));
  const int64_t record_bytes = ir::num_elements(record) * 4;
  if (f.size() == 0) return invalid_input("empty source: '{}' is empty", src.path);
  if (f.size() % record_bytes != 0) {
    return invalid_input("'{}' has {} bytes, not a multiple of one float32 sample of shape {} "
                         "({} bytes)",
                         src.path, f.size(), ir::shape_str(record), record_bytes);
  }
  const int64_t records = f.size() / record_bytes;
  src.entries.push_back({"", make_contiguous_reader(std::move(f), src.path, 0,
                                                    ir::DType::kFloat32, false, record, records)});
  return src;
}

Expected<Source> open_backend(Source src, std::vector<fs::path> sets) {
  src.kind = Source::Kind::kBackend;
  // inputs[k] = input_k.pb of every data set, in data set order.
  std::map<int64_t, std::vector<fs::path>> inputs;
  std::vector<std::vector<int64_t>> found(sets.size());
  for (size_t s = 0; s < sets.size(); ++s) {
    PTQ_ASSIGN_OR_RETURN(std::vector<fs::path> files, list_files(sets[s]));
    for (const fs::path& f : files) {
      const int64_t k = input_index(f);
      if (k >= 0) {
        inputs[k].push_back(f);
        found[s].push_back(k);
      }
    }
  }
  // Every data set must hold input_0.pb .. input_{K-1}.pb for the same K.
  const size_t count = inputs.empty() ? 0 : static_cast<size_t>(inputs.rbegin()->first) + 1;
  for (size_t s = 0; s < sets.size(); ++s) {
    std::sort(found[s].begin(), found[s].end());
    for (size_t k = 0; k < count; ++k) {
      if (k >= found[s].size() || found[s][k] != static_cast<int64_t>(k)) {
        return invalid_input("'{}' lacks input_{}.pb", sets[s].string(), k);
      }
    }
  }
  if (inputs.empty())
    return invalid_input("empty source: '{}' holds no input_*.pb files", src.path);
  for (auto& [k, files] : inputs) {
    std::string name;
    const std::string where = fmt::format("{} (input_{}.pb)", src.path, k);
    PTQ_ASSIGN_OR_RETURN(auto reader, make_pb_files_reader(where, std::move(files), &name));
    src.entries.push_back({std::move(name), std::move(reader)});
  }
  return src;
}

Expected<Source> open_folder(Source src, const ImageOptions& image) {
  const fs::path dir = src.path;
  PTQ_ASSIGN_OR_RETURN(std::vector<fs::path> sets, list_dirs(dir, "test_data_set_"));
  if (!sets.empty()) return open_backend(std::move(src), std::move(sets));
  PTQ_ASSIGN_OR_RETURN(std::vector<fs::path> files, list_files(dir));
  if (std::any_of(files.begin(), files.end(),
                  [](const fs::path& f) { return input_index(f) >= 0; })) {
    return open_backend(std::move(src), {dir});
  }
  std::map<std::string, std::vector<fs::path>> kinds;
  for (const fs::path& f : files) {
    const std::string e = lower_ext(f);
    if (e == ".npy" || e == ".pb") kinds[e].push_back(f);
    if (is_image_ext(e)) kinds["image"].push_back(f);
  }
  if (kinds.empty()) {
    return invalid_input("empty source: '{}' holds no .npy, .pb, .png or .jpg files", src.path);
  }
  if (kinds.size() > 1) {
    auto a = kinds.begin(), b = std::next(a);
    return invalid_input("'{}' mixes {} and {} files ('{}', '{}'); use one kind per folder",
                         src.path, a->first, b->first, a->second[0].filename().string(),
                         b->second[0].filename().string());
  }
  auto& [kind, list] = *kinds.begin();
  Expected<std::unique_ptr<SampleReader>> reader =
      kind == ".npy"  ? make_npy_files_reader(src.path, std::move(list))
      : kind == ".pb" ? make_pb_files_reader(src.path, std::move(list), nullptr)
                      : make_image_reader(src.path, std::move(list), image);
  if (!reader) return std::move(reader).take_status();
  src.entries.push_back({"", std::move(*reader)});
  return src;
}

}  // namespace

Expected<Source> open_source(const SourceSpec& spec, const DatasetSpec& dataset) {
  Source src;
  src.input = spec.input;
  src.path = spec.path.string();
  if (spec.samples) {
    src.path = spec.samples->name();
    PTQ_ASSIGN_OR_RETURN(auto reader, make_program_reader(*spec.samples));
    src.entries.push_back({"", std::move(reader)});
    return src;
  }
  std::error_code ec;
  const auto st = fs::status(spec.path, ec);
  if (ec || !fs::exists(st)) return invalid_input("'{}': no such file or folder", src.path);
  if (fs::is_directory(st)) return open_folder(std::move(src), dataset.image);
  const std::string e = lower_ext(spec.path);
  if (e == ".npy") return open_npy(std::move(src));
  if (e == ".npz") return open_npz(std::move(src));
  if (e == ".bin" || e == ".raw") return open_raw(std::move(src), dataset);
  if (e == ".pb") {
    PTQ_ASSIGN_OR_RETURN(auto reader, make_pb_files_reader(src.path, {spec.path}, nullptr));
    src.entries.push_back({"", std::move(reader)});
    // One tensor, as ONNX test data holds them: bind() decides from the model's rank whether
    // its first axis is the batch axis.
    return src;
  }
  if (is_image_ext(e)) {
    PTQ_ASSIGN_OR_RETURN(auto reader, make_image_reader(src.path, {spec.path}, dataset.image));
    src.entries.push_back({"", std::move(reader)});
    return src;
  }
  return invalid_input("'{}': unknown data file type '{}' (expected .npy, .npz, .pb, .bin, "
                       ".png, .jpg or a folder)",
                       src.path, e);
}

}  // namespace ptq::data
