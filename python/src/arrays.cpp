// numpy arrays <-> ir::Tensor without copies where the layout allows: a C-contiguous array of
// a dtype the library knows is borrowed as it is; an output tensor's storage is handed to the
// array it becomes (a capsule owns it).
#include "bindings.h"
#include "ptq/ir/owned_copy.h"

namespace ptq::python {

namespace {

struct DTypePair {
  ir::DType dtype;
  char kind;  // numpy's kind code: 'f' float, 'i' signed, 'u' unsigned, 'b' bool
  int bytes;
};

constexpr DTypePair kPairs[] = {
    {ir::DType::kFloat32, 'f', 4}, {ir::DType::kFloat64, 'f', 8}, {ir::DType::kFloat16, 'f', 2},
    {ir::DType::kInt8, 'i', 1},    {ir::DType::kInt16, 'i', 2},   {ir::DType::kInt32, 'i', 4},
    {ir::DType::kInt64, 'i', 8},   {ir::DType::kUInt8, 'u', 1},   {ir::DType::kUInt16, 'u', 2},
    {ir::DType::kUInt32, 'u', 4},  {ir::DType::kUInt64, 'u', 8},  {ir::DType::kBool, 'b', 1},
};

}  // namespace

std::string dtype_str(const py::dtype& dtype) {
  return py::str(dtype.attr("name")).cast<std::string>();
}

ir::DType dtype_of(const py::dtype& dtype) {
  for (const DTypePair& p : kPairs) {
    if (dtype.kind() == p.kind && dtype.itemsize() == p.bytes) return p.dtype;
  }
  throw_if_error(
      invalid_input("numpy dtype {} has no ONNX tensor type ptqkit reads", dtype_str(dtype)));
  return ir::DType::kUndefined;
}

py::dtype numpy_dtype(ir::DType dtype) {
  for (const DTypePair& p : kPairs) {
    if (p.dtype == dtype) return py::dtype(std::string(1, p.kind) + std::to_string(p.bytes));
  }
  throw_if_error(
      invalid_input("a tensor of dtype {} has no numpy form here", ir::dtype_name(dtype)));
  return {};
}

ir::Tensor borrow_array(const py::array& array, py::object& keep) {
  const ir::DType dtype = dtype_of(array.dtype());
  py::array contiguous = array;
  if ((array.flags() & py::array::c_style) == 0) {
    contiguous = py::array::ensure(array, py::array::c_style);
    keep = contiguous;
  }
  ir::Shape shape(contiguous.shape(), contiguous.shape() + contiguous.ndim());
  return ir::Tensor::borrow(dtype, std::move(shape), contiguous.data());
}

py::array to_array(ir::Tensor tensor) {
  const py::dtype dtype = numpy_dtype(tensor.dtype());
  if (!tensor.owns_data()) tensor = ir::owned_copy(tensor);
  auto* owned = new ir::Tensor(std::move(tensor));
  py::capsule owner(owned, [](void* p) { delete static_cast<ir::Tensor*>(p); });
  std::vector<py::ssize_t> shape(owned->shape().begin(), owned->shape().end());
  return py::array(dtype, shape, owned->raw(), owner);
}

}  // namespace ptq::python
