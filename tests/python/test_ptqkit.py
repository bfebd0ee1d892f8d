"""The ptqkit Python module against the `ptq` command line, on the bundled example model.

Run by ctest (tests/python/CMakeLists.txt) with PYTHONPATH at the built package, PTQ at the
built `ptq`, PTQ_SOURCE_DIR at the source tree, PTQ_BUILD_DIR at the build and CMAKE at cmake.
"""

import _thread
import json
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import unittest

import numpy as np

import ptqkit

SOURCE = os.environ["PTQ_SOURCE_DIR"]
PTQ = os.environ["PTQ"]
MODEL = os.path.join(SOURCE, "examples", "fashion_cnn.onnx")
# Caches record their date: SOURCE_DATE_EPOCH makes the CLI's and the module's the same.
os.environ["SOURCE_DATE_EPOCH"] = "1700000000"


def samples(n, seed=0):
    """n samples of the example's calibration set (float16 on disk), as float32."""
    data = np.load(os.path.join(SOURCE, "examples", "data", "calib.npy")).astype(np.float32)
    return data[np.random.default_rng(seed).permutation(len(data))[:n]]


class Reader(ptqkit.CalibrationDataReader):
    """ONNX Runtime's protocol: batches of `batch` as {input: array}, then None."""

    def __init__(self, data, batch):
        self.items = iter([{"input": data[i:i + batch]} for i in range(0, len(data), batch)])

    def get_next(self):
        return next(self.items, None)


def ptq(*args):
    subprocess.run([PTQ, *args], check=True, stdout=subprocess.DEVNULL)


def read(path):
    with open(path, "rb") as f:
        return f.read()


class ModuleTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="ptqkit-test-")
        self.addCleanup(self.dir.cleanup)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def test_quantize_static_writes_what_the_cli_writes(self):
        data = samples(48)
        np.save(self.path("calib.npy"), data)
        # quantize_static keeps ONNX Runtime's QInt8 default; `--target ort` alone picks uint8.
        ptq("quantize", MODEL, "--data", self.path("calib.npy"), "--target", "ort",
            "--activation-type", "int8", "--method", "minmax", "--per-tensor-weights",
            "--exclude-op-types", "Gemm",
            "-o", self.path("cli.onnx"))
        summary = ptqkit.quantize_static(
            MODEL, self.path("py.onnx"), Reader(data, 8),
            calibrate_method=ptqkit.CalibrationMethod.MinMax, op_types_to_exclude=["Gemm"],
            cache_out=self.path("py.calib.json"), quiet=True)
        self.assertGreater(summary["quantize_nodes"], 0)
        self.assertEqual(read(self.path("py.onnx")), read(self.path("cli.onnx")))
        self.assertEqual(read(self.path("py.calib.json")), read(self.path("cli.calib.json")))

    def test_smoothquant_and_bias_correction_write_what_the_cli_writes(self):
        data = samples(32)
        np.save(self.path("calib.npy"), data)
        ptq("quantize", MODEL, "--data", self.path("calib.npy"), "--method", "minmax",
            "--smoothquant", "0.6", "--bias-correction", "--per-tensor-weights",
            "-o", self.path("cli.onnx"))
        # ONNX Runtime's extra_options name SmoothQuant; bias_correction is ptqkit's keyword.
        summary = ptqkit.quantize_static(
            MODEL, self.path("py.onnx"), Reader(data, 8), target="tensorrt",
            extra_options={"SmoothQuant": True, "SmoothQuantAlpha": 0.6},
            bias_correction=True, cache_out=self.path("py.calib.json"), quiet=True)
        self.assertGreater(summary["corrected_biases"], 0)
        self.assertEqual(read(self.path("py.onnx")), read(self.path("cli.onnx")))
        self.assertEqual(read(self.path("py.calib.json")), read(self.path("cli.calib.json")))
        # The cache records the options: quantize(cache=...) with none given writes it again.
        again = ptqkit.quantize(MODEL, self.path("again.onnx"), cache=self.path("cli.calib.json"))
        self.assertEqual(again["corrected_biases"], summary["corrected_biases"])
        self.assertEqual(read(self.path("again.onnx")), read(self.path("cli.onnx")))
        with self.assertRaisesRegex(ptqkit.Error, "SmoothQuantFolding"):
            ptqkit.quantize_static(MODEL, self.path("x.onnx"), Reader(data, 8),
                                   extra_options={"SmoothQuantFolding": False})

    def test_ort_names_and_ptqkit_names_mean_the_same(self):
        data = samples(16)
        # The library's warnings (here: ranges that clip much of their tensor) are UserWarnings.
        with self.assertWarnsRegex(UserWarning, "clips"):
            ptqkit.quantize_static(MODEL, self.path("a.onnx"), Reader(data, 4),
                                   calibrate_method="Percentile", per_channel=True,
                                   activation_type=ptqkit.QuantType.QUInt8,
                                   extra_options={"CalibPercentile": 99.9}, quiet=True)
        with self.assertWarnsRegex(UserWarning, "clips"):
            ptqkit.quantize(MODEL, self.path("b.onnx"), data={"input": data},
                            method="percentile", percentile=99.9, target="ort",
                            activation_type="uint8", quiet=True)
        self.assertEqual(read(self.path("a.onnx")), read(self.path("b.onnx")))

    def test_run_equals_the_cli(self):
        x = samples(8)
        np.save(self.path("x.npy"), x)
        ptq("run", MODEL, "--data", self.path("x.npy"), "--batch", "8", "-o", self.path("out"))
        got = ptqkit.run(MODEL, {"input": x})
        want = np.load(os.path.join(self.path("out"), "logits.npy"))
        self.assertEqual(got["logits"].dtype, np.float32)
        np.testing.assert_array_equal(got["logits"], want)
        session = ptqkit.Session(MODEL)
        self.assertEqual(session.input_names, ["input"])
        np.testing.assert_array_equal(session.run(x[:, :, ::1, :])["logits"], want)
        # A strided (non-contiguous) input is copied, then runs the same.
        wide = np.repeat(x, 2, axis=3)[:, :, :, ::2]
        self.assertFalse(wide.flags.c_contiguous)
        np.testing.assert_array_equal(session.run(wide)["logits"], want)

    def test_calibrate_equals_the_cli_and_the_cache_inspects(self):
        data = samples(32)
        np.save(self.path("calib.npy"), data)
        ptq("calibrate", MODEL, "--data", self.path("calib.npy"), "--method", "entropy",
            "-o", self.path("cli.json"))
        cache = ptqkit.calibrate(MODEL, Reader(data, 16), method="Entropy", quiet=True,
                                 out=self.path("py.json"))
        self.assertEqual(read(self.path("py.json")), read(self.path("cli.json")))
        self.assertEqual(cache.method, "entropy")
        self.assertEqual(cache.samples, 32)
        self.assertIn("input", cache.inputs)
        name = cache.tensors[0]
        r = cache.range(name)
        counts, edges = cache.histogram(name)
        self.assertEqual(int(counts.sum()), r["count"])
        self.assertEqual(len(edges), len(counts) + 1)
        self.assertGreaterEqual(max(abs(r["min"]), abs(r["max"])), r["amax"])

        loaded = ptqkit.CalibrationCache.load(self.path("py.json"))
        self.assertEqual(loaded.to_json(), cache.to_json())
        merged = ptqkit.CalibrationCache.merge([cache, loaded])
        self.assertEqual(merged.range(name)["count"], 2 * r["count"])
        self.assertEqual(merged.range(name)["amax"], r["amax"])  # same data twice
        cache.save(self.path("c.cache"), format="tensorrt")
        trt = ptqkit.CalibrationCache.load(self.path("c.cache"))
        self.assertAlmostEqual(trt.range(name)["amax"], r["amax"], delta=r["amax"] * 1e-6)
        self.assertEqual(cache.recalibrated(ptqkit.CalibrationMethod.MinMax).method, "minmax")

    def test_compare(self):
        data = samples(32)
        ptqkit.quantize(MODEL, self.path("q.onnx"), data=data, quiet=True)
        same = ptqkit.compare(MODEL, MODEL, data, quiet=True)
        self.assertEqual(same["samples"], 32)
        self.assertEqual(same["outputs"][0]["sqnr_db"], float("inf"))
        self.assertEqual(same["top1_agreement"], 1.0)
        q = ptqkit.compare(MODEL, self.path("q.onnx"), {"input": data}, quiet=True)
        self.assertEqual(q["outputs"][0]["name"], "logits")
        self.assertGreater(q["outputs"][0]["cosine"], 0.95)
        self.assertLess(q["outputs"][0]["sqnr_db"], float("inf"))
        # `ptq compare --per-tensor --json`'s object, metrics as floats.
        np.save(self.path("x.npy"), data)
        cli = json.loads(subprocess.run(
            [PTQ, "compare", MODEL, self.path("q.onnx"), "--data", self.path("x.npy"),
             "--per-tensor", "--json"], check=True, capture_output=True, text=True).stdout)
        traced = ptqkit.compare(MODEL, self.path("q.onnx"), data, per_tensor=True, quiet=True)
        self.assertEqual(traced.keys(), cli.keys())
        self.assertEqual([t["name"] for t in traced["tensors"]],
                         [t["name"] for t in cli["tensors"]])
        self.assertEqual(traced["tensors"][0]["sqnr_db"], float(cli["tensors"][0]["sqnr_db"]))
        self.assertIsInstance(traced["tensors"][-1]["drop_db"], float)

    def test_sensitivity(self):
        report = ptqkit.sensitivity(MODEL, samples(16, seed=1), data=samples(16), quiet=True)
        self.assertEqual(report["metric"], "sqnr")
        layers = report["layers"]
        self.assertGreater(len(layers), 1)
        self.assertTrue(all("name" in l and "metric" in l for l in layers))

    def test_errors_are_exceptions_with_the_message(self):
        missing = self.path("missing.onnx")
        with self.assertRaises(ptqkit.Error) as e:
            ptqkit.run(missing, samples(1))
        self.assertIn("missing.onnx", str(e.exception))
        self.assertIsInstance(e.exception, RuntimeError)
        self.assertEqual(e.exception.code, 3)
        with self.assertRaisesRegex(ptqkit.Error, "input"):
            ptqkit.run(MODEL, np.zeros((1, 1, 14, 14), np.float32))
        with self.assertRaisesRegex(ptqkit.Error, "input"):
            ptqkit.calibrate(MODEL, np.zeros((4, 1, 14, 14), np.float32), quiet=True)

        class ListReader:
            def get_next(self):
                return [np.zeros((1, 1, 28, 28), np.float32)]

        with self.assertRaisesRegex(ptqkit.Error, "not a dict"):
            ptqkit.quantize_static(MODEL, self.path("q.onnx"), ListReader())
        self.assertFalse(os.path.exists(self.path("q.onnx")))
        with self.assertRaisesRegex(ptqkit.Error, "QOperator"):
            ptqkit.quantize_static(MODEL, self.path("q.onnx"), Reader(samples(4), 4),
                                   quant_format=ptqkit.QuantFormat.QOperator)

    def test_ctrl_c_stops_calibration_and_writes_nothing(self):
        data = np.repeat(samples(256), 64, axis=0)  # 16384 samples: seconds of work
        # Python's own handler, whatever the test runner left for SIGINT.
        self.addCleanup(signal.signal, signal.SIGINT,
                        signal.signal(signal.SIGINT, signal.default_int_handler))
        timer = threading.Timer(0.2, _thread.interrupt_main)
        timer.start()
        self.addCleanup(timer.cancel)
        with self.assertRaises(KeyboardInterrupt):
            ptqkit.quantize(MODEL, self.path("q.onnx"), data=data, method="entropy",
                            cache_out=self.path("q.json"), quiet=True)
        self.assertFalse(os.path.exists(self.path("q.onnx")))
        self.assertFalse(os.path.exists(self.path("q.json")))


