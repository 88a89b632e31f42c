#!/usr/bin/env python3
"""ONNX Runtime worker for friction's `ort` backend (protocol: worker_common.py).

The reported run time is measured around InferenceSession.run only.
Options: level = disabled | basic | extended | layout | all (ORT's graph
optimization levels), disable = comma-separated optimizer names for ORT's
disabled_optimizers, threads = intra-op thread count (0: ORT's default).
"""
import time

from worker_common import Executable, choice_option, int_option, list_option, serve, vendor_import

LEVELS = {
    "disabled": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "layout": "ORT_ENABLE_LAYOUT",
    "all": "ORT_ENABLE_ALL",
}


class OrtModel(Executable):
    vendor = "onnxruntime"

    def __init__(self, model, opts):
        ort = vendor_import("ort", "onnxruntime")
        self.version = ort.__version__
        so = ort.SessionOptions()
        so.log_severity_level = 3  # errors only: warnings would interleave with friction's output
        level = choice_option(opts, "level", list(LEVELS), "all")
        if not hasattr(ort.GraphOptimizationLevel, LEVELS[level]):
            raise ValueError(f"level {level} is not supported by onnxruntime {ort.__version__}")
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[level])
        threads = int_option(opts, "threads")
        if threads > 0:
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
        disabled = list_option(opts, "disable")
        kwargs = {"disabled_optimizers": disabled} if disabled else {}
        t0 = time.perf_counter()
        self.session = ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"], **kwargs)
        self.compile_ms = (time.perf_counter() - t0) * 1e3
        self.names = [i.name for i in self.session.get_inputs()]
        used = self.session.get_session_options().intra_op_num_threads
        self.threads_used = f"{used} intra-op" if used > 0 else "ORT's default (one per physical core)"

    def prepare(self, inputs):
        return dict(zip(self.names, inputs))

    def execute(self, feeds):
        return self.session.run(None, feeds)


if __name__ == "__main__":
    serve(OrtModel)
