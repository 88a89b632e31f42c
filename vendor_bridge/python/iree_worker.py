#!/usr/bin/env python3
"""IREE worker for friction's `iree` backend (protocol: worker_common.py).

The ONNX model is imported with iree-import-onnx (upgraded to opset 17 when older),
compiled by iree-compile for llvm-cpu on the host CPU, and run with the local-task
driver; the reported run time is measured around the module function call only
(inputs are uploaded beforehand, outputs read back afterwards).
Options: opt = O0 | O1 | O2 | O3 (--iree-opt-level; default: IREE's, O2),
threads = N (--task_topology_max_group_count; default: IREE's),
disable = comma-separated switch names from SWITCHES (each sets its flag to false).
"""
import os
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

from worker_common import (Executable, choice_option, int_option, list_option, save_artifact, serve,
                           vendor_import)

# friction's names for IREE's own optimization flags (verified with `iree-compile --help-hidden`
# of iree-base-compiler 3.13.0); registerIreeBackend (vendor_bridge/IreeBackend.cpp) lists the same names,
# which tests/vendor_bridge/TestVendorSwitches.cpp checks.
SWITCHES = {
    "const-eval": "--iree-opt-const-eval",
    "const-expr-hoisting": "--iree-opt-const-expr-hoisting",
    "aggressive-fusion": "--iree-dispatch-creation-enable-aggressive-fusion",
    "propagate-transposes": "--iree-opt-aggressively-propagate-transposes",
    "generalize-matmul": "--iree-opt-generalize-matmul",
    "data-tiling": "--iree-opt-data-tiling",
    "reassociate-fp-reductions": "--iree-llvmcpu-reassociate-fp-reductions",
}
TARGET = [
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
]
LEVELS = ["O0", "O1", "O2", "O3"]


def compile_flags(opts):
    """iree-compile's flags for the bridge's options (also used by benchmarks/vendor_agreement.sh)."""
    flags = list(TARGET)
    if "opt" in opts:
        flags.append("--iree-opt-level=" + choice_option(opts, "opt", LEVELS, "O2"))
    for name in list_option(opts, "disable"):
        if name not in SWITCHES:
            raise ValueError(f"unknown IREE switch '{name}' (switches: {', '.join(SWITCHES)})")
        flags.append(SWITCHES[name] + "=false")
    return flags


def runtime_flags(opts):
    threads = int_option(opts, "threads")
    return [f"--task_topology_max_group_count={threads}"] if threads > 0 else []


def import_onnx(model, mlir):
    """iree-import-onnx, after upgrading the model to opset 17 when it is older."""
    onnx = vendor_import("iree", "onnx")
    m = onnx.load(model)
    opset = max((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), default=17)
    if opset < 17:
        m = onnx.version_converter.convert_version(m, 17)
        model = mlir + ".opset17.onnx"
        onnx.save(m, model)
    r = subprocess.run([sys.executable, "-m", "iree.compiler.tools.import_onnx", model, "-o", mlir],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("iree-import-onnx failed: " + (r.stderr.strip() or r.stdout.strip())[-2000:])


class IreeModel(Executable):
    vendor = "iree"
    saves_artifacts = True

    def __init__(self, model, opts, artifact=None):
        tools = vendor_import("iree", "iree.compiler.tools")
        rt = vendor_import("iree", "iree.runtime")
        self.rt = rt
        self.version = version("iree-base-compiler")
        flags, rflags = compile_flags(opts), runtime_flags(opts)
        t0 = time.perf_counter()
        saved = artifact + ".vmfb" if artifact else None
        if saved and os.path.exists(saved):
            with open(saved, "rb") as f:
                vmfb = f.read()
            self.artifact_reused = True
        else:
            vmfb = self.compile(tools, model, flags)
            if saved:
                save_artifact(saved, lambda path: Path(path).write_bytes(vmfb))
        self.compile_ms = (time.perf_counter() - t0) * 1e3
        if rflags:
            rt.flags.parse_flags(*rflags)
        self.config = rt.Config("local-task")
        # IREE's runtime does not report its worker count: the flag the worker gave it.
        self.threads_used = " ".join(rflags) or "IREE's default (one worker per core)"
        ctx = rt.SystemContext(config=self.config)
        vm_module = rt.VmModule.copy_buffer(ctx.instance, vmfb)
        ctx.add_vm_module(vm_module)
        # The importer names the function after the ONNX graph; skip IREE's async and init variants.
        names = [n for n in vm_module.function_names if not n.endswith("$async") and not n.startswith("__")]
        if len(names) != 1:
            raise RuntimeError(f"expected one entry function in the IREE module, found {names}")
        self.function = ctx.modules[vm_module.name][names[0]]

    @staticmethod
    def compile(tools, model, flags):
        with tempfile.TemporaryDirectory(prefix="friction-iree-") as tmp:
            mlir = os.path.join(tmp, "model.mlir")
            import_onnx(model, mlir)
            try:
                return tools.compile_file(mlir, input_type="onnx", extra_args=flags)
            except tools.CompilerToolError as e:
                lines = [l for l in str(e).splitlines() if "error" in l]
                raise RuntimeError("iree-compile failed: " + ("; ".join(lines[:3]) or str(e)[-2000:])) from None

    def prepare(self, inputs):
        return [self.rt.asdevicearray(self.config.device, x) for x in inputs]

    def execute(self, args):
        out = self.function(*args)
        return list(out) if isinstance(out, (tuple, list)) else [out]

    def fetch(self, results):
        return [r.to_host() for r in results]


if __name__ == "__main__":
    serve(IreeModel)
