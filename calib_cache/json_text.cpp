#include "json_text.h"

#include <string>

#include "text_util.h"

namespace ptq::calib::detail {

namespace {

using nlohmann::json;

// nlohmann's DOM builder with exceptions off, keeping the first error and its byte offset.
class DomBuilder {
 public:
  explicit DomBuilder(json& root) : dom_(root, false) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const std::string& s) {
    return dom_.number_float(v, s);
  }
  bool string(std::string& v) { return dom_.string(v); }
  bool binary(json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) { return dom_.start_object(n); }
  bool key(std::string& k) { return dom_.key(k); }
  bool end_object() { return dom_.end_object(); }
  bool start_array(std::size_t n) { return dom_.start_array(n); }
  bool end_array() { return dom_.end_array(); }
  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& ex) {
    if (error_.empty()) {
      offset_ = position;
      error_ = ex.what();
      // "[json.exception.parse_error.101] parse error at line 1, …": keep from "parse error".
      if (auto p = error_.find("] "); p != std::string::npos) error_ = error_.substr(p + 2);
    }
    return dom_.parse_error(position, token, ex);
  }

  const std::string& error() const { return error_; }
  std::size_t offset() const { return offset_; }

 private:
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::string error_;
  std::size_t offset_ = 0;
};

}  // namespace

Expected<json> parse_json_text(std::string_view text, std::string_view file) {
  json root;
  DomBuilder builder(root);
  const bool ok = json::sax_parse(text.begin(), text.end(), &builder);
  if (!ok || !builder.error().empty()) {
    const std::size_t at = builder.offset() > 0 ? builder.offset() - 1 : 0;
    return invalid_input("{}:{}: invalid JSON: {}", file, line_of_offset(text, at),
                         builder.error().empty() ? "unreadable" : builder.error());
  }
  return root;
}

}  // namespace ptq::calib::detail
