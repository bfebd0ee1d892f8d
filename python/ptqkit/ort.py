"""ONNX Runtime's quantize_static and its types, on ptqkit.

A script written for onnxruntime.quantization switches by changing its import: the parameters
keep ONNX Runtime's names, defaults and meanings where ptqkit has the same thing; ptqkit's own
(target, backend, cache_out, ...) are keyword-only. What ptqkit does not do is refused with
ptqkit.Error rather than ignored, so a model is never quietly different from what was asked.
"""

import abc
import enum
import os
import tempfile

from . import _ptqkit


class CalibrationDataReader(metaclass=abc.ABCMeta):
    """ONNX Runtime's reader protocol: get_next() gives {input name: array} until None."""

    @abc.abstractmethod
    def get_next(self):
        """The next {input name: numpy array} (batch axis first), or None at the end."""

    def __iter__(self):
        return self

    def __next__(self):
        item = self.get_next()
        if item is None:
            raise StopIteration
        return item


class CalibrationMethod(enum.Enum):
    """ONNX Runtime's method names, and ptqkit's MSE (its own default)."""
    MinMax = "minmax"
    Entropy = "entropy"
    Percentile = "percentile"
    MSE = "mse"


class QuantType(enum.Enum):
    QInt8 = "int8"
    QUInt8 = "uint8"


class QuantFormat(enum.Enum):
    QOperator = 0
    QDQ = 1


# extra_options keys ptqkit honours, and what each must be where ptqkit has one behaviour only.
_SUPPORTED_EXTRA = ("CalibPercentile", "AddQDQPairToWeight", "ActivationSymmetric",
                    "WeightSymmetric", "SmoothQuant", "SmoothQuantAlpha", "SmoothQuantFolding")


def _enum_value(value, enum_type, what):
    """The member of enum_type that `value` names: a member, ONNX Runtime's own enum member of
    the same name, the name as a string, or the member's value."""
    if isinstance(value, enum_type):
        return value
    name = getattr(value, "name", value)
    for member in enum_type:
        if name == member.name or value == member.value:
            return member
    raise _ptqkit.Error(f"{what} {value!r} is not one of "
                        f"{', '.join(m.name for m in enum_type)}")


def _refuse(condition, message):
    if condition:
        raise _ptqkit.Error(message)


def _model_path(model_input, keep):
    """A path for model_input: a path as it is, an onnx.ModelProto written to a temporary file."""
    if isinstance(model_input, (str, os.PathLike)):
        return os.fspath(model_input)
    if hasattr(model_input, "SerializeToString"):
        folder = tempfile.TemporaryDirectory(prefix="ptqkit-")
        keep.append(folder)
        path = os.path.join(folder.name, "model.onnx")
        with open(path, "wb") as f:
            f.write(model_input.SerializeToString())
        return path
    raise _ptqkit.Error(f"model_input is a {type(model_input).__name__}: give a path or an "
                        "onnx.ModelProto")


def _extra(extra_options, activation):
    """ptqkit's arguments for ONNX Runtime's extra_options."""
    options = dict(extra_options or {})
    unknown = sorted(set(options) - set(_SUPPORTED_EXTRA))
    _refuse(unknown, f"extra_options {', '.join(unknown)}: ptqkit supports "
                     f"{', '.join(_SUPPORTED_EXTRA)}")
    symmetric = options.get("ActivationSymmetric", activation == "int8")
    _refuse(bool(symmetric) != (activation == "int8"),
            f"ActivationSymmetric={symmetric} with {activation} activations: ptqkit quantizes "
            "int8 activations symmetrically and uint8 ones asymmetrically")
    _refuse(not options.get("WeightSymmetric", True),
            "WeightSymmetric=False: ptqkit's weights are symmetric int8")
    extra = {"weights_float": bool(options.get("AddQDQPairToWeight", False))}
    if "CalibPercentile" in options:
        extra["percentile"] = float(options["CalibPercentile"])
    # ONNX Runtime's SmoothQuant: alpha 0.5 unless SmoothQuantAlpha; ptqkit always folds the
    # factors into the producer where it can (SmoothQuantFolding=True, ONNX Runtime's default).
    _refuse(not options.get("SmoothQuantFolding", True),
            "SmoothQuantFolding=False: ptqkit folds SmoothQuant's factors where it can")
    if options.get("SmoothQuant", False):
        extra["smoothquant"] = float(options.get("SmoothQuantAlpha", 0.5))
    return extra


