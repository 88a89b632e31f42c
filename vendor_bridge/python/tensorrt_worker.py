#!/usr/bin/env python3
"""TensorRT worker for friction's `tensorrt` backend (protocol: worker_common.py).

The ONNX model is parsed by TensorRT's ONNX parser, built into an engine with the builder
configuration below, and run by one execution context on one CUDA stream. Device buffers
are allocated once with cuda-python (`cuda.bindings.runtime`, as TensorRT's own Python
samples do; no torch, no pycuda); inputs are copied to the device in prepare() and outputs
back in fetch(), both untimed. The reported run time is the GPU time of execute_async_v3
alone, between two CUDA events recorded on the stream (the host waits on the second).

Options (every one checked before TensorRT is touched, so a bad value is refused anywhere):
  opt          = 0..5            IBuilderConfig.builder_optimization_level (default 3, TensorRT's)
  tf32         = on|off          BuilderFlag.TF32 (default on, TensorRT's default)
  fp16, bf16   = on|off          BuilderFlag.FP16 / BF16 (default off; TensorRT <= 10 only: from
                                 TensorRT 11 networks are strongly typed and these flags are gone,
                                 so `on` is refused there with a message)
  workspace    = MiB             set_memory_pool_limit(MemoryPoolType.WORKSPACE, MiB << 20)
  timing_cache = PATH | off      PATH: load the cache from PATH when it exists, save it after the
                                 build; off: BuilderFlag.DISABLE_TIMING_CACHE (default: TensorRT's
                                 in-memory cache for this build only)
TensorRT has no per-fusion or per-pass switch: its layer fusions, tactic selection and
reformat elimination always run, so the backend registers no vendor switches (ablate varies
friction's own passes before the export, as for openvino).
"""
import ctypes
import os
import time

from worker_common import Executable, choice_option, int_option, serve

ON_OFF = ["on", "off"]


def builder_settings(opts):
    """The bridge's options, validated, as plain values (no TensorRT needed)."""
    s = {
        "opt": int(choice_option(opts, "opt", [str(i) for i in range(6)], "3")),
        "tf32": choice_option(opts, "tf32", ON_OFF, "on") == "on",
        "fp16": choice_option(opts, "fp16", ON_OFF, "off") == "on",
        "bf16": choice_option(opts, "bf16", ON_OFF, "off") == "on",
        "workspace_mib": int_option(opts, "workspace"),
        "timing_cache": opts.get("timing_cache", ""),
    }
    if s["workspace_mib"] < 0:
        raise ValueError("option workspace must be a size in MiB >= 0")
    return s


def gpu_name():
    """The first CUDA device's name through the driver API (libcuda), or a clear error when
    this machine has no NVIDIA driver or no device."""
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError:
        raise RuntimeError("tensorrt: no CUDA GPU on this machine (no NVIDIA driver: libcuda.so.1 not found)") from None
    rc = cu.cuInit(0)
    count = ctypes.c_int(0)
    if rc != 0 or cu.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        raise RuntimeError(f"tensorrt: no CUDA GPU on this machine (cuInit returned {rc}, {count.value} devices)")
    dev = ctypes.c_int(0)
    name = ctypes.create_string_buffer(256)
    if cu.cuDeviceGet(ctypes.byref(dev), 0) != 0 or cu.cuDeviceGetName(name, 256, dev) != 0:
        return "CUDA device 0"
    return name.value.decode(errors="replace")


def import_tensorrt():
    """TensorRT's Python package; kept out of requirements-vendors.txt (docs/vendor-mapping.md says
    how to install it), hence its own message."""
    try:
        import tensorrt
    except Exception as e:  # ImportError, or bindings without their libraries (libnvinfer.so.*)
        raise RuntimeError(f"tensorrt is not installed in .venv: {type(e).__name__}: {e} (install it by hand: "
                           "see the tensorrt section of docs/vendor-mapping.md)") from None
    return tensorrt


def cuda_runtime():
    """cuda-python's runtime API module (cuda.bindings.runtime from cuda-python 12.6 on,
    cuda.cudart before)."""
    try:
        from cuda.bindings import runtime as cudart
    except ImportError:
        try:
            from cuda import cudart  # older cuda-python
        except ImportError as e:
            raise RuntimeError(f"tensorrt: cuda-python is not installed in .venv ({e}); the bridge allocates "
                               "device buffers with it (see the tensorrt section of docs/vendor-mapping.md)") from None
    return cudart


def check(cudart, result):
    """Unwraps a cuda-python call's (err, value...) tuple, raising on an error."""
    err, rest = result[0], result[1:]
    if int(err) != 0:
        name = cudart.cudaGetErrorName(err)[1]
        raise RuntimeError(f"CUDA error {name.decode() if isinstance(name, bytes) else name}")
    return rest[0] if len(rest) == 1 else (rest or None)


