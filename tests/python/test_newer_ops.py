"""Ops of opsets 18 and later that the importer writes with supported ones (Attention) or that reach the IR in a
newer form (Resize's antialias and keep_aspect_ratio_policy, SpaceToDepth's CRD mode), against the onnx package's
reference implementation, on interp and cpu, with every pass and with none. The node tests have a few cases of
each; these draw many shapes and attribute combinations, and give the parameters as constants (as exporters
write them), which is the path the compiled kernels take."""
import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import friction

CONFIGS = [("interp", None), ("cpu", None), ("cpu", ["none"])]


def model_of(node, inputs, outputs, opset, initializers=()):
    graph = helper.make_graph([node], "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def check_against_reference(model, feeds, rtol=1e-4, atol=1e-5):
    want = ReferenceEvaluator(model).run(None, feeds)
    data = model.SerializeToString()
    names = [i.name for i in model.graph.input]
    for backend, passes in CONFIGS:
        got = friction.compile(data, backend, passes=passes).run(*[feeds[n] for n in names])
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            assert g.shape == w.shape, (backend, passes, k)
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol,
                                       err_msg=f"{backend} passes={passes} output {k}")


def tensor_info(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, list(shape))


def attention_case(rng, *, rank, q_heads, kv_heads, causal, mask, past, nonpad, softcap, window, mode, opset):
    """One Attention node: batch 2, 3 queries, head size 8 (values 6), `past` cached keys plus 4 new ones."""
    batch, queries, new_keys, d, dv = 2, 3, 4, 8, 6
    keys = new_keys + past
    attrs = {"is_causal": int(causal), "qk_matmul_output_mode": mode}
    if softcap:
        attrs["softcap"] = 2.0
    if window:
        attrs["left_window_size"], attrs["right_window_size"] = window
    if rank == 3:
        attrs["q_num_heads"], attrs["kv_num_heads"] = q_heads, kv_heads
        qs, ks, vs = (batch, queries, q_heads * d), (batch, new_keys, kv_heads * d), (batch, new_keys, kv_heads * dv)
    else:
        qs, ks, vs = (batch, q_heads, queries, d), (batch, kv_heads, new_keys, d), (batch, kv_heads, new_keys, dv)
    feeds = {"Q": rng.standard_normal(qs).astype(np.float32), "K": rng.standard_normal(ks).astype(np.float32),
             "V": rng.standard_normal(vs).astype(np.float32)}
    inputs = ["Q", "K", "V"]
    if mask:
        mask_keys = keys - 1 if mask.endswith("short") else keys  # a mask shorter than the keys masks the rest
        shape = (batch, 1, queries, mask_keys) if mask.startswith("4d") else (queries, mask_keys)
        if "bool" in mask:
            m = rng.random(shape) > 0.3
            m[..., 0] = True  # every row attends some key, so float and bool masks agree
            feeds["attn_mask"] = m
        else:
            feeds["attn_mask"] = rng.standard_normal(shape).astype(np.float32)
        inputs.append("attn_mask")
    else:
        inputs.append("")
    if past:
        feeds["past_key"] = rng.standard_normal((batch, kv_heads, past, d)).astype(np.float32)
        feeds["past_value"] = rng.standard_normal((batch, kv_heads, past, dv)).astype(np.float32)
        inputs += ["past_key", "past_value"]
    elif nonpad:
        feeds["nonpad_kv_seqlen"] = np.array([keys, keys - 1], dtype=np.int64)
        inputs += ["", "", "nonpad_kv_seqlen"]
    outputs = ["Y", "present_key", "present_value", "qk"] if past else ["Y", "", "", "qk"]
    node = helper.make_node("Attention", inputs, outputs, **attrs)
    elem = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.bool_): TensorProto.BOOL,
            np.dtype(np.int64): TensorProto.INT64}
    graph_inputs = [tensor_info(n, elem[feeds[n].dtype], feeds[n].shape) for n in inputs if n]
    graph_outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs if n]
    return model_of(node, graph_inputs, graph_outputs, opset), feeds