def quantize_static(model_input, model_output, calibration_data_reader,
                    quant_format=QuantFormat.QDQ, op_types_to_quantize=None, per_channel=False,
                    reduce_range=False, activation_type=QuantType.QInt8,
                    weight_type=QuantType.QInt8, nodes_to_quantize=None, nodes_to_exclude=None,
                    use_external_data_format=False, calibrate_method=CalibrationMethod.MinMax,
                    calibration_providers=None, extra_options=None, *,
                    op_types_to_exclude=None, bias_correction=False, target="ort",
                    backend="cpu", cache_out=None, threads=0, batch=0, input_shapes=None,
                    quiet=False):
    """Calibrates `model_input` on the reader's data and writes the Q/DQ model `model_output`.

    ONNX Runtime's parameters keep their meaning: calibrate_method (MinMax, Entropy,
    Percentile, or ptqkit's names: "mse", its own default elsewhere), per_channel,
    nodes_to_exclude (names or regexes), nodes_to_quantize and op_types_to_quantize (quantize
    only these), activation_type (QInt8 symmetric, QUInt8 asymmetric),
    use_external_data_format, extra_options (CalibPercentile, AddQDQPairToWeight, SmoothQuant
    with SmoothQuantAlpha; ActivationSymmetric, WeightSymmetric and SmoothQuantFolding where
    they say what ptqkit does). calibration_providers is not used: `backend` ("cpu" or
    "vulkan") runs calibration. Keyword-only: op_types_to_exclude (ModelOpt's name: op types
    left float); ptqkit's own: bias_correction (correct the quantized Conv/Gemm biases, as
    `ptq quantize --bias-correction`), target ("ort" here, "tensorrt" for TensorRT's
    placement), cache_out (write
    the calibration cache), threads, batch, input_shapes ({input: shape} where the model's are
    symbolic), quiet (no progress line). Returns a summary dict (Q/DQ counts, quantized layers,
    tensors left float).
    """
    fmt = _enum_value(quant_format, QuantFormat, "quant_format")
    _refuse(fmt != QuantFormat.QDQ, "quant_format QOperator: ptqkit writes QDQ models only")
    _refuse(reduce_range, "reduce_range=True: ptqkit uses the full 8-bit range")
    _refuse(_enum_value(weight_type, QuantType, "weight_type") != QuantType.QInt8,
            "weight_type QUInt8: ptqkit's weights are int8")
    activation = _enum_value(activation_type, QuantType, "activation_type").value
    keep = []
    return _ptqkit.quantize(
        _model_path(model_input, keep), os.fspath(model_output),
        data=calibration_data_reader, method=calibrate_method, target=target,
        activation_type=activation, per_channel=bool(per_channel),
        exclude=list(nodes_to_exclude or []), exclude_op_types=list(op_types_to_exclude or []),
        nodes_to_quantize=list(nodes_to_quantize or []),
        op_types_to_quantize=list(op_types_to_quantize or []),
        bias_correction=bool(bias_correction),
        backend=backend, threads=threads, batch=batch,
        cache_out=os.fspath(cache_out) if cache_out else "",
        external_data=bool(use_external_data_format), quiet=quiet,
        input_shapes=[(k, list(v)) for k, v in (input_shapes or {}).items()],
        **_extra(extra_options, activation))
