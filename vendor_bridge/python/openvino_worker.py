#!/usr/bin/env python3
"""OpenVINO worker for friction's `openvino` backend (protocol: worker_common.py).

Reads the ONNX model, compiles it for the CPU plugin, and runs one synchronous infer
request; the reported run time is measured around InferRequest.infer only (inputs are
bound as shared tensors beforehand). OpenVINO exposes no per-transformation switch, so
the backend has no vendor switches for `friction ablate`.
Options: hint = latency | throughput (PERFORMANCE_HINT, default latency),
precision = f32 | bf16 | f16 (INFERENCE_PRECISION_HINT, default f32),
threads = N (INFERENCE_NUM_THREADS, default: the plugin's).
"""
import time
from importlib.metadata import version

from worker_common import Executable, choice_option, int_option, serve, vendor_import

HINTS = {"latency": "LATENCY", "throughput": "THROUGHPUT"}
PRECISIONS = {"f32": "f32", "bf16": "bf16", "f16": "f16"}


def config_of(opts):
    """The CPU plugin configuration for the bridge's options (also used by benchmarks/vendor_agreement.sh)."""
    cfg = {
        "PERFORMANCE_HINT": HINTS[choice_option(opts, "hint", list(HINTS), "latency")],
        "INFERENCE_PRECISION_HINT": PRECISIONS[choice_option(opts, "precision", list(PRECISIONS), "f32")],
    }
    threads = int_option(opts, "threads")
    if threads > 0:
        cfg["INFERENCE_NUM_THREADS"] = threads
    return cfg


class OpenvinoModel(Executable):
    vendor = "openvino"

    def __init__(self, model, opts):
        ov = vendor_import("openvino", "openvino")
        self.ov = ov
        self.version = version("openvino")
        cfg = config_of(opts)
        t0 = time.perf_counter()
        core = ov.Core()
        self.compiled = core.compile_model(core.read_model(model), "CPU", cfg)
        self.compile_ms = (time.perf_counter() - t0) * 1e3
        self.threads_used = self.compiled.get_property("INFERENCE_NUM_THREADS")
        self.request = self.compiled.create_infer_request()

    def prepare(self, inputs):
        for i, x in enumerate(inputs):
            self.request.set_input_tensor(i, self.ov.Tensor(x, shared_memory=True))
        return inputs  # keeps the shared buffers alive

    def execute(self, _):
        self.request.infer()
        return [self.request.get_output_tensor(i) for i in range(len(self.compiled.outputs))]

    def fetch(self, results):
        return [t.data.copy() for t in results]


if __name__ == "__main__":
    serve(OpenvinoModel)