ATTENTION = [
    dict(rank=4, q_heads=2, kv_heads=2, causal=False, mask=None, past=0, nonpad=False, softcap=False, window=None, mode=0),
    dict(rank=3, q_heads=4, kv_heads=2, causal=True, mask=None, past=0, nonpad=False, softcap=False, window=None, mode=1),
    dict(rank=4, q_heads=4, kv_heads=1, causal=True, mask="4d_float", past=2, nonpad=False, softcap=True, window=None, mode=2),
    dict(rank=3, q_heads=2, kv_heads=2, causal=False, mask="2d_bool_short", past=0, nonpad=False, softcap=False, window=None, mode=3),
    dict(rank=4, q_heads=2, kv_heads=2, causal=True, mask="4d_bool", past=0, nonpad=True, softcap=False, window=None, mode=3),
    dict(rank=4, q_heads=2, kv_heads=1, causal=False, mask=None, past=0, nonpad=True, softcap=False, window=(1, 0), mode=2),
    dict(rank=3, q_heads=2, kv_heads=2, causal=True, mask="2d_float_short", past=3, nonpad=False, softcap=False, window=(2, -1), mode=0),
    dict(rank=4, q_heads=2, kv_heads=2, causal=True, mask=None, past=0, nonpad=True, softcap=True, window=(0, 1), mode=3),
]


@pytest.mark.parametrize("case", range(len(ATTENTION)))
def test_attention_matches_the_reference(case):
    config = ATTENTION[case]
    opset = 25 if config["window"] else 24
    model, feeds = attention_case(np.random.default_rng(case), opset=opset, **config)
    check_against_reference(model, feeds)


def test_attention_in_half_precision_is_computed_in_f32():
    """f16 Q/K/V: friction computes in f32 and rounds the outputs once; within two f16 ulps of the reference."""
    model, feeds = attention_case(np.random.default_rng(7), opset=24, **ATTENTION[1])
    for t in list(model.graph.input) + list(model.graph.output):
        t.type.tensor_type.elem_type = TensorProto.FLOAT16
    half = {k: v.astype(np.float16) for k, v in feeds.items()}
    check_against_reference(model, half, rtol=2e-3, atol=2e-3)
    cpu = friction.compile(model.SerializeToString(), "cpu")
    cpu.run(*half.values())
    assert cpu.interp_nodes == 0


def test_a_causal_decoder_attention_is_matmul_softmax_matmul():
    """Without run-time masks, the masks fold into one constant bias and no fully-masked-row guard is added."""
    model, _ = attention_case(np.random.default_rng(0), opset=24, **ATTENTION[1])
    ops = friction.load(model.SerializeToString()).op_counts()
    assert ops.get("MatMul") == 2 and ops.get("Softmax") == 1 and "Where" not in ops and "ReduceMax" not in ops, ops


def test_attention_errors_name_the_node():
    model, _ = attention_case(np.random.default_rng(0), opset=24, **ATTENTION[1])
    for a in model.graph.node[0].attribute:
        if a.name == "kv_num_heads":
            a.i = 3  # 4 query heads are no multiple of 3 key heads
    with pytest.raises(friction.Error, match="Attention 'Attention_0': K's 16 features do not split into 3 heads"):
        friction.load(model.SerializeToString())


@pytest.mark.parametrize("mode,scale", list(itertools.product(["linear", "cubic"], [0.6, 0.33])))
def test_resize_antialias_matches_the_reference(mode, scale):
    x = np.random.default_rng(1).standard_normal((1, 3, 17, 12)).astype(np.float32)
    scales = numpy_helper.from_array(np.array([1, 1, scale, scale], dtype=np.float32), "scales")
    node = helper.make_node("Resize", ["X", "", "scales"], ["Y"], mode=mode, antialias=1)
    model = model_of(node, [tensor_info("X", TensorProto.FLOAT, x.shape)],
                     [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], 18, [scales])
    check_against_reference(model, {"X": x})


