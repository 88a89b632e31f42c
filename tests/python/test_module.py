"""The `friction` Python module against the reference interpreter, its errors, and its results tables.

Run by ctest (tests/CMakeLists.txt) with the project venv and build/python on the path."""
import gc
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import friction

RESNET = "zoo:resnet?depth=1&width=8&resolution=16"
MLP = "zoo:mlp?depth=2&width=32&inputs=16"


def inputs_for(model, batch=1, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal([batch if isinstance(d, str) else d for d in i["shape"]]).astype(i["dtype"])
            for i in model.inputs]


def test_import_is_fast():
    # A fresh interpreter: the time a notebook's `import friction` takes (issue 17 asks < 0.5 s).
    code = "import time; t = time.perf_counter(); import friction; print(time.perf_counter() - t)"
    seconds = float(subprocess.check_output([sys.executable, "-c", code], text=True))
    assert seconds < 2.0, f"import friction took {seconds:.2f} s"  # loose bound: a loaded CI machine


def test_load_sources(tmp_path):
    m = friction.load(RESNET)
    assert m.inputs[0]["shape"] == ["N", 3, 16, 16] and m.inputs[0]["dtype"] == "float32"
    assert m.batch_symbol == "N"
    onnx_path = tmp_path / "m.onnx"
    m.save(onnx_path)
    from_file = friction.load(onnx_path)
    from_bytes = friction.load(onnx_path.read_bytes())
    m.save(tmp_path / "m.fir")
    from_text = friction.load(str(tmp_path / "m.fir"))
    for other in (from_file, from_bytes, from_text):
        assert other.inputs == m.inputs and other.op_counts() == m.op_counts()


def test_passes_registry():
    names = [p["name"] for p in friction.passes()]
    assert "fuse-epilogues" in names and "convert-layout" in names
    assert names.index("fold-constants") < names.index("plan-memory")


def test_optimize_changes_the_graph_and_records_passes():
    m = friction.load(RESNET)
    on = friction.optimize(m, batch=1)
    off = friction.optimize(m, batch=1, passes=[])
    assert on.stats()["kernels"] < off.stats()["kernels"]
    assert on.stats()["fused_regions"] > 0 and off.stats()["fused_regions"] == 0
    ran = [r["name"] for r in on.passes_run]
    assert "fuse-epilogues" in ran and off.passes_run == []
    without = friction.optimize(m, batch=1, disable=["fuse-epilogues"])
    assert "fuse-epilogues" not in [r["name"] for r in without.passes_run]
    only = friction.optimize(m, batch=1, only="fold-batchnorm")
    assert [r["name"] for r in only.passes_run] == ["fold-batchnorm"]
    assert m.stats() == friction.load(RESNET).stats()  # the loaded model is unchanged


@pytest.mark.parametrize("backend,config", [("cpu", {}), ("cpu", {"passes": []}),
                                            ("cpu", {"disable": ["convert-layout"]}), ("interp", {}),
                                            ("halide", {}), ("halide?fusion=root", {"passes": []})])
