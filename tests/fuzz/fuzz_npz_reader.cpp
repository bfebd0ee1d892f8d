// libFuzzer target: a .npz file as a data source: the zip directory, every member's header
// (inflated alone for deflated members), then, bound to float32 inputs of the members' names
// and shapes, samples of every member (inflating them). Any bytes must give samples or a Status.
#include "input_file.h"
#include "ptq/data.h"

namespace {

// One float32 input per array, named and shaped as the dataset reports it.
ptq::ir::Graph inputs_like(const std::vector<ptq::data::InputInfo>& infos) {
  ptq::ir::Graph g;
  for (const auto& info : infos) {
    ptq::ir::ValueInfo v;
    v.name = info.name;
    v.type.dtype = ptq::ir::DType::kFloat32;
    std::vector<ptq::ir::Dim> dims{ptq::ir::Dim::symbol("batch")};
    for (int64_t d : info.sample_shape) dims.push_back(ptq::ir::Dim::of(d));
    v.type.dims = std::move(dims);
    g.inputs.push_back(std::move(v));
  }
  return g;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ptq::fuzz::write_input(data, size, "input.npz");
  ptq::data::DatasetSpec spec;
  spec.sources.push_back({"", path});
  auto ds = ptq::data::Dataset::open(spec);
  if (!ds) return 0;
  if (ds->bind(inputs_like(ds->inputs())).is_ok()) ptq::fuzz::read_some(*ds);
  return 0;
}