@pytest.mark.parametrize("policy,sizes", [("not_larger", [7, 5]), ("not_smaller", [3, 5]), ("not_smaller", [11, 2]),
                                          ("not_larger", [2, 5, 13, 18])])
def test_resize_keep_aspect_ratio_matches_the_reference(policy, sizes):
    """Over axes 2 and 3, or (four sizes, no axes) over every dim."""
    x = np.random.default_rng(2).standard_normal((1, 2, 6, 9)).astype(np.float32)
    init = numpy_helper.from_array(np.array(sizes, dtype=np.int64), "sizes")
    axes = {"axes": [2, 3]} if len(sizes) == 2 else {}
    node = helper.make_node("Resize", ["X", "", "", "sizes"], ["Y"], mode="linear", keep_aspect_ratio_policy=policy,
                            **axes)
    model = model_of(node, [tensor_info("X", TensorProto.FLOAT, x.shape)],
                     [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], 19, [init])
    check_against_reference(model, {"X": x})


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_modes_match_the_reference(mode):
    x = np.random.default_rng(3).standard_normal((2, 3, 6, 4)).astype(np.float32)
    node = helper.make_node("SpaceToDepth", ["X"], ["Y"], blocksize=2, mode=mode)
    model = model_of(node, [tensor_info("X", TensorProto.FLOAT, x.shape)],
                     [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], 28)
    check_against_reference(model, {"X": x}, rtol=0, atol=0)


# ---- quantization: the float emulation against the reference, with the parameters as constants ----

def quant_model(node, x, initializers, opset=21, elem=TensorProto.FLOAT):
    model = model_of(node, [tensor_info("x", elem, x.shape)], [helper.make_tensor_value_info("y", 0, None)], opset,
                     [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    return model, {"x": x}


@pytest.mark.parametrize("kind", ["tensor", "axis", "block"])
@pytest.mark.parametrize("zero_type", [np.uint8, np.int8, np.int16])
def test_quantize_dequantize_match_the_reference(kind, zero_type):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((2, 6, 5)) * 40).astype(np.float32)
    x[0, 0, :3] = [0.5, 1.5, -2.5]  # ties round to even
    shape = {"tensor": (), "axis": (6,), "block": (2, 3, 5)}[kind]
    attrs = {"axis": 1} | ({"block_size": 2} if kind == "block" else {})
    scale = rng.uniform(0.2, 1.0, shape).astype(np.float32)
    zero = rng.integers(-3, 4, shape).astype(zero_type) + (10 if zero_type == np.uint8 else 0)
    q, feeds = quant_model(helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], **attrs), x, {"s": scale, "z": zero})
    check_against_reference(q, feeds, rtol=0, atol=0)
    xq = ReferenceEvaluator(q).run(None, feeds)[0]
    elem = helper.np_dtype_to_tensor_dtype(xq.dtype)
    dq, feeds = quant_model(helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], **attrs), xq,
                            {"s": scale, "z": zero}, elem=elem)
    check_against_reference(dq, feeds, rtol=1e-6, atol=0)


