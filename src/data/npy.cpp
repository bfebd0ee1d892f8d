#include "npy.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ptq::data {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr int64_t kMagicLen = 6;
// No sane calibration array comes near this; it keeps size arithmetic far from overflow.
constexpr int64_t kMaxBytes = int64_t{1} << 50;

// A tiny reader of the Python literal subset NumPy writes in headers.
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& what) : s_(text), what_(what) {}

  Expected<NpyHeader> parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    if (!eat('{')) return fail("expected '{'");
    while (true) {
      skip_ws();
      if (eat('}')) break;
      PTQ_ASSIGN_OR_RETURN(std::string key, string_literal());
      if (!eat(':')) return fail("expected ':' after '" + key + "'");
      if (key == "descr") {
        skip_ws();
        if (peek() == '[') {
          return invalid_input("{}: structured dtypes are not supported", what_);
        }
        PTQ_ASSIGN_OR_RETURN(std::string descr, string_literal());
        PTQ_RETURN_IF_ERROR(set_dtype(descr, h));
        have_descr = true;
      } else if (key == "fortran_order") {
        PTQ_ASSIGN_OR_RETURN(bool fortran, boolean());
        if (fortran) {
          return invalid_input("{}: Fortran-order arrays are not supported (save with C order)",
                               what_);
        }
        have_order = true;
      } else if (key == "shape") {
        PTQ_ASSIGN_OR_RETURN(h.shape, tuple());
        have_shape = true;
      } else {
        return fail("unexpected key '" + key + "'");
      }
      skip_ws();
      if (eat(',')) continue;
      if (eat('}')) break;
      return fail("expected ',' or '}'");
    }
    if (!have_descr || !have_order || !have_shape) {
      return fail("needs 'descr', 'fortran_order' and 'shape'");
    }
    return h;
  }

 private:
  Status fail(const std::string& why) const {
    return invalid_input("{}: bad .npy header at character {}: {}", what_, pos_, why);
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }

  Expected<std::string> string_literal() {
    skip_ws();
    const char q = peek();
    if (q != '\'' && q != '"') return fail("expected a string");
    const size_t end = s_.find(q, pos_ + 1);
    if (end == std::string_view::npos) return fail("unterminated string");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }

  Expected<bool> boolean() {
    skip_ws();
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    return fail("expected True or False");
  }

  Expected<ir::Shape> tuple() {
    ir::Shape shape;
    if (!eat('(')) return fail("expected '(' for the shape");
    while (true) {
      if (eat(')')) break;
      skip_ws();
      int64_t v = 0;
      size_t digits = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) return fail("dimension too large");
        v = v * 10 + (peek() - '0');
        ++pos_;
        ++digits;
      }
      if (digits == 0) return fail("expected a dimension");
      skip_ws();
      if (peek() == 'L') ++pos_;  // Python 2 longs
      shape.push_back(v);
      if (eat(',')) continue;
      if (eat(')')) break;
      return fail("expected ',' or ')' in the shape");
    }
    return shape;
  }

  Status set_dtype(const std::string& descr, NpyHeader& h) {
    if (descr.size() < 3) return invalid_input("{}: unsupported dtype '{}'", what_, descr);
    const char order = descr[0];
    const std::string code = descr.substr(1);
    using ir::DType;
    DType t = DType::kUndefined;
    if (code == "f2") t = DType::kFloat16;
    if (code == "f4") t = DType::kFloat32;
    if (code == "f8") t = DType::kFloat64;
    if (code == "i1") t = DType::kInt8;
    if (code == "i2") t = DType::kInt16;
    if (code == "i4") t = DType::kInt32;
    if (code == "i8") t = DType::kInt64;
    if (code == "u1") t = DType::kUInt8;
    if (code == "u2") t = DType::kUInt16;
    if (code == "u4") t = DType::kUInt32;
    if (code == "u8") t = DType::kUInt64;
    if (code == "b1") t = DType::kBool;
    if (t == DType::kUndefined || std::string_view("<>|=").find(order) == std::string_view::npos) {
      return invalid_input("{}: unsupported dtype '{}'", what_, descr);
    }
    h.dtype = t;
    h.swap = order == '>' && ir::dtype_size(t) > 1;
    return {};
  }

  std::string_view s_;
  const std::string& what_;
  size_t pos_ = 0;
};

uint32_t le32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

}  // namespace

int64_t NpyHeader::data_bytes() const {
  return ir::num_elements(shape) * static_cast<int64_t>(ir::dtype_size(dtype));
}

