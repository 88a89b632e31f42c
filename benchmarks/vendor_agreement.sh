#!/usr/bin/env bash
# Does a vendor bridge measure what the vendor's own tool measures? For each bridge whose
# package the project venv imports, in the same run: `friction bench` on the exported model
# (median, timed inside the worker) and the vendor's benchmark tool on the same ONNX file with
# the same threads and batch, then a table of the two medians and their ratio.
#   ort       reference: a minimal Python loop around InferenceSession.run (the pip wheel ships
#             no onnxruntime_perf_test; its onnxruntime_test script reports only a mean)
#   openvino  reference: benchmark_app -hint latency -api sync -nireq 1 -nthreads T -infer_precision f32
#   iree      reference: iree-benchmark-module on a .vmfb compiled with the bridge's own flags
#             (iree_worker.compile_flags), local-task driver, --task_topology_max_group_count=T
#   tvm       reference: the Relax VM's time_evaluator (TVM's pip wheel has no benchmark CLI)
# Usage: benchmarks/vendor_agreement.sh [FRICTION_BINARY]
#   env: MODEL (default zoo:resnet?preset=resnet50), BATCH (1), THREADS (2), REPS (30), WARMUP (3),
#        BRIDGES (ort openvino iree tvm), ROUNDS (12; the confidence interval needs at least 6)
# Each round measures the bridge, then the tool, back to back; the table shows the median over rounds
# of each side's median and, as the verdict, the median of the per-round ratios (a paired estimate:
# each ratio compares two measurements taken under the same machine load, which on a shared machine
# moves both by 20-30% between rounds) with its distribution-free 95% confidence interval, a verdict
# against the 5% agreement band, and every round's pair in parentheses.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
F=${1:-$ROOT/build/bin/friction}
PY=$ROOT/.venv/bin/python
BIN=$ROOT/.venv/bin
MODEL=${MODEL:-zoo:resnet?preset=resnet50}
BATCH=${BATCH:-1} THREADS=${THREADS:-2} REPS=${REPS:-30} WARMUP=${WARMUP:-3}
BRIDGES=${BRIDGES:-ort openvino iree tvm} ROUNDS=${ROUNDS:-12}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

"$F" opt "$MODEL" --batch "$BATCH" --passes none -o "$T/model.onnx" > /dev/null 2>&1 \
  || { "$F" opt "$MODEL" --batch "$BATCH" --passes none -o "$T/model.onnx"; exit 1; }
echo "model $MODEL, batch $BATCH, $THREADS threads, $REPS reps after $WARMUP warm-up runs" >&2

bridge_median() {  # SPEC -> median ms of friction bench
  "$F" bench "$T/model.onnx" --backend "$1" --batch "$BATCH" --reps "$REPS" --warmup "$WARMUP" --passes none \
    --no-check --json | "$PY" -c 'import json,sys; j=json.load(sys.stdin); print(j["median_ms"]); print(j["executor"], file=sys.stderr)'
}

ort_tool() {
  "$PY" - "$T/model.onnx" "$THREADS" "$REPS" "$WARMUP" <<'PYEOF'
import sys, time, statistics, numpy as np, onnxruntime as ort
model, threads, reps, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
so = ort.SessionOptions(); so.intra_op_num_threads = threads; so.inter_op_num_threads = 1
s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
feeds = {i.name: np.random.rand(*i.shape).astype(np.float32) for i in s.get_inputs()}
for _ in range(warmup): s.run(None, feeds)
ts = []
for _ in range(reps):
    t0 = time.perf_counter(); s.run(None, feeds); ts.append((time.perf_counter() - t0) * 1e3)
print(statistics.median(ts))
PYEOF
}

openvino_tool() {
  # The bridge's own CPU properties (benchmark_app refuses -nthreads together with -hint).
  (cd "$ROOT/vendor_bridge/python" && "$PY" -c "import json, openvino_worker as w; print(json.dumps({'CPU': {k: str(v) for k, v in w.config_of({'threads': '$THREADS'}).items()}}))") > "$T/ov.json"
  "$BIN/benchmark_app" -m "$T/model.onnx" -d CPU -hint latency -api sync -nireq 1 -load_config "$T/ov.json" \
    -niter "$((REPS + WARMUP))" > "$T/ov.log" 2>&1 || { tail -5 "$T/ov.log" >&2; return 1; }
  awk '/Median:/ {print $(NF-1); exit}' "$T/ov.log"
}