def test_dynamic_quantize_linear_matches_the_reference():
    x = np.random.default_rng(5).standard_normal((3, 8)).astype(np.float32) * 3
    model, feeds = quant_model(helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zero"]), x, {}, opset=11)
    model.graph.output.extend([helper.make_tensor_value_info(n, 0, None) for n in ("scale", "zero")])
    check_against_reference(model, feeds, rtol=1e-6, atol=0)


def test_quantized_convolution_and_matmul_match_the_reference():
    rng = np.random.default_rng(6)
    x = rng.integers(0, 256, (1, 4, 9, 9)).astype(np.uint8)
    w = rng.integers(-128, 128, (6, 4, 3, 3)).astype(np.int8)
    params = {"xs": np.float32(0.02), "xz": np.uint8(128), "w": w, "ws": rng.uniform(0.001, 0.01, 6).astype(np.float32),
              "wz": np.zeros(6, np.int8), "ys": np.float32(0.5), "yz": np.uint8(100),
              "b": rng.integers(-500, 500, 6).astype(np.int32)}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], pads=[1, 1, 1, 1],
                            strides=[2, 2])
    model, feeds = quant_model(node, x, params, opset=10, elem=TensorProto.UINT8)
    check_against_reference(model, feeds, rtol=0, atol=1)  # requantized in f32 against f64: one step at a tie
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 1, 1, 1])
    model, feeds = quant_model(node, x, {"w": w, "xz": np.uint8(128), "wz": np.arange(6, dtype=np.int8)}, opset=10,
                               elem=TensorProto.UINT8)
    check_against_reference(model, feeds, rtol=0, atol=0)
    a = rng.integers(0, 256, (5, 16)).astype(np.uint8)
    b = rng.integers(-128, 128, (16, 7)).astype(np.int8)
    node = helper.make_node("QLinearMatMul", ["x", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    model, feeds = quant_model(node, a, {"as": np.float32(0.05), "az": np.uint8(120), "b": b, "bs": np.float32(0.01),
                                         "bz": np.int8(0), "ys": np.float32(0.3), "yz": np.uint8(128)},
                               opset=10, elem=TensorProto.UINT8)
    check_against_reference(model, feeds, rtol=0, atol=1)
    node = helper.make_node("MatMulInteger", ["x", "b", "az", "bz"], ["y"])
    model, feeds = quant_model(node, a, {"b": b, "az": np.uint8(120), "bz": np.int8(-2)}, opset=10, elem=TensorProto.UINT8)
    check_against_reference(model, feeds, rtol=0, atol=0)


# Against onnxruntime's integer kernels, a fraction of the output's largest magnitude: about a quantization step,
# more through BERT's twelve requantized layers, where onnxruntime's result moves with the host's ISA (2026-12-07,
# an AMD EPYC with AVX2 and no VNNI: BERT QDQ 2.05% off the emulation, within 2% on a Xeon with AVX-512).
@pytest.mark.parametrize("name,fmt,steps", [("resnet_basic", "qdq", 2e-2), ("mobilenet_v2", "dynamic", 2e-2),
                                            ("bert", "qdq", 4e-2), ("bert", "dynamic", 2e-2)])
def test_models_quantized_by_onnxruntime_compile_whole(name, fmt, steps, tmp_path):
    """Torch fixtures quantized by onnxruntime's tools (static QDQ, calibrated on the fixture's input; dynamic:
    MatMulInteger/ConvInteger after DynamicQuantizeLinear) run on cpu with no interpreter node, giving the
    interpreter's emulation and, within a few quantization steps, onnxruntime's integer kernels."""
    import logging
    import os

    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_dynamic, quantize_static

    logging.disable(logging.WARNING)
    folder = os.path.join(os.path.dirname(__file__), "..", "models", "torch", name)
    source = os.path.join(folder, "model.onnx")
    names = [i.name for i in onnx.load(source).graph.input]
    feeds = {n: numpy_helper.to_array(onnx.load_tensor(os.path.join(folder, "test_data_set_0", f"input_{k}.pb")))
             for k, n in enumerate(names)}

    class OneBatch(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([feeds])

        def get_next(self):
            return next(self.batches, None)

    out = str(tmp_path / f"{name}_{fmt}.onnx")
    if fmt == "dynamic":
        quantize_dynamic(source, out)
    else:
        quantize_static(source, out, OneBatch(), quant_format=QuantFormat.QDQ)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    want = ort.InferenceSession(out, options, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    batch = next(iter(feeds.values())).shape[0]
    emulated = friction.compile(out, "interp", batch=batch).run(*feeds.values())[0]
    scale = float(np.max(np.abs(want)))
    for passes in (None, ["none"]):
        cpu = friction.compile(out, "cpu", batch=batch, passes=passes)
        got = cpu.run(*feeds.values())[0]
        assert cpu.interp_nodes == 0, cpu.executor
        np.testing.assert_allclose(got, emulated, rtol=0, atol=1e-5 * scale)
        np.testing.assert_allclose(got, want, rtol=0, atol=steps * scale)


@pytest.mark.parametrize("mode,padding,align", list(itertools.product(["linear", "nearest", "cubic"],
                                                                       ["zeros", "border", "reflection"], [0, 1])))
def test_grid_sample_matches_the_reference(mode, padding, align):
    """GridSample over an image, the grid reaching past the borders (the padding modes) and hitting ties; opset 16's
    names for the modes (bilinear, bicubic) give the same."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    grid = rng.uniform(-1.4, 1.4, (2, 4, 3, 2)).astype(np.float32)
    grid[0, 0, 0] = [0.0, -0.2]  # a nearest tie on the 5-pixel axis without align_corners
    feeds = {"x": x, "grid": grid}
    inputs = [tensor_info("x", TensorProto.FLOAT, x.shape), tensor_info("grid", TensorProto.FLOAT, grid.shape)]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]

    def model(opset, name):
        node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=name, padding_mode=padding, align_corners=align)
        return model_of(node, inputs, outputs, opset)

    check_against_reference(model(20, mode), feeds)
    older = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)
    got = friction.compile(model(16, older).SerializeToString(), "cpu").run(x, grid)[0]
    np.testing.assert_array_equal(got, friction.compile(model(20, mode).SerializeToString(), "cpu").run(x, grid)[0])


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
def test_grid_sample_of_a_volume_matches_the_reference(mode):
    """GridSample-20 over 3-D volumes (its mode names linear and cubic)."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    grid = rng.uniform(-1.2, 1.2, (1, 2, 2, 3, 3)).astype(np.float32)
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode="border")
    model = model_of(node, [tensor_info("x", TensorProto.FLOAT, x.shape), tensor_info("grid", TensorProto.FLOAT, grid.shape)],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], 20)
    check_against_reference(model, {"x": x, "grid": grid})


def test_grid_sample_errors_name_the_node():
    def model(grid_shape, **attrs):
        node = helper.make_node("GridSample", ["x", "grid"], ["y"], name="warp", **attrs)
        return model_of(node, [tensor_info("x", TensorProto.FLOAT, (1, 2, 4, 4)),
                               tensor_info("grid", TensorProto.FLOAT, grid_shape)],
                        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], 16).SerializeToString()

    with pytest.raises(friction.Error, match="GridSample 'warp': grid's last dim must be 2"):
        friction.load(model((1, 3, 3, 3)))
    with pytest.raises(friction.Error, match="GridSample 'warp': padding_mode must be zeros, border or reflection"):
        friction.load(model((1, 3, 3, 2), padding_mode="wrap"))


@pytest.mark.parametrize("op,reduction,weighted,ignore", list(itertools.product(
    ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"], ["none", "sum", "mean"], [False, True], [None, 2, -1])))
def test_losses_match_the_reference(op, reduction, weighted, ignore):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 5, 2, 4)).astype(np.float32)
    target = rng.integers(0, 5, (3, 2, 4)).astype(np.int64)
    if ignore is not None:
        target[0, 0, :2] = ignore  # -1 lies outside the classes: its weight is read clipped, then zeroed
    feeds = {"x": x, "target": target}
    inputs = ["x", "target"]
    attrs = {"reduction": reduction} | ({"ignore_index": ignore} if ignore is not None else {})
    if weighted:
        feeds["weight"] = rng.uniform(0.2, 2.0, 5).astype(np.float32)
        inputs.append("weight")
    outputs = ["loss", "log_prob"] if op == "SoftmaxCrossEntropyLoss" else ["loss"]
    node = helper.make_node(op, inputs, outputs, **attrs)
    elem = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}
    model = model_of(node, [tensor_info(k, elem[v.dtype], v.shape) for k, v in feeds.items()],
                     [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], 13)
    if op == "NegativeLogLikelihoodLoss" and ignore == -1 and not weighted and reduction == "mean":
        # The reference averages over every element here, the ignored ones too (its `ignore_index != -1`
        # branch); the operator's definition, its function body and PyTorch average over the others.
        picked = -np.take_along_axis(x, np.expand_dims(np.maximum(target, 0), 1), axis=1)[:, 0]
        want = picked[target != ignore].mean()
        for backend, passes in CONFIGS:
            got = friction.compile(model.SerializeToString(), backend, passes=passes).run(x, target)[0]
            np.testing.assert_allclose(got, want, rtol=1e-5)
        return
    check_against_reference(model, feeds)


@pytest.mark.parametrize("rank,interleaved,dim,positions", list(itertools.product([3, 4], [0, 1], [0, 4], [True, False])))
def test_rotary_embedding_matches_the_reference(rank, interleaved, dim, positions):
    rng = np.random.default_rng(11)
    batch, seq, heads, size = 2, 3, 2, 8
    x = rng.standard_normal((batch, seq, heads * size) if rank == 3 else (batch, heads, seq, size)).astype(np.float32)
    half = (dim or size) // 2
    cache = (16, half) if positions else (batch, seq, half)
    feeds = {"x": x, "cos": rng.standard_normal(cache).astype(np.float32), "sin": rng.standard_normal(cache).astype(np.float32)}
    if positions:
        feeds["pos"] = rng.integers(0, 16, (batch, seq)).astype(np.int64)
    attrs = {"interleaved": interleaved, "rotary_embedding_dim": dim} | ({"num_heads": heads} if rank == 3 else {})
    node = helper.make_node("RotaryEmbedding", list(feeds), ["y"], **attrs)
    elem = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}
    model = model_of(node, [tensor_info(k, elem[v.dtype], v.shape) for k, v in feeds.items()],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], 23)
    check_against_reference(model, feeds)


