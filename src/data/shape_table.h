// ShapeTable: the distinct record shapes of one reader and which one each record has, so
// records of many shapes can be grouped into batches of one shape. Internal to ptq_data.
#pragma once

#include <cstdint>
#include <vector>

#include "ptq/ir.h"

namespace ptq::data {

class ShapeTable {
 public:
  void clear();
  // Appends one entry (an array, a file, a record) of `shape`.
  void add(const ir::Shape& shape);
  // Distinct shapes, in order of first appearance.
  int64_t size() const { return static_cast<int64_t>(shapes_.size()); }
  const ir::Shape& shape(int64_t k) const { return shapes_[static_cast<size_t>(k)]; }
  // The index among shape(k) of entry i.
  int64_t id(int64_t i) const { return ids_[static_cast<size_t>(i)]; }
  // The first shape with -1 on every dim where another differs (its rank when ranks agree).
  ir::Shape common() const;

 private:
  std::vector<ir::Shape> shapes_;
  std::vector<int32_t> ids_;  // 4 bytes per entry: a folder's file list holds more per file
};

}  // namespace ptq::data
