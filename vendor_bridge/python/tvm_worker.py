#!/usr/bin/env python3
"""Apache TVM (Relax) worker for friction's `tvm` backend (protocol: worker_common.py).

The ONNX model is imported with relax.frontend.onnx.from_onnx (weights bound as constants)
and built by tvm.compile with TVM's CPU pipeline (relax.get_default_pipeline: LegalizeOps,
FoldConstant, FuseOps, FuseTIR, memory planning) for an llvm target inside a PassContext; the reported run
time is measured around the Relax VirtualMachine call only. No tuning (MetaSchedule)
is done: kernels use TVM's default schedules.
Options: opt = 0..3 (PassContext opt_level, default 3), threads = N (TVM_NUM_THREADS,
default: TVM's), mcpu = LLVM CPU name (default: the host's, as LLVM names it),
disable = comma-separated pass names from SWITCHES (PassContext disabled_pass).
"""
import os
import time
from importlib.metadata import version

from worker_common import (Executable, choice_option, int_option, list_option, save_artifact, serve,
                           vendor_import)

# The Relax passes of TVM's default CPU pipeline (tvm/relax/backend/cpu_generic/pipeline.py)
# that PassContext.disabled_pass can skip without breaking the build; registerTvmBackend
# (vendor_bridge/TvmBackend.cpp) lists the same names, which tests/vendor_bridge/TestVendorSwitches.cpp checks.
SWITCHES = ["FoldConstant", "FuseOps", "FuseTIR", "StaticPlanBlockMemory"]


class TvmModel(Executable):
    vendor = "tvm"
    saves_artifacts = True

    def __init__(self, model, opts, artifact=None):
        threads = int_option(opts, "threads")
        if threads > 0:
            os.environ["TVM_NUM_THREADS"] = str(threads)  # read when TVM's thread pool starts
        disabled = list_option(opts, "disable")
        for name in disabled:
            if name not in SWITCHES:
                raise ValueError(f"unknown TVM switch '{name}' (switches: {', '.join(SWITCHES)})")
        opt_level = int(choice_option(opts, "opt", ["0", "1", "2", "3"], "3"))
        onnx = vendor_import("tvm", "onnx")
        tvm = vendor_import("tvm", "tvm")
        relax = vendor_import("tvm", "tvm.relax")
        frontend = vendor_import("tvm", "tvm.relax.frontend.onnx")
        self.tvm = tvm
        self.version = version("apache-tvm")
        target = tvm.target.Target({"kind": "llvm", "mcpu": opts.get("mcpu") or tvm.target.codegen.llvm_get_system_cpu()})
        t0 = time.perf_counter()
        saved = artifact + ".so" if artifact else None
        if saved and os.path.exists(saved):
            exe = tvm.runtime.load_module(saved)
            self.artifact_reused = True
        else:
            mod = frontend.from_onnx(onnx.load(model), keep_params_in_input=False)
            with tvm.transform.PassContext(opt_level=opt_level, disabled_pass=disabled):
                # TVM's CPU pipeline (legalize, fold, fuse); tvm.compile's own default has no fusion.
                exe = tvm.compile(mod, target=target, relax_pipeline=relax.get_default_pipeline(target))
            if saved:
                save_artifact(saved, exe.export_library)
        self.compile_ms = (time.perf_counter() - t0) * 1e3
        self.dev = tvm.cpu()
        self.vm = relax.VirtualMachine(exe, self.dev)
        self.main = self.vm["main"]
        self.threads_used = tvm.runtime.num_threads()  # the runtime's pool

    def prepare(self, inputs):
        return [self.tvm.runtime.tensor(x, self.dev) for x in inputs]

    def execute(self, args):
        out = self.main(*args)
        return [out] if hasattr(out, "numpy") else list(out)

    def fetch(self, results):
        return [r.numpy() for r in results]


if __name__ == "__main__":
    serve(TvmModel)
