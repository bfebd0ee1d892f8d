// libFuzzer target: a .npy file as a data source (header, then samples, as stored and
// converted to float32 by bind()) and through load_npy. Any bytes must give samples or a
// Status, never a crash, a leak or an allocation the file's size does not justify.
#include "input_file.h"
#include "ptq/data.h"

namespace {

// An input of the samples' own rank, float32, dims left open: bind() converts to it.
ptq::ir::Graph float_input_of_rank(size_t rank) {
  ptq::ir::ValueInfo v;
  v.name = "x";
  v.type.dtype = ptq::ir::DType::kFloat32;
  v.type.dims = std::vector<ptq::ir::Dim>(rank + 1, ptq::ir::Dim::symbol("d"));
  ptq::ir::Graph g;
  g.inputs.push_back(v);
  return g;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ptq::fuzz::write_input(data, size, "input.npy");
  (void)ptq::data::load_npy(path);
  ptq::data::DatasetSpec spec;
  spec.sources.push_back({"", path});
  auto ds = ptq::data::Dataset::open(spec);
  if (!ds) return 0;
  ptq::fuzz::read_some(*ds);
  const size_t rank = ds->inputs()[0].sample_shape.size();
  if (ds->bind(float_input_of_rank(rank)).is_ok()) ptq::fuzz::read_some(*ds);
  return 0;
}
