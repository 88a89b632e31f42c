#!/usr/bin/env python3
"""Runs vendor_bridge/python/tensorrt_worker.py against stand-ins for TensorRT and cuda-python.

No GPU or TensorRT is needed: the stand-ins implement only the API names the worker calls (each one
checked against TensorRT 11.4's Python bindings), record what the worker asks for, and "run" an
identity engine on host memory. Checks: option mapping (optimization level, TF32, workspace, timing
cache written and reloaded), fp16 refused where TensorRT has no FP16 flag (11.x) and set where it does
(10.x), the I/O binding, outputs copied back, and that the CUDA-event time is what the worker reports.
Prints "tensorrt worker stub: ok" on success. Usage: tensorrt_worker_stub.py WORKER_DIR
"""
import ctypes
import enum
import os
import sys
import tempfile
import types

import numpy as np

sys.dont_write_bytecode = True  # nothing written beside the worker
sys.path.insert(0, sys.argv[1])
calls = []


def make_trt(version, flags):
    trt = types.ModuleType("tensorrt")
    trt.__version__ = version
    trt.BuilderFlag = enum.Enum("BuilderFlag", flags)
    trt.MemoryPoolType = enum.Enum("MemoryPoolType", ["WORKSPACE"])
    trt.TensorIOMode = enum.Enum("TensorIOMode", ["INPUT", "OUTPUT"])
    trt.float32 = "float32"
    trt.nptype = lambda t: np.float32
    trt.volume = lambda shape: int(np.prod(shape))

    class Logger:
        ERROR = 1

        def __init__(self, severity):
            pass

    class Tensor:
        def __init__(self, name, shape):
            self.name, self.shape = name, shape

    class Network:
        num_inputs = 1

        def get_input(self, i):
            return Tensor("x", (2, 3))

    class Parser:
        num_errors = 0

        def __init__(self, network, logger):
            pass

        def parse_from_file(self, path):
            calls.append(("parse", os.path.basename(path)))
            return True

    class Cache:
        def __init__(self, blob):
            self.blob = blob

        def serialize(self):
            return b"cache:" + bytes(self.blob)

    class Config:
        def __init__(self):
            self.flags = set()
            self.cache = None

        def set_flag(self, f):
            self.flags.add(f.name)

        def clear_flag(self, f):
            self.flags.discard(f.name)
            calls.append(("clear_flag", f.name))

        def set_memory_pool_limit(self, pool, size):
            calls.append(("pool", pool.name, size))

        def create_timing_cache(self, blob):
            return Cache(blob)

        def set_timing_cache(self, cache, ignore_mismatch):
            calls.append(("cache_in", bytes(cache.blob)))
            self.cache = cache

        def get_timing_cache(self):
            return self.cache

        def __setattr__(self, k, v):
            if k == "builder_optimization_level":
                calls.append(("opt", v))
            object.__setattr__(self, k, v)

    class Builder:
        def __init__(self, logger):
            pass

        def create_network(self, flags):
            return Network()

        def create_builder_config(self):
            return Config()

        def build_serialized_network(self, network, config):
            calls.append(("flags", sorted(config.flags)))
            return b"plan"

    class Context:
        addresses = {}

        def get_tensor_shape(self, name):
            return (2, 3)

        def set_tensor_address(self, name, ptr):
            self.addresses[name] = ptr

        def execute_async_v3(self, stream_handle):
            calls.append(("execute", stream_handle))
            x, y = self.addresses["x"], self.addresses["y"]
            ctypes.memmove(y, x, 24)  # the identity "engine"
            return True

    class Engine:
        num_io_tensors = 2

        def get_tensor_name(self, i):
            return ["x", "y"][i]

        def get_tensor_dtype(self, name):
            return trt.float32

        def get_tensor_mode(self, name):
            return trt.TensorIOMode.INPUT if name == "x" else trt.TensorIOMode.OUTPUT

        def create_execution_context(self):
            return Context()

    class Runtime:
        def __init__(self, logger):
            pass

        def deserialize_cuda_engine(self, plan):
            return Engine()

    trt.Logger, trt.Builder, trt.OnnxParser, trt.Runtime = Logger, Builder, Parser, Runtime
    return trt


