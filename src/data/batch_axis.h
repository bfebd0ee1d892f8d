// Which axis of a model input carries the batch, decided from the model and the data
// (the rules are Dataset::bind's, in include/ptq/data.h). Internal to ptq_data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::data {

struct BatchAxis {
  int64_t axis = 0;          // kNoBatchAxis: fed whole
  int64_t record_rank = -1;  // rank of one record (-1: the input's rank is unknown)
};

// `item` is the shape of one stored item (in `where`); `as_stored` says the source is an ONNX
// test_data_set_* folder; `asked` is --batch-axis for this input (kNoBatchAxis for "none").
Expected<BatchAxis> choose_batch_axis(const ir::ValueInfo& input, const ir::Shape& item,
                                      const std::string& where, bool as_stored,
                                      std::optional<int64_t> asked);

}  // namespace ptq::data