def test_compiled_matches_interpreter(backend, config):
    model = friction.load(RESNET)
    xs = inputs_for(model, batch=2)
    want = friction.compile(model, backend="interp", batch=2, passes=[]).run(*xs)
    got = friction.compile(model, backend=backend, batch=2, **config).run(*xs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_symbolic_batch_compiles_per_batch():
    c = friction.compile(MLP, backend="cpu")
    assert c.batch is None
    for batch in (1, 3, 1):
        (y,) = c.run(*inputs_for(c.model, batch=batch))
        assert y.shape == (batch, 10) and c.batch == batch
    assert c.interp_nodes == 0


def test_outputs_are_owned_arrays():
    c = friction.compile(MLP, backend="cpu", batch=2)
    x = inputs_for(c.model, batch=2)[0]
    (a,) = c.run(x)
    (b,) = c.run(x)
    assert a.flags.writeable and not np.shares_memory(a, b)
    a[...] = 0  # the caller owns its results: a later run is not changed by it
    np.testing.assert_array_equal(c.run(x)[0], b)


def test_an_output_that_is_an_input_is_copied(tmp_path):
    # Reshape is a view on cpu: the result shares the input's memory unless the module copies it.
    (tmp_path / "v.fir").write_text('graph "v" opset 17 {\n  input %x : f32[2,3]\n'
                                    '  const %s : i64[1] = hex"0600000000000000"\n'
                                    '  %y : f32[6] = Reshape(%x, %s) @"r"\n  output %y\n}\n')
    c = friction.compile(str(tmp_path / "v.fir"), backend="cpu", passes=[])
    x = np.zeros((2, 3), np.float32)
    (y,) = c.run(x)
    y[0] = 7
    assert x[0, 0] == 0


def test_inputs_that_are_not_contiguous_or_aligned_give_the_same_result():
    c = friction.compile(MLP, backend="cpu", batch=4)
    x = inputs_for(c.model, batch=4)[0]
    (want,) = c.run(x)
    strided = np.zeros((4, 32), np.float32)[:, ::2]
    strided[...] = x
    unaligned = np.frombuffer(bytearray(4 * 16 * 4 + 4), np.float32, offset=4).reshape(4, 16)
    unaligned[...] = x
    for arr in (strided, unaligned, x.tolist()):
        np.testing.assert_array_equal(c.run(arr)[0], want)


@pytest.mark.parametrize("bad,message", [
    (lambda x: x.astype(np.float64), "expects float32, got an array of float64"),
    (lambda x: x[:, :8], "expects shape [4,16], got an array of shape (4, 8)"),
    (lambda x: x.reshape(4, 16, 1), "expects shape [4,16]"),
    (lambda x: np.array(["a"] * 64).reshape(4, 16), "not supported"),
])
def test_bad_arrays_raise_clear_errors(bad, message):
    c = friction.compile(MLP, backend="cpu", batch=4)
    x = inputs_for(c.model, batch=4)[0]
    with pytest.raises(friction.Error, match="input 0 \\('input'\\)"):
        try:
            c.run(bad(x))
        except friction.Error as e:
            assert message in str(e), str(e)
            raise


def test_wrong_input_count_and_bad_arguments():
    c = friction.compile(MLP, backend="cpu", batch=1)
    with pytest.raises(friction.Error, match="takes 1 inputs, got 2"):
        c.run(np.zeros((1, 16), np.float32), np.zeros((1, 16), np.float32))
    with pytest.raises(ValueError, match="positive integer"):
        friction.compile(MLP, batch=0)
    with pytest.raises(friction.Error, match="unknown pass"):
        friction.optimize(MLP, disable=["no-such-pass"])
    with pytest.raises(friction.Error, match="unknown backend .no-such-backend."):
        friction.compile(MLP, backend="no-such-backend", batch=1)
    with pytest.raises(friction.Error, match="cannot open"):
        friction.load("/no/such/model.onnx")
    with pytest.raises(friction.Error):
        friction.load(b"this is not a protobuf")
    with pytest.raises(TypeError):
        friction.load(42)


def test_bench_reports_the_protocol_fields():
    c = friction.compile(MLP, backend="cpu", batch=2)
    r = c.bench(reps=5, warmup=1, min_reps=3, threads=1)
    assert r["median_ms"] > 0 and len(r["samples_ms"]) >= 3 and r["threads"] == 1
    assert r["ci95_ms"][0] <= r["median_ms"] <= r["ci95_ms"][1]
    assert r["interp_nodes"] == 0 and r["max_abs_error"] < 1e-4


def test_one_batch_programs_refuse_another_batch_in_bench():
    c = friction.compile(MLP, backend="cpu", batch=1)
    with pytest.raises(friction.Error, match="compiled for one batch"):
        c.bench(batch=8, reps=3)
    (y,) = c.run(*inputs_for(c.model, batch=1))  # still the batch-1 program
    assert y.shape == (1, 10)
    with pytest.raises(friction.Error, match="only=\\[\\] names no pass"):
        friction.optimize(MLP, only=[])


def test_threads_sharing_a_program_get_their_own_results():
    import threading

    c = friction.compile(RESNET, backend="cpu", batch=2)
    xs = [inputs_for(c.model, batch=2, seed=s) for s in range(4)]
    want = [c.run(*x)[0] for x in xs]
    wrong = []

    def work(k):
        for _ in range(20):
            if not np.array_equal(c.run(*xs[k])[0], want[k]):
                wrong.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong, f"threads {sorted(set(wrong))} got another thread's result"


def test_profile():
    c = friction.compile(MLP, backend="cpu", batch=1, profile=True)
    c.run(*inputs_for(c.model))
    assert "sgemm" in c.profile or "gemm" in c.profile.lower()


def test_run_overhead_is_small():
    # The module's cost per call beyond the C++ run (issue 17 asks < 20 us); loose bound, printed for the notes.
    c = friction.compile(MLP, backend="cpu", batch=1)
    x = inputs_for(c.model)[0]
    for _ in range(50):
        c.run(x)
    t = time.perf_counter()
    n = 2000
    for _ in range(n):
        c.run(x)
    per_call_us = (time.perf_counter() - t) / n * 1e6
    print(f"run: {per_call_us:.1f} us per call (model and module)")
    assert per_call_us < 5000


def test_results_of_an_ablation(tmp_path):
    db = str(tmp_path / "a.db")
    r = friction.ablate(MLP, batches=[1], db=db, over=["fuse-epilogues", "fuse-elementwise"], rounds=3,
                        extra_args=["--block-ms", "5", "--min-rounds", "3"])
    assert r.db == db
    m = r.measurements
    assert len(m) >= 4 and set(m["batch"]) == {1} and (m["median_ms"] > 0).all()
    a = r.attributions
    assert set(a["pass"]) >= {"fuse-epilogues", "fuse-elementwise"}
    assert (a["ci_low_ms"] <= a["value_ms"]).all() and (a["value_ms"] <= a["ci_high_ms"]).all()
    assert len(r.rounds) >= 3
    assert not r.series.empty and {"friction", "phi"} <= set(r.series.columns)


def test_a_temporary_store_goes_with_its_results(tmp_path, monkeypatch):
    # No db given: the store is a temporary file the Results owns; save() keeps a copy that stays.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    r = friction.ablate(MLP, batches=[1], over=["fuse-epilogues"], rounds=3, aa=False, check=False,
                        extra_args=["--block-ms", "5", "--min-rounds", "3"])
    assert r.temporary and os.path.dirname(r.db) == str(tmp_path) and os.path.isfile(r.db)
    kept = r.save(str(tmp_path / "kept.db"))
    assert not kept.temporary and len(kept.measurements) == len(r.measurements) >= 2
    with pytest.raises(friction.Error, match="does not overwrite"):
        r.save(str(tmp_path / "kept.db"))
    store = r.db
    del r
    gc.collect()
    assert not os.path.exists(store) and os.path.isfile(tmp_path / "kept.db")
    assert not list(tmp_path.glob("friction-*"))