def make_cudart():
    rt = types.ModuleType("cuda.bindings.runtime")
    ok = 0
    buffers = []
    rt.cudaMemcpyKind = enum.Enum("cudaMemcpyKind", ["cudaMemcpyHostToDevice", "cudaMemcpyDeviceToHost"])

    def malloc(n):
        b = ctypes.create_string_buffer(n)
        buffers.append(b)
        return ok, ctypes.addressof(b)

    def memcpy(dst, src, n, kind):
        ctypes.memmove(dst, src, n)
        return (ok,)

    rt.cudaMalloc = malloc
    rt.cudaMemcpy = memcpy
    rt.cudaStreamCreate = lambda: (ok, 7)
    rt.cudaEventCreate = lambda: (ok, object())
    rt.cudaEventRecord = lambda ev, stream: (ok,)
    rt.cudaEventSynchronize = lambda ev: (ok,)
    rt.cudaEventElapsedTime = lambda a, b: (ok, 0.125)
    rt.cudaGetErrorName = lambda err: (ok, b"cudaErrorStub")
    return rt


def install(trt):
    sys.modules["tensorrt"] = trt
    cuda, bindings = types.ModuleType("cuda"), types.ModuleType("cuda.bindings")
    bindings.runtime = make_cudart()
    cuda.bindings = bindings
    sys.modules.update({"cuda": cuda, "cuda.bindings": bindings, "cuda.bindings.runtime": bindings.runtime})


import tensorrt_worker as w  # noqa: E402
import worker_common  # noqa: E402

w.gpu_name = lambda: "Stub GPU"
tmp = tempfile.mkdtemp()
model = os.path.join(tmp, "model.onnx")
open(model, "wb").close()
cache = os.path.join(tmp, "trt.cache")
V11 = ["DEBUG", "TF32", "DISABLE_TIMING_CACHE", "EDITABLE_TIMING_CACHE", "DIRECT_IO"]

# TensorRT 11: options mapped, identity engine runs, the event time is reported.
install(make_trt("11.4.0.106", V11))
exe = w.TensorrtModel(model, {"opt": "5", "tf32": "off", "workspace": "64", "timing_cache": cache})
assert exe.version == "11.4.0.106 (Stub GPU)", exe.version
assert ("opt", 5) in calls and ("clear_flag", "TF32") in calls, calls
assert ("pool", "WORKSPACE", 64 << 20) in calls, calls
assert ("flags", []) in calls, calls
assert open(cache, "rb").read() == b"cache:", "timing cache not written"
x = np.arange(6, dtype=np.float32).reshape(2, 3)
np.save(os.path.join(tmp, "input_0.npy"), x)
r = worker_common._run(exe, {"dir": tmp, "inputs": 1})
assert r == {"ok": True, "ms": 0.125, "outputs": 1}, r
assert np.array_equal(np.load(os.path.join(tmp, "output_0.npy")), x)
assert ("execute", 7) in calls
# The harness's timed batches: every run reports the GPU event time, none writes outputs.
os.remove(os.path.join(tmp, "output_0.npy"))
r = worker_common._time(exe, {"dir": tmp, "inputs": 1, "repeat": 3})
assert r == {"ok": True, "ms": [0.125] * 3}, r
assert not os.path.exists(os.path.join(tmp, "output_0.npy"))

# The cache is reloaded; timing_cache=off sets DISABLE_TIMING_CACHE.
calls.clear()
w.TensorrtModel(model, {"timing_cache": cache})
assert ("cache_in", b"cache:") in calls and ("flags", ["TF32"]) in calls, calls
calls.clear()
w.TensorrtModel(model, {"timing_cache": "off"})
assert ("flags", ["DISABLE_TIMING_CACHE", "TF32"]) in calls, calls


def refused(opts, text):
    try:
        w.TensorrtModel(model, opts)
    except (ValueError, RuntimeError) as e:
        assert text in str(e), str(e)
        return
    raise AssertionError(f"{opts} was accepted")


refused({"fp16": "on"}, "fp16=on: tensorrt 11.4.0.106 has no BuilderFlag.FP16")
refused({"opt": "6"}, "option opt must be one of 0, 1, 2, 3, 4, 5")
refused({"bf16": "yes"}, "option bf16 must be one of on, off")

# TensorRT 10 still has the precision flags.
install(make_trt("10.13.0", V11 + ["FP16", "BF16"]))
calls.clear()
w.TensorrtModel(model, {"fp16": "on", "bf16": "on"})
assert ("flags", ["BF16", "FP16", "TF32"]) in calls, calls

# Without TensorRT the message is the documented one.
sys.modules["tensorrt"] = None
refused({}, "tensorrt is not installed in .venv")
print("tensorrt worker stub: ok")
