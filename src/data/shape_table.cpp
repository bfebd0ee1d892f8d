#include "shape_table.h"

#include <algorithm>

namespace ptq::data {

void ShapeTable::clear() {
  shapes_.clear();
  ids_.clear();
}

void ShapeTable::add(const ir::Shape& shape) {
  // Few distinct shapes (a handful of image sizes): a linear search from the last one found.
  auto it = std::find(shapes_.rbegin(), shapes_.rend(), shape);
  if (it == shapes_.rend()) {
    shapes_.push_back(shape);
    ids_.push_back(static_cast<int32_t>(shapes_.size() - 1));
    return;
  }
  ids_.push_back(static_cast<int32_t>(shapes_.rend() - it - 1));
}

ir::Shape ShapeTable::common() const {
  if (shapes_.empty()) return {};
  ir::Shape out = shapes_.front();
  for (const ir::Shape& s : shapes_) {
    for (size_t d = 0; d < out.size() && d < s.size(); ++d) {
      if (s[d] != out[d]) out[d] = -1;
    }
  }
  return out;
}

}  // namespace ptq::data