Expected<NpyHeader> parse_npy_dict(std::string_view dict, const std::string& what) {
  PTQ_ASSIGN_OR_RETURN(NpyHeader h, DictParser(dict, what).parse());
  int64_t bytes = static_cast<int64_t>(ir::dtype_size(h.dtype));
  for (int64_t d : h.shape) {
    if (d != 0 && bytes > kMaxBytes / d) {
      return invalid_input("{}: shape {} is too large", what, ir::shape_str(h.shape));
    }
    bytes *= d;
  }
  return h;
}

Expected<NpyHeader> read_npy_header(const ByteReader& read, int64_t size,
                                    const std::string& what) {
  if (size < 10) return invalid_input("{}: too short for a .npy file", what);
  PTQ_ASSIGN_OR_RETURN(std::string pre_bytes, read(0, std::min<int64_t>(12, size)));
  pre_bytes.resize(12, '\0');
  const auto* pre = reinterpret_cast<const unsigned char*>(pre_bytes.data());
  if (std::memcmp(pre, kMagic, kMagicLen) != 0) {
    return invalid_input("{}: not a .npy file (bad magic)", what);
  }
  const int major = pre[6];
  int64_t dict_len = 0, dict_at = 0;
  if (major == 1) {
    dict_len = pre[8] | (pre[9] << 8);
    dict_at = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return invalid_input("{}: truncated .npy header", what);
    dict_len = le32(pre + 8);
    dict_at = 12;
  } else {
    return invalid_input("{}: unsupported .npy format version {}.{}", what, major, pre[7]);
  }
  if (dict_len > size - dict_at) {
    return invalid_input("{}: truncated .npy header (needs {} bytes, has {})", what,
                         dict_at + dict_len, size);
  }
  if (dict_len > kMaxNpyDictBytes) {
    return invalid_input("{}: .npy header of {} bytes is longer than the {} this reader accepts",
                         what, dict_len, kMaxNpyDictBytes);
  }
  PTQ_ASSIGN_OR_RETURN(std::string dict, read(dict_at, dict_len));
  PTQ_ASSIGN_OR_RETURN(NpyHeader h, parse_npy_dict(dict, what));
  h.data_offset = dict_at + dict_len;
  const int64_t have = size - h.data_offset;
  if (have < h.data_bytes()) {
    return invalid_input("{}: truncated: {} {} needs {} data bytes but has {}", what,
                         ir::dtype_name(h.dtype), ir::shape_str(h.shape), h.data_bytes(), have);
  }
  return h;
}

Expected<NpyHeader> read_npy_header(const File& file, int64_t base, int64_t limit,
                                    const std::string& what) {
  auto read = [&](int64_t at, int64_t n) { return file.read_string(base + at, n); };
  PTQ_ASSIGN_OR_RETURN(NpyHeader h, read_npy_header(read, limit - base, what));
  h.data_offset += base;
  return h;
}

Expected<std::string> npy_header_bytes(ir::DType dtype, const ir::Shape& shape) {
  std::string code;
  switch (dtype) {
    case ir::DType::kFloat16: code = "<f2"; break;
    case ir::DType::kFloat32: code = "<f4"; break;
    case ir::DType::kFloat64: code = "<f8"; break;
    case ir::DType::kInt8: code = "|i1"; break;
    case ir::DType::kInt16: code = "<i2"; break;
    case ir::DType::kInt32: code = "<i4"; break;
    case ir::DType::kInt64: code = "<i8"; break;
    case ir::DType::kUInt8: code = "|u1"; break;
    case ir::DType::kUInt16: code = "<u2"; break;
    case ir::DType::kUInt32: code = "<u4"; break;
    case ir::DType::kUInt64: code = "<u8"; break;
    case ir::DType::kBool: code = "|b1"; break;
    default:
      return invalid_input("a {} tensor cannot be written as .npy", ir::dtype_name(dtype));
  }
  std::string dims = fmt::format("{}", fmt::join(shape, ", "));
  if (shape.size() == 1) dims += ",";
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", code, dims);
  // Pad with spaces so the data starts on a 64-byte boundary; the dictionary ends in '\n'.
  const bool v2 = dict.size() + 11 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  const size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string out(kMagic, kMagicLen);
  out.push_back(static_cast<char>(v2 ? 2 : 1));
  out.push_back('\0');
  const size_t n = dict.size();
  out.push_back(static_cast<char>(n & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  if (v2) {
    out.push_back(static_cast<char>((n >> 16) & 0xff));
    out.push_back(static_cast<char>((n >> 24) & 0xff));
  }
  return out + dict;
}

void byteswap(void* data, int64_t count, size_t elem_size) {
  auto* p = static_cast<unsigned char*>(data);
  for (int64_t i = 0; i < count; ++i, p += elem_size) std::reverse(p, p + elem_size);
}

}  // namespace ptq::data