iree_tool() {
  local flags fn
  if [[ ! -f "$T/model.vmfb" ]]; then
  flags=$(cd "$ROOT/vendor_bridge/python" && "$PY" -c "import iree_worker; print(' '.join(iree_worker.compile_flags({})))")
  "$BIN/iree-import-onnx" "$T/model.onnx" -o "$T/model.mlir"
  # shellcheck disable=SC2086
  "$BIN/iree-compile" "$T/model.mlir" --iree-input-type=onnx $flags -o "$T/model.vmfb"
  fi
  fn=$(sed -n 's/.*func.func @\([A-Za-z0-9_]*\)(.*/\1/p' "$T/model.mlir" | head -1)
  local shape
  shape=$("$PY" -c "import onnx; m=onnx.load('$T/model.onnx'); print('x'.join(str(d.dim_value) for d in m.graph.input[0].type.tensor_type.shape.dim))")
  "$BIN/iree-benchmark-module" --module="$T/model.vmfb" --device=local-task --function="$fn" \
    --input="${shape}xf32=0.5" --task_topology_max_group_count="$THREADS" \
    --benchmark_repetitions="$REPS" --benchmark_min_time=1x --benchmark_report_aggregates_only=true \
    > "$T/iree.log" 2>&1 || { tail -5 "$T/iree.log" >&2; return 1; }
  awk '/_median/ {for (i = 2; i <= NF; i++) if ($(i+1) == "ms") {print $i; exit}}' "$T/iree.log"
}

tvm_tool() {
  ( cd "$ROOT/vendor_bridge/python" && TVM_NUM_THREADS=$THREADS "$PY" - "$T/model.onnx" "$REPS" <<'PYEOF'
import sys, numpy as np, onnx, tvm
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx
model, reps = sys.argv[1], int(sys.argv[2])
m = onnx.load(model)
target = tvm.target.Target({"kind": "llvm", "mcpu": tvm.target.codegen.llvm_get_system_cpu()})
with tvm.transform.PassContext(opt_level=3):
    ex = tvm.compile(from_onnx(m, keep_params_in_input=False), target=target, relax_pipeline=relax.get_default_pipeline(target))
dev = tvm.cpu()
vm = relax.VirtualMachine(ex, dev)
shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
x = tvm.runtime.tensor(np.random.rand(*shape).astype(np.float32), dev)
r = vm.time_evaluator("main", dev, number=1, repeat=reps, min_repeat_ms=0)(x)
print(r.median * 1e3)
PYEOF
  )
}

printf "%-10s %12s %12s %8s  %-15s %s\n" bridge "bridge ms" "tool ms" ratio "95% CI" verdict
for b in $BRIDGES; do
  case $b in ort) mod=onnxruntime;; openvino) mod=openvino;; iree) mod=iree.runtime;; tvm) mod=tvm;; *) echo "unknown bridge $b" >&2; exit 1;; esac
  if ! "$PY" -c "import $mod" 2>/dev/null; then printf "%-10s %s\n" "$b" "skipped: the venv cannot import $mod"; continue; fi
  spec="$b?threads=$THREADS" bms=() tms=() rounds=""
  for ((r = 0; r < ROUNDS; r++)); do
    bm=$(bridge_median "$spec") || { bm=nan; echo "$b: bridge failed" >&2; }
    tm=$("${b}_tool") || { tm=nan; echo "$b: tool failed" >&2; }
    bms+=("$bm") tms+=("$tm") rounds+=" $(printf '%.1f/%.1f' "$bm" "$tm")"
  done
  "$PY" "$ROOT/benchmarks/report/paired_ratio.py" "$b" "${bms[*]}" "${tms[*]}" "$rounds"
done