class TensorrtModel(Executable):
    vendor = "tensorrt"

    def __init__(self, model, opts):
        s = builder_settings(opts)
        device = gpu_name()
        trt = import_tensorrt()
        cudart = cuda_runtime()
        self.trt, self.cudart = trt, cudart
        self.version = f"{trt.__version__} ({device})"
        logger = trt.Logger(trt.Logger.ERROR)  # errors only: warnings would interleave with friction's output

        t0 = time.perf_counter()
        builder = trt.Builder(logger)
        network = builder.create_network(0)  # explicit batch (the only mode from TensorRT 10 on)
        parser = trt.OnnxParser(network, logger)
        if not parser.parse_from_file(model):
            errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
            raise RuntimeError(f"the TensorRT ONNX parser rejected the model: {errors[:2000]}")
        for i in range(network.num_inputs):
            t = network.get_input(i)
            if any(d < 0 for d in t.shape):
                raise RuntimeError(f"input {t.name} has a dynamic shape {tuple(t.shape)}; friction binds the batch "
                                   "before the export, so this model was not exported by friction")
        config = builder.create_builder_config()
        config.builder_optimization_level = s["opt"]
        self._flag(config, "TF32", s["tf32"])
        self._flag(config, "FP16", s["fp16"])
        self._flag(config, "BF16", s["bf16"])
        if s["workspace_mib"] > 0:
            config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, s["workspace_mib"] << 20)
        cache_path = s["timing_cache"]
        if cache_path == "off":
            config.set_flag(trt.BuilderFlag.DISABLE_TIMING_CACHE)
        elif cache_path:
            blob = open(cache_path, "rb").read() if os.path.exists(cache_path) else b""
            config.set_timing_cache(config.create_timing_cache(blob), ignore_mismatch=False)
        plan = builder.build_serialized_network(network, config)
        if plan is None:
            raise RuntimeError("TensorRT could not build an engine for the model (builder returned no plan)")
        if cache_path and cache_path != "off":
            with open(cache_path, "wb") as f:
                f.write(memoryview(config.get_timing_cache().serialize()))
        self.engine = trt.Runtime(logger).deserialize_cuda_engine(plan)
        self.context = self.engine.create_execution_context()
        self.compile_ms = (time.perf_counter() - t0) * 1e3

        # One device buffer per I/O tensor (shapes are static), one stream, two events.
        self.inputs, self.outputs = [], []  # (name, shape, numpy dtype, device pointer)
        for i in range(self.engine.num_io_tensors):
            name = self.engine.get_tensor_name(i)
            shape = tuple(self.context.get_tensor_shape(name))
            dtype = trt.nptype(self.engine.get_tensor_dtype(name))
            nbytes = max(1, int(trt.volume(shape)) * dtype().itemsize)
            ptr = check(cudart, cudart.cudaMalloc(nbytes))
            self.context.set_tensor_address(name, int(ptr))
            io = self.inputs if self.engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT else self.outputs
            io.append((name, shape, dtype, ptr))
        self.stream = check(cudart, cudart.cudaStreamCreate())
        self.start = check(cudart, cudart.cudaEventCreate())
        self.end = check(cudart, cudart.cudaEventCreate())

    def _flag(self, config, name, on):
        flag = getattr(self.trt.BuilderFlag, name, None)
        if flag is None:
            if on:
                raise ValueError(f"{name.lower()}=on: tensorrt {self.trt.__version__} has no BuilderFlag.{name} "
                                 "(networks are strongly typed from TensorRT 11: precision follows the model's types)")
            return
        if on:
            config.set_flag(flag)
        else:
            config.clear_flag(flag)

    def prepare(self, inputs):
        import numpy as np

        cudart = self.cudart
        if len(inputs) != len(self.inputs):
            raise ValueError(f"the engine takes {len(self.inputs)} inputs, got {len(inputs)}")
        for x, (name, shape, dtype, ptr) in zip(inputs, self.inputs):
            if tuple(x.shape) != shape:
                raise ValueError(f"input {name} has shape {tuple(x.shape)}, the engine was built for {shape}")
            host = np.ascontiguousarray(x, dtype=dtype)
            check(cudart, cudart.cudaMemcpy(ptr, host.ctypes.data, host.nbytes,
                                            cudart.cudaMemcpyKind.cudaMemcpyHostToDevice))
        return None

    def execute(self, _):
        cudart = self.cudart
        check(cudart, cudart.cudaEventRecord(self.start, self.stream))
        if not self.context.execute_async_v3(stream_handle=int(self.stream)):
            raise RuntimeError("TensorRT execute_async_v3 failed")
        check(cudart, cudart.cudaEventRecord(self.end, self.stream))
        check(cudart, cudart.cudaEventSynchronize(self.end))
        # The GPU time between the events replaces the host's clock (worker_common._run).
        self.last_ms = float(check(cudart, cudart.cudaEventElapsedTime(self.start, self.end)))
        return self.outputs

    def fetch(self, results):
        import numpy as np

        cudart = self.cudart
        outs = []
        for name, shape, dtype, ptr in results:
            host = np.empty(shape, dtype=dtype)
            check(cudart, cudart.cudaMemcpy(host.ctypes.data, ptr, host.nbytes,
                                            cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost))
            outs.append(host)
        return outs


if __name__ == "__main__":
    serve(TensorrtModel)
