"""Writes the ONNX backend node tests of the onnx package in the project venv (its case generator,
onnx.backend.test.case.node) as <OUT>/<case>/model.onnx + test_data_set_<i>/{input,output}_<j>.pb, the
layout `friction conformance` reads. Debian's libonnx-testdata stops at ONNX 1.12 (opset 17); these cover
every opset of the installed onnx. Usage: generate_onnx_node_tests.py OUT (OUT/.onnx-version records what
was generated; an up-to-date OUT is left alone)."""
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
import onnx.backend.test.case.node as node_cases


def proto(value, decl):
    """A test value as a serialized TensorProto, or None for sequences/optionals/maps (friction has none)."""
    if not decl.type.HasField("tensor_type"):
        return None
    return value if isinstance(value, TensorProto) else numpy_helper.from_array(np.asarray(value), decl.name)


def main(out):
    stamp = os.path.join(out, ".onnx-version")
    if os.path.exists(stamp) and open(stamp).read() == onnx.__version__:
        return
    shutil.rmtree(out, ignore_errors=True)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = node_cases.collect_testcases(None)
    for case in cases:
        folder = os.path.join(out, case.name)
        os.makedirs(folder)
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            data = os.path.join(folder, f"test_data_set_{i}")
            os.makedirs(data)
            for kind, values, decls in (("input", inputs, case.model.graph.input),
                                        ("output", outputs, case.model.graph.output)):
                for j, value in enumerate(values):
                    p = proto(value, decls[j])
                    if p is not None:
                        with open(os.path.join(data, f"{kind}_{j}.pb"), "wb") as f:
                            f.write(p.SerializeToString())
    with open(stamp, "w") as f:
        f.write(onnx.__version__)
    print(f"wrote {len(cases)} ONNX {onnx.__version__} node test cases to {out}")


if __name__ == "__main__":
    main(sys.argv[1])