class InstallTest(unittest.TestCase):
    """`cmake --install` puts the package where this python looks under the prefix."""

    def install(self, prefix, destdir=None):
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # cmake: no ASan
        if destdir:
            env["DESTDIR"] = destdir
        subprocess.run([os.environ["CMAKE"], "--install", os.environ["PTQ_BUILD_DIR"],
                        "--component", "python", "--prefix", prefix],
                       check=True, stdout=subprocess.DEVNULL, env=env)

    def test_install_under_a_prefix_and_under_usr(self):
        self.assertIn("deb_system", sysconfig.get_scheme_names())  # Debian's python3
        with tempfile.TemporaryDirectory(prefix="ptqkit-install-") as root:
            prefix = os.path.join(root, "p")
            self.install(prefix)
            version = f"python{sys.version_info.major}.{sys.version_info.minor}"
            site = os.path.join(prefix, "lib", version, "dist-packages")
            found = subprocess.run(
                [sys.executable, "-c", "import ptqkit; print(ptqkit.__file__)"],
                env=dict(os.environ, PYTHONPATH=site), check=True, capture_output=True,
                text=True).stdout.strip()
            self.assertEqual(found, os.path.join(site, "ptqkit", "__init__.py"))
            self.install("/usr", destdir=os.path.join(root, "d"))
            self.assertTrue(os.path.isfile(os.path.join(
                root, "d", "usr", "lib", "python3", "dist-packages", "ptqkit", "ort.py")))


if __name__ == "__main__":
    unittest.main()
