"""Every change the onnx package's schemas record for a supported op after opset 17, up to the newest opset
the importer accepts, has an entry in frontend/onnx/OpsetAdapters.cpp (a rewrite, or a note that the op
already covers it), and docs/conformance.md lists every entry of opsets 18 and later. A newer onnx in the
venv then fails here until its changes are reviewed."""
import collections
import os

import onnx.defs
import pytest

import friction
from friction import _core

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def signature(schema):
    attrs = {name: (str(a.type), a.required) for name, a in schema.attributes.items()}
    return attrs, [(i.name, str(i.option)) for i in schema.inputs], [(o.name, str(o.option)) for o in schema.outputs]


def schema_changes():
    """(op, version) of every supported op whose attributes, inputs or outputs changed after opset 17."""
    history = collections.defaultdict(list)
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in ("", "ai.onnx"):
            history[s.name].append(s)
    supported = set(friction.ops())
    for op in sorted(supported):
        versions = sorted(history.get(op, []), key=lambda s: s.since_version)
        for before, after in zip(versions, versions[1:]):
            if 17 < after.since_version <= _core.max_opset and signature(before) != signature(after):
                yield op, after.since_version


def covered(op, version):
    return any(a["op"] == op and a["from"] <= version < a["before"] for a in _core.opset_adapters())


@pytest.mark.parametrize("op,version", list(schema_changes()))
def test_every_schema_change_is_reviewed(op, version):
    assert covered(op, version), f"{op}-{version} changed its signature: add an entry to OpsetAdapters.cpp"


def test_the_newest_opset_is_the_onnx_packages():
    assert _core.max_opset <= onnx.defs.onnx_opset_version()


def test_new_ops_written_with_supported_ones_are_listed():
    supported = set(friction.ops())
    for a in _core.opset_adapters():
        if a["from"] >= 18 and a["op"] not in supported:
            assert a["rewrites"], a
            assert onnx.defs.has(a["op"]), f"{a['op']} is not an ONNX op"


def test_docs_list_every_newer_entry():
    docs = open(os.path.join(ROOT, "docs", "conformance.md")).read()
    for a in _core.opset_adapters():
        if a["from"] >= 18:
            assert f"| {a['op']} | {a['from']} |" in docs, f"docs/conformance.md misses {a['op']}-{a['from']}"


def test_torch_fixtures_at_opset_23_match_pytorch(tmp_path):
    """The PyTorch exports (opset 17) converted by onnx's version converter to opset 23, as current exporters
    write them, give PyTorch's outputs on cpu (the conformance runner, rtol 1e-4)."""
    import shutil
    import subprocess

    import onnx
    from onnx import version_converter

    fixtures = os.path.join(ROOT, "tests", "models", "torch")
    for name in sorted(os.listdir(fixtures)):
        shutil.copytree(os.path.join(fixtures, name), tmp_path / name)
        model = version_converter.convert_version(onnx.load(os.path.join(fixtures, name, "model.onnx")), 23)
        onnx.save(model, str(tmp_path / name / "model.onnx"))
    out = subprocess.run([friction.binary, "conformance", str(tmp_path), "--backend", "cpu", "--rtol", "1e-4",
                          "--atol", "1e-5"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == f"{len(os.listdir(fixtures))} passed, 0 failed, 0 skipped"


def test_models_of_newer_opsets_export_for_the_checker(tmp_path):
    """A model imported from opset 23 exports (at opset 17, the IR's form) as a model the ONNX checker accepts."""
    import onnx
    from onnx import version_converter

    for name in ("efficientnet", "swin", "bert"):
        path = os.path.join(ROOT, "tests", "models", "torch", name, "model.onnx")
        newer = tmp_path / f"{name}-23.onnx"
        onnx.save(version_converter.convert_version(onnx.load(path), 23), str(newer))
        for optimized in (False, True):
            out = tmp_path / f"{name}-{optimized}.onnx"
            m = friction.optimize(str(newer), batch=1) if optimized else friction.load(str(newer))
            m.save(str(out))
            onnx.checker.check_model(onnx.load(str(out)), full_check=True)
