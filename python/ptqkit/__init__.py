"""ptqkit: post-training quantization for ONNX models.

The functions of the `ptq` command line, on numpy arrays and Python data readers:

    quantize_static(model_input, model_output, reader, ...)  ONNX Runtime's signature
    quantize(model, out, data=..., cache=..., target=...)     `ptq quantize`
    calibrate(model, data, method=...)  -> CalibrationCache   `ptq calibrate`
    run(model, inputs) -> {name: array}; Session(model)       `ptq run` (one batch)
    compare(model_a, model_b, data) -> dict                   `ptq compare --json`
    sensitivity(model, eval_data, data=...) -> dict           `ptq sensitivity`
    CalibrationCache.load(path) / .merge(caches)              `ptq cache show|convert|merge`

Data is any object with get_next() returning {input name: array} or None (ONNX Runtime's
CalibrationDataReader), a dict of arrays with samples on axis 0, one array for a model with one
input, or a path as `ptq --data` takes it. Failures raise ptqkit.Error (a RuntimeError) with
the one-line message `ptq` prints.
"""

from ._ptqkit import (CalibrationCache, Error, Session, __version__, calibrate, compare,
                      quantize, run, sensitivity)
from .ort import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                  quantize_static)

__all__ = [
    "CalibrationCache", "CalibrationDataReader", "CalibrationMethod", "Error", "QuantFormat",
    "QuantType", "Session", "__version__", "calibrate", "compare", "quantize",
    "quantize_static", "run", "sensitivity",
]
