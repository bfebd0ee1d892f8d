// A program's own samples (data::SampleSource) behind the reader interface every file type uses,
// so binding, conversion, shuffling and batching treat them like a file's.
#include <algorithm>

#include "ptq/ir/dtype.h"
#include "reader.h"

namespace ptq::data {

namespace {

class ProgramReader : public SampleReader {
 public:
  explicit ProgramReader(const SampleSource& source)
      : source_(source), where_(source.name()), shape_(source.sample_shape()) {}
  const std::string& where() const override { return where_; }
  ir::DType dtype() const override { return source_.dtype(); }
  ir::Shape sample_shape() const override { return shape_; }
  ir::Shape item_shape() const override { return shape_; }
  int64_t count() const override { return source_.count(); }
  // A program's sample is one record: bind() checks its rank against the input's.
  Status adapt(const ir::ValueInfo&, int64_t) override { return {}; }
  Status read(int64_t i, void* dst) const override { return source_.read(i, dst); }

 private:
  const SampleSource& source_;
  std::string where_;
  ir::Shape shape_;
};

}  // namespace

Expected<std::unique_ptr<SampleReader>> make_program_reader(const SampleSource& source) {
  const ir::Shape shape = source.sample_shape();
  if (ir::dtype_size(source.dtype()) == 0) {
    return invalid_input("'{}' gives samples of dtype {}, which holds no numbers", source.name(),
                         ir::dtype_name(source.dtype()));
  }
  if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; })) {
    return invalid_input("'{}' gives samples of shape {}, which has a negative dim", source.name(),
                         ir::shape_str(shape));
  }
  if (source.count() < 0) {
    return invalid_input("'{}' says it holds {} samples", source.name(), source.count());
  }
  return std::unique_ptr<SampleReader>(std::make_unique<ProgramReader>(source));
}

}  // namespace ptq::data