@pytest.mark.parametrize("axes", [None, [1], [0, 2]])
def test_mean_variance_normalization_matches_the_reference(axes):
    x = np.random.default_rng(12).standard_normal((2, 3, 4, 5)).astype(np.float32) * 3 + 1
    node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"], **({"axes": axes} if axes else {}))
    model = model_of(node, [tensor_info("x", TensorProto.FLOAT, x.shape)],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], 13)
    check_against_reference(model, {"x": x})


@pytest.mark.parametrize("name", ["resnet_basic", "mobilenet_v2", "efficientnet", "bert"])
def test_half_precision_models_compile_whole(name, tmp_path):
    """Torch fixtures converted to f16 by onnxruntime's converter run on cpu with no interpreter node (each op
    on f32 values, its result rounded as the interpreter rounds it), within f16 precision of the interpreter;
    with the default passes (widen-half first) the convolutions are the f32 model's NHWC ones, rounding in their
    epilogues (a SiLU's too, its rounded sigmoid included)."""
    import logging
    import os

    from onnxruntime.transformers.float16 import convert_float_to_float16

    logging.disable(logging.WARNING)
    folder = os.path.join(os.path.dirname(__file__), "..", "models", "torch", name)
    path = str(tmp_path / "f16.onnx")
    onnx.save(convert_float_to_float16(onnx.load(os.path.join(folder, "model.onnx")), keep_io_types=False), path)
    model = friction.load(path)
    feeds = [numpy_helper.to_array(onnx.load_tensor(os.path.join(folder, "test_data_set_0", f"input_{k}.pb")))
             for k in range(len(model.inputs))]
    feeds = [f.astype(np.float16) if f.dtype == np.float32 else f for f in feeds]
    batch = feeds[0].shape[0]
    want = friction.compile(path, "interp", batch=batch).run(*feeds)[0].astype(np.float32)
    for passes in (None, ["none"]):
        cpu = friction.compile(path, "cpu", batch=batch, passes=passes)
        got = cpu.run(*feeds)[0]
        assert got.dtype == np.float16 and cpu.interp_nodes == 0, cpu.executor
        if passes is None:  # NHWC, the rounding in the convolutions' epilogues
            assert "nchw" not in cpu.executor, cpu.executor
            assert name == "bert" or "+ round f16" in cpu.executor, cpu.executor
            assert name != "efficientnet" or "+ silu (gate rounded) + round f16" in cpu.executor, cpu.executor
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=0, atol=4e-3 * float(np.abs(want).max()))