def test_results_of_a_sweep_have_mitigation(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "t"\nmodels = ["zoo:mlp?width=16&inputs=16"]\nbatches = [1, 4]\n'
                    'executors = [{ backend = "cpu", config = "all-off" }, { backend = "cpu", config = "default" }]\n'
                    'rounds = 3\nmin_rounds = 3\nmax_seconds = 0.1\ncheck = false\n')
    r = friction.sweep(str(spec), db=str(tmp_path / "s.db"))
    m = r.mitigation
    assert set(m["executor"]) == {"cpu|default"} and set(m["batch"]) == {1, 4}
    first = m[m["batch"] == 1].iloc[0]
    assert first["R"] == 1.0 and first["R_ci_low"] == 1.0
    assert (m["R_ci_low"] <= m["R"]).all() and (m["R"] <= m["R_ci_high"]).all()
    assert m["delta_phi"].notna().all()


def test_results_errors(tmp_path):
    with pytest.raises(friction.Error, match="does not exist"):
        friction.Results(str(tmp_path / "missing.db"))
    with pytest.raises(friction.Error, match="no-such-pass"):
        friction.ablate(MLP, over=["no-such-pass"], db=str(tmp_path / "b.db"))


def test_a_failed_ablation_leaves_no_temporary_files(tmp_path, monkeypatch):
    # ORT refuses the option when the bridge loads the model, after the store was created: neither the
    # temporary store nor the bridge's model folder may stay behind.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with pytest.raises(friction.Error, match="level must be one of"):
        friction.ablate(MLP, backend="ort?level=bogus", rounds=2)
    assert not list(tmp_path.glob("friction-*")) and not list(tmp_path.glob("*.fir"))
