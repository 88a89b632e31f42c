#!/usr/bin/env bash
# End-to-end checks of the friction CLI as a user runs it: bad input gets a
# short error naming the culprit and exit code 1 (never a crash or a hang),
# and the main commands work on real files. Usage: cli_tests.sh FRICTION_BINARY
set -uo pipefail
F=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0 passes=0

# expect_error NAME PATTERN -- CMD...: exit code 1 and stderr matching PATTERN.
expect_error() {
  local name=$1 pattern=$2; shift 3
  local err rc
  err=$(timeout 60 "$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc -eq 1 && "$err" =~ $pattern ]]; then passes=$((passes + 1))
  else echo "FAIL $name: exit $rc, stderr: $err"; fails=$((fails + 1)); fi
}
# expect_ok NAME PATTERN -- CMD...: exit 0 and stdout matching PATTERN.
expect_ok() {
  local name=$1 pattern=$2; shift 3
  local out rc
  out=$(timeout 300 "$@" 2>&1); rc=$?
  if [[ $rc -eq 0 && "$out" =~ $pattern ]]; then passes=$((passes + 1))
  else echo "FAIL $name: exit $rc, output: ${out:0:400}"; fails=$((fails + 1)); fi
}

NODE=/usr/share/libonnx-testdata/data/node
: > "$T/empty.onnx"
head -c 3000 /dev/urandom > "$T/random.onnx"
head -c 100 "$NODE/test_conv_with_strides_padding/model.onnx" > "$T/truncated.onnx"
mkdir -p "$T/dir.onnx"

expect_error missing-file "missing.onnx.*No such file" -- "$F" inspect "$T/missing.onnx"
expect_error empty-file "empty.onnx: file is empty" -- "$F" inspect "$T/empty.onnx"
expect_error random-bytes "random.onnx" -- "$F" inspect "$T/random.onnx"
expect_error truncated "truncated.onnx" -- "$F" run "$T/truncated.onnx"
expect_error directory "not a regular file" -- "$F" inspect "$T/dir.onnx"
expect_error bad-zoo-arch "unknown zoo architecture 'nope'" -- "$F" inspect "zoo:nope"
expect_error bad-zoo-knob "unknown knob 'depht'" -- "$F" inspect "zoo:resnet?depht=2"
expect_error bad-backend "unknown backend 'warp'" -- "$F" run "zoo:mlp" --backend warp
expect_error bad-pass "unknown pass 'fold-everything'" -- "$F" opt "zoo:mlp" --disable fold-everything
expect_error missing-inputs "input_0.pb" -- "$F" run "$NODE/test_relu/model.onnx" --inputs "$T"
expect_error wrong-input-shape "input 'x' has shape" -- "$F" run "$NODE/test_relu/model.onnx" --inputs "$NODE/test_conv_with_strides_padding/test_data_set_0"
expect_error bad-fir "bad.fir:1:" -- bash -c "echo 'graph \"g\" opset 17 { input %x : q9[1] }' > '$T/bad.fir' && '$F' inspect '$T/bad.fir'"

expect_error batch-zero "--batch: must be positive, got 0" -- "$F" run "zoo:mlp" --batch 0
expect_error batches-zero "--batches: must be positive, got 0" -- "$F" ablate "zoo:mlp" --batches 1,0
expect_error huge-dim-fir "huge.fir:2:.*dimension 5555555555555553 is too large" -- bash -c \
  "printf 'graph \"g\" opset 17 {\n  input %%x : i64[5555555555555553]\n}\n' > '$T/huge.fir' && '$F' run '$T/huge.fir'"

# A static output larger than this machine's memory is refused by name on every executor, before anything is
# allocated for it (runtime/MemoryLimit.h): an Expand to [100000,100000,100000] (4e15 bytes).
printf 'graph "g" opset 17 {\n  input %%x : f32[1]\n  const %%s : i64[3] = hex"%s"\n  %%y : f32[100000,100000,100000] = Expand(%%x, %%s) @"e"\n  output %%y\n}\n' \
  a086010000000000a086010000000000a086010000000000 > "$T/expand.fir"
for backend in interp cpu halide; do
  expect_error "output-larger-than-memory-$backend" "Expand 'e': output 'y' f32\[100000,100000,100000\] takes 4e\+15 bytes, more than this machine's" -- "$F" run "$T/expand.fir" --backend "$backend"
done

expect_ok inspect "FLOPs" -- "$F" inspect "zoo:resnet?depth=2&width=8&resolution=16"
expect_ok inspect-json '"parameters"' -- "$F" inspect "zoo:mlp" --json
expect_ok run-json '"outputs"' -- "$F" run "zoo:mlp" --batch 3 --json
expect_ok run-says-what-ran "0 nodes on interp fallback" -- "$F" run "zoo:mlp" --backend cpu
expect_ok run-test-data "output_0|min" -- "$F" run "$NODE/test_conv_with_strides_padding/model.onnx" --inputs "$NODE/test_conv_with_strides_padding/test_data_set_0" --outputs "$T/out"
expect_ok outputs-written "output_0.pb" -- ls "$T/out"
expect_ok zoo-list "^resnet" -- "$F" zoo list
expect_ok zoo-export "wrote" -- "$F" zoo export resnet --depth 2 --width 8 --resolution 16 -o "$T/r.onnx"
expect_ok reimport "input : f32\[1,3,16,16\]" -- "$F" inspect "$T/r.onnx"
expect_ok opt-fir "wrote" -- "$F" opt "$T/r.onnx" -o "$T/r.fir"
expect_ok run-fir "batch 2" -- "$F" run "$T/r.fir" --batch 2
expect_ok conformance-line "^[0-9]+ passed, 0 failed, [0-9]+ skipped$" -- bash -c "'$F' conformance '$NODE' --filter '^test_(relu|conv_with_strides_padding)\$' | tail -1"
# run --inputs binds the symbolic batch from the tensors: batch-2 outputs of an identity-shaped model fed back.
printf 'graph "g" opset 17 {\n  input %%x : f32[N,4]\n  %%y : f32[N,4] = Relu(%%x) @"r"\n  output %%y\n}\n' > "$T/relu.fir"
expect_ok run-writes-batch-2 "batch 2" -- "$F" run "$T/relu.fir" --batch 2 --outputs "$T/b2"
mv "$T/b2/output_0.pb" "$T/b2/input_0.pb" 2>/dev/null
expect_ok run-inputs-bind-batch "batch 2: .* y f32\[2,4\]" -- bash -c "'$F' run '$T/relu.fir' --inputs '$T/b2' | tr '\n' ' '"
expect_error run-inputs-batch-conflict "input 'x' has shape \[2,4\], model expects \[3,4\]" -- "$F" run "$T/relu.fir" --inputs "$T/b2" --batch 3
# Pictures of the graph (Graphviz): fused regions as clusters naming the nodes they replaced.
expect_ok opt-dot "subgraph cluster_.*label=\"region epilogue.nfrom: stem.conv" -- bash -c \
  "'$F' opt 'zoo:resnet?depth=2&width=8&resolution=16' --batch 1 --dot '$T/r.dot' 2>/dev/null; tr '\n' ' ' < '$T/r.dot'"
expect_ok opt-dot-before "label=\"BatchNormalization" -- bash -c \
  "'$F' opt 'zoo:resnet?depth=2&width=8&resolution=16' --batch 1 --before --dot '$T/rb.dot' 2>/dev/null; cat '$T/rb.dot'"
expect_ok opt-svg "<svg" -- bash -c "'$F' opt 'zoo:mlp' --svg '$T/m.svg' 2>/dev/null && head -c 2000 '$T/m.svg'"

expect_ok conformance-json-is-one-document "^json ok 2$" -- bash -c "'$F' conformance '$NODE' --filter '^test_(relu|conv_with_strides_padding)\$' --json 2>/dev/null | python3 -c 'import json, sys; d = json.load(sys.stdin); print(\"json ok\", d[\"passed\"])'"
expect_ok passes "eliminate-dead-code" -- "$F" passes
expect_ok bench "median .* ms" -- "$F" bench "zoo:mlp" --reps 5 --warmup 1
expect_ok bench-json "\"samples_ms\"" -- "$F" bench "zoo:mlp" --reps 3 --json
expect_ok bench-json-interp-nodes "\"interp_nodes\": 0," -- "$F" bench "zoo:resnet?depth=2&width=8&resolution=16" --backend cpu --passes none --reps 3 --json
expect_ok bench-json-interp-nodes-interp "\"interp_nodes\": [1-9]" -- "$F" bench "zoo:mlp" --backend interp --reps 3 --json
expect_ok bench-profile "profile over 3 runs after the first: .* conv nhwc .* compiled Gemm .* compile per kernel" -- bash -c "'$F' bench 'zoo:resnet?depth=2&width=8&resolution=16' --backend 'cpu?profile=on&compile=each' --reps 3 --warmup 1 | tr '\n' ' '"

# Ablation into a store, then the report: every figure must be an inline PNG that decodes.
expect_ok ablate "measurements stored" -- "$F" ablate "zoo:mlp?depth=2" --batches 1,2 --mode shapley --over fold-constants,eliminate-dead-code --reps 3 --warmup 1 --db "$T/r.db"
expect_ok ablate-resume "stored" -- "$F" ablate "zoo:mlp?depth=2" --batches 1,2 --mode shapley --over fold-constants,eliminate-dead-code --reps 3 --warmup 1 --db "$T/r.db" --resume
expect_ok ablate-aa-control "A/A control \(all-on compiled twice\): ratio [0-9.]+, 95% CI" -- "$F" ablate "zoo:mlp?depth=2" --batches 1 --over fold-constants --reps 3 --rounds 4 --db "$T/aa.db"
expect_ok ablate-json-intervals '"attribution_ci_ms"' -- bash -c "'$F' ablate 'zoo:mlp?depth=2' --batches 1 --over fold-constants --reps 3 --rounds 4 --db '$T/aa.db' --json 2>/dev/null"
expect_ok bench-compare "cpu\|all-off .*ratio to first" -- bash -c "'$F' bench 'zoo:mlp' --backend cpu --compare 'cpu|all-off' --rounds 3 2>/dev/null | tr '\n' ' '"
# --json gives each executor's per-round block medians (benchmarks/e2e_vs_ort.sh's samples), one per kept round,
# and each round's machine state (a positive memory bandwidth).
"$F" bench 'zoo:mlp' --backend cpu --compare 'cpu|all-off' --rounds 3 --json > "$T/compare.json" 2>/dev/null
expect_ok bench-compare-round-values "^3 3 3 3 True$" -- python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
print(j["rounds"], *(len(e["round_ms"]) for e in j["executors"]), len(j["machine"]),
      all(m["memory_gbps"] > 0 for m in j["machine"]))' "$T/compare.json"
expect_error bench-compare-bad "--compare takes BACKEND\|CONFIG" -- "$F" bench "zoo:mlp" --backend cpu --compare cpu
expect_error report-missing-db "does not exist" -- "$F" report --db "$T/none.db" -o "$T/x.html"
if [[ -x "$(dirname "$0")/../../.venv/bin/python" ]]; then
  expect_ok report "wrote" -- "$F" report --db "$T/r.db" -o "$T/report/report.html"
  expect_ok report-figures "figures ok: [1-9]" -- python3 -c "
import base64, re, sys
h = open('$T/report/report.html').read()
imgs = re.findall(r'src=\"data:image/png;base64,([^\"]+)\"', h)
assert imgs and all(base64.b64decode(d).startswith(b'\\x89PNG') for d in imgs)
print('figures ok:', len(imgs))"
  expect_ok report-csv "median_ms" -- head -1 "$T/report/report.csv"
  # Paths reach the renderer intact, whatever spaces or quotes they hold.
  Q="$T/it's a store"
  mkdir -p "$Q" && cp "$T/r.db" "$Q/r.db"
  expect_ok report-quoted-paths "wrote .*it's a store/out put/report.html" -- "$F" report --db "$Q/r.db" -o "$Q/out put/report.html"
  if command -v chromium >/dev/null; then
    # Every figure must render in a real browser: the page reports loaded/total images.
    expect_ok report-renders-in-chromium 'data-figures="([1-9][0-9]*)/\1"' -- timeout 120 chromium --headless \
      --no-sandbox --disable-gpu --virtual-time-budget=10000 --dump-dom "file://$T/report/report.html"
    # The main job in miniature (scripts/demo.sh: a sweep with depths, batches and executors, plus an ablation):
    # no section of its report may be empty; a screenshot shows the page rendered.
    cat > "$T/mini.toml" <<'TOML'
name = "mini"
models = ["zoo:mlp?width=16&inputs=16", "zoo:resnet?width=8&resolution=16"]
depths = [1, 2]
batches = [1, 2]
executors = [{ backend = "cpu", config = "all-off" }, { backend = "cpu", config = "default" }]
rounds = 4
min_rounds = 3
max_seconds = 0.1
aa_control = true
TOML
    expect_ok mini-study "measured" -- "$F" sweep "$T/mini.toml" --db "$T/mini.db"
    expect_ok mini-ablate "stored" -- "$F" ablate "zoo:mlp?depth=2&width=16&inputs=16" --batches 1,2 --over fold-constants,fuse-epilogues --rounds 4 --db "$T/mini.db"
    expect_ok mini-report "wrote" -- "$F" report --db "$T/mini.db" -o "$T/mini/report.html"
    expect_ok mini-report-no-empty-section 'data-figures="([1-9][0-9]*)/\1" data-sections="1[0-9]" data-empty="0"' -- bash -c \
      "timeout 120 chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=10000 --dump-dom 'file://$T/mini/report.html' 2>/dev/null | grep -o 'data-figures=.*data-empty=\"[0-9]*\"'"
    expect_ok mini-report-findings "<h2>Findings</h2><ul><li><b>Protocol</b>.*<b>Passes</b>" -- cat "$T/mini/report.html"
    expect_ok mini-report-screenshot "^[1-9][0-9]{4,}$" -- bash -c \
      "timeout 120 chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=10000 --window-size=1280,6000 --screenshot='$T/mini/report.png' 'file://$T/mini/report.html' >/dev/null 2>&1; stat -c %s '$T/mini/report.png'"
  else
    echo "SKIP report-renders-in-chromium: chromium not installed (scripts/setup.sh installs it)"
  fi
else
  echo "SKIP report: no project venv (scripts/setup.sh creates it)"
fi

# A sweep killed mid-way keeps every committed group (its cells are committed together); --resume measures only
# the rest.
cat > "$T/sweep.toml" <<'TOML'
name = "kill-test"
models = ["zoo:resnet?width=8&resolution=32"]
depths = [1, 2, 3, 4]
batches = [1, 2, 4]
configs = ["all-off", "default"]
rounds = 5
block_ms = 20.0
warmup = 2
TOML
"$F" sweep "$T/sweep.toml" --db "$T/sweep.db" 2> "$T/sweep.log" &
pid=$!
# Waits up to 3 minutes: under CI's parallel tests on 2 cores, the first two groups' compiles alone have taken
# more than 20 s.
for _ in $(seq 1 1800); do
  rows=$(sqlite3 "$T/sweep.db" "select count(*) from measurements" 2>/dev/null || echo 0)
  [[ "${rows:-0}" -ge 3 ]] && break
  sleep 0.1
done
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
kept=$(sqlite3 "$T/sweep.db" "select count(*) from measurements")
expect_ok sweep-killed-keeps-rows "^ok$" -- bash -c "[[ $kept -ge 3 && $kept -lt 24 && \$(( $kept % 2 )) == 0 ]] && [[ \$(sqlite3 '$T/sweep.db' 'pragma integrity_check') == ok ]] && echo ok || echo 'kept $kept rows (want an even count in [3, 24))'"
expect_ok sweep-resume "$((24 - kept)) cells measured, $((kept / 2)) groups already stored" -- "$F" sweep "$T/sweep.toml" --db "$T/sweep.db" --resume
expect_ok sweep-shard "\(2 in this shard\)" -- bash -c "'$F' sweep '$T/sweep.toml' --db '$T/shard.db' --shard 1/6 2>&1"
expect_ok merge "merged 2 file" -- "$F" merge "$T/merged.db" "$T/sweep.db" "$T/shard.db"
expect_error sweep-bad-spec "unknown key 'modles'" -- bash -c "printf 'modles = []\n' > '$T/bad.toml' && '$F' sweep '$T/bad.toml' --db '$T/bad.db'"
# --dry-run lists the cells and their count without measuring or creating the store; `executors` pairs a
# backend with a configuration instead of the backends x configs product.
expect_ok sweep-dry-run "^zoo:resnet\?width=8&resolution=32&depth=1 interp batch 1 all-off.*24 cells in 12 groups \(12 cells, 6 groups in this shard\), dry run" -- bash -c "'$F' sweep '$T/sweep.toml' --db '$T/dry.db' --dry-run --shard 0/2 | tr '\n' ' ' && [[ ! -e '$T/dry.db' ]]"
cat > "$T/executors.toml" <<'TOML'
models = ["zoo:mlp?width=8&inputs=8"]
depths = [1, 2]
batches = [1, 4]
executors = [{ backend = "interp", config = "all-off" }, { backend = "cpu", config = "default" }, { backend = "cpu" }]
TOML
expect_ok sweep-executors "depth=2 cpu batch 4 default .*12 cells" -- bash -c "'$F' sweep '$T/executors.toml' --dry-run | tr '\n' ' '"
expect_error sweep-executors-with-backends "'executors' replaces 'backends'" -- bash -c "printf 'backends = [\"cpu\"]\n' >> '$T/executors.toml' && '$F' sweep '$T/executors.toml' --dry-run"
expect_error sweep-bad-backend-option "unknown option 'lvl'" -- bash -c "printf 'models = [\"zoo:mlp\"]\nexecutors = [{ backend = \"ort?lvl=1\" }]\n' > '$T/badex.toml' && '$F' sweep '$T/badex.toml' --dry-run"
# A cell that fails (here: a bridge whose Python cannot start) is reported and skipped; the other cells are
# measured and stored, and the sweep exits 1 naming the failure.
printf 'models = ["zoo:mlp?width=8&inputs=8"]\nreps = 3\nwarmup = 1\nexecutors = [{ backend = "ort" }, { backend = "interp" }]\n' > "$T/failing.toml"
expect_error sweep-failed-cell-skipped "1 cell\(s\) failed and were not stored.*zoo:mlp.* ort batch 1 default" -- env FRICTION_PYTHON=/nonexistent/python "$F" sweep "$T/failing.toml" --db "$T/failing.db"
expect_ok sweep-failed-cell-others-stored "^interp$" -- sqlite3 "$T/failing.db" "select backend from measurements"
if [[ -x "$(dirname "$0")/../../.venv/bin/python" ]]; then  # a store with one batch per series (no batch metrics)
  expect_ok report-single-batch "wrote" -- "$F" report --db "$T/failing.db" -o "$T/single/report.html"
fi
# The study's specs parse and have the documented cell counts (docs/study.md).
expect_ok study-spec "960 cells" -- "$F" sweep "$(dirname "$0")/../../benchmarks/specs/compiler-study.toml" --dry-run
expect_ok study-small-spec "360 cells" -- "$F" sweep "$(dirname "$0")/../../benchmarks/specs/compiler-study-small.toml" --dry-run

# Ahead-of-time artifacts (`friction compile`, docs/codegen.md): the .so runs without recompiling, gives the
# JIT cpu backend's outputs, and bad artifacts get a clear message and exit 1.
AOT_M="zoo:resnet?depth=2&width=8&resolution=16"
expect_ok aot-compile "wrote .*r\.so: .* kernels, batch 2" -- "$F" compile "$AOT_M" --batch 2 -o "$T/aot/r.so"
expect_ok aot-run "load .*no MLIR/LLVM work.*distinct kernels loaded, 0 compiled" -- "$F" run "$T/aot/r.so"
expect_ok aot-run-json '"kernels_compiled": 0' -- bash -c "'$F' run '$T/aot/r.so' --json > '$T/aot/so.json' && cat '$T/aot/so.json'"
expect_ok aot-jit-json '"outputs"' -- bash -c "'$F' run '$AOT_M' --batch 2 --backend cpu --json > '$T/aot/jit.json' && cat '$T/aot/jit.json'"
expect_ok aot-matches-jit "^match$" -- python3 -c "
import json, sys
a, b = (json.load(open(p))['outputs'] for p in sys.argv[1:3])
ok = len(a) == len(b) and all(x['shape'] == y['shape'] and all(abs(u - v) <= 1e-5 * max(1.0, abs(v))
     for u, v in zip([x['min'], x['max'], x['mean']] + x['first'], [y['min'], y['max'], y['mean']] + y['first'])) for x, y in zip(a, b))
print('match' if ok else 'differ: %s vs %s' % (a, b))" "$T/aot/so.json" "$T/aot/jit.json"
expect_ok aot-run-outputs "output_0.pb" -- bash -c "'$F' run '$T/aot/r.so' --outputs '$T/aot/out' >/dev/null && ls '$T/aot/out'"
expect_ok aot-backend-form "batch 2" -- "$F" run "$T/aot/r.so" --backend "cpu?aot=$T/aot/r.so"
expect_ok aot-graph-on-interp "on interp, batch 2" -- "$F" run "$T/aot/r.so" --backend interp
expect_ok aot-inspect "FLOPs" -- "$F" inspect "$T/aot/r.so"
expect_ok aot-bench "median .* ms" -- "$F" bench "$T/aot/r.so" --reps 3 --warmup 1
expect_error aot-missing "missing\.so.*No such file" -- "$F" run "$T/aot/missing.so"
expect_error aot-not-elf "not-elf\.so' is not a friction artifact" -- bash -c "echo hello > '$T/aot/not-elf.so' && '$F' run '$T/aot/not-elf.so'"
expect_error aot-foreign-so "is not a friction artifact" -- "$F" run /usr/lib/llvm-19/lib/libmlir_c_runner_utils.so
expect_error aot-wrong-cpu "compiled for a different CPU .*this CPU lacks" -- env FRICTION_AOT_HOST_FEATURES=sse,sse2 "$F" run "$T/aot/r.so"
expect_error aot-wrong-batch "compiled for batch 2, not 3" -- "$F" run "$T/aot/r.so" --batch 3
expect_error aot-passes-fixed "passes were fixed" -- "$F" run "$T/aot/r.so" --disable fuse-epilogues
expect_error aot-bad-output "must be a shared library path ending in .so" -- "$F" compile "$AOT_M" -o "$T/aot/r.onnx"

# The cuda target (docs/codegen.md, "The GPU path"): every distinct kernel to PTX with its launches; the cuda
# backend without a driver says so in one line and exits 1.
expect_ok cuda-compile "wrote .*ptx: [0-9]+ kernels as PTX for sm_80 \(0 failed\), [0-9]+ kernel calls = [0-9]+ launches" -- \
  "$F" compile "$AOT_M" --backend cuda --gpu-chip sm_80 --emit-ptx "$T/ptx"
expect_ok cuda-ptx-files "^ok$" -- python3 -c "
import json, os, sys
d = sys.argv[1]; m = json.load(open(os.path.join(d, 'kernels.json')))
ok = m['chip'] == 'sm_80' and m['kernels'] and all(os.path.exists(os.path.join(d, k['ptx'])) and k['launches'] for k in m['kernels'])
ok = ok and all(open(os.path.join(d, k['ptx'])).read().count('.entry ') == len({l['function'] for l in k['launches']}) for k in m['kernels'])
print('ok' if ok else 'bad manifest: %s' % m)" "$T/ptx"
expect_ok cuda-compile-json '"failed_kernels": 0' -- "$F" compile "$AOT_M" --backend cuda --emit-ptx "$T/ptx90" --json
expect_error cuda-run-no-driver "^friction: error: backend cuda: no CUDA driver on this machine \(" -- \
  env FRICTION_LIBCUDA=/nonexistent/libcuda.so.1 "$F" run zoo:mlp --backend cuda
# The plan the cuda backend runs, with seeded inputs and the interpreter's outputs; friction-cuda-run loads
# it and, without a driver, says so in one line.
expect_ok cuda-plan "plan: arena [0-9.]+ MB .* moved between kernels a run" -- \
  "$F" compile "$AOT_M" --backend cuda --disable convert-layout -o "$T/plan" --reference
expect_ok cuda-plan-files "^ok$" -- python3 -c "
import json, os, sys
d = sys.argv[1]; p = json.load(open(d + '/plan.json'))
assert p['format'] == 'friction-cuda-plan 1' and p['calls'] and p['inputs'] and p['outputs'], p.keys()
for k in p['kernels']: assert os.path.getsize(d + '/' + k['ptx']) > 0
assert os.path.getsize(d + '/input_0.bin') == p['inputs'][0]['bytes']
assert os.path.getsize(d + '/expected_0.bin') == p['outputs'][0]['bytes']
print('ok')" "$T/plan"
expect_error cuda-run-plan-no-driver "^friction-cuda-run: backend cuda: no CUDA driver on this machine \(" -- \
  env FRICTION_LIBCUDA=/nonexistent/libcuda.so.1 "$(dirname "$F")/friction-cuda-run" "$T/plan"
expect_error cuda-run-not-a-plan "is not a folder" -- "$(dirname "$F")/friction-cuda-run" "$T/nowhere"
expect_ok cuda-plan-default-pipeline "0 failed" -- "$F" compile "$AOT_M" --backend cuda -o "$T/plan2"
expect_error cuda-compile-no-dir "needs -o DIR .* or --emit-ptx DIR" -- "$F" compile "$AOT_M" --backend cuda
expect_error reference-on-cpu "--reference needs --backend cuda" -- "$F" compile "$AOT_M" -o "$T/c.so" --reference
expect_error emit-ptx-on-cpu "--emit-ptx needs --backend cuda" -- "$F" compile "$AOT_M" -o "$T/c.so" --emit-ptx "$T/x"
expect_error cpu-bad-target "target must be cpu or cuda-nests" -- "$F" run zoo:mlp --backend 'cpu?target=rocm'
expect_error cpu-bad-gpu-block "gpu-block must be a thread count from 1 to 1024" -- "$F" run zoo:mlp --backend 'cpu?target=cuda-nests&gpu-block=0'
expect_error gpu-block-on-cpu "gpu-block needs target=cuda-nests" -- "$F" run zoo:mlp --backend 'cpu?gpu-block=64'
expect_error cpu-bad-thread-outputs "gpu-thread-outputs must be a power of 2 from 1 to 64, got '3'" -- \
  "$F" run zoo:mlp --backend 'cpu?target=cuda-nests&gpu-thread-outputs=3'
expect_error cpu-bad-thread-columns "gpu-thread-columns must be a power of 2 from 1 to 64, got '0'" -- \
  "$F" run zoo:mlp --backend 'cpu?target=cuda-nests&gpu-thread-columns=0'
expect_error cuda-bad-thread-columns "--gpu-thread-columns must be a power of 2 from 1 to 64, got '12'" -- \
  "$F" compile "$AOT_M" --backend cuda --emit-ptx "$T/x" --gpu-thread-columns 12
expect_error cuda-cpu-stage "stage 'ukernels' is not in the cuda pipeline" -- \
  "$F" compile "$AOT_M" --backend cuda --emit-ptx "$T/x" --stage ukernels=off
expect_error cuda-stage-without-value "a stage switch is NAME=on\\|off, got 'gpu-shared'" -- \
  "$F" compile "$AOT_M" --backend cuda --emit-ptx "$T/x" --stage gpu-shared
expect_error cuda-stage-on-cpu "backend cpu: stage 'gpu-shared' is not in the cpu pipeline" -- "$F" run zoo:mlp --backend 'cpu?gpu-shared=on'
expect_error cuda-bad-shared-columns "--gpu-shared-columns must be a power of 2 from 1 to 64, got '0'" -- \
  "$F" compile "$AOT_M" --backend cuda --emit-ptx "$T/x" --gpu-shared-columns 0
expect_error shared-columns-on-cpu "gpu-shared-columns needs target=cuda-nests" -- \
  "$F" run zoo:mlp --backend 'cpu?gpu-shared-columns=2'
expect_ok cuda-shared-tiles "0 failed" -- "$F" compile "$AOT_M" --backend cuda --emit-ptx "$T/shared" \
  --stage gpu-shared=on,contract=off --gpu-shared-columns 2 --gpu-coarsen-min-threads 1
expect_error coarsen-min-threads-on-cpu "gpu-coarsen-min-threads needs target=cuda-nests" -- \
  "$F" run zoo:mlp --backend 'cpu?gpu-coarsen-min-threads=64'
expect_error cuda-bad-thread-outputs "--gpu-thread-outputs must be a power of 2 from 1 to 64, got '6'" -- \
  "$F" compile "$AOT_M" --backend cuda --emit-ptx "$T/x" --gpu-thread-outputs 6
expect_ok cuda-nests-naive-contractions "max abs error" -- \
  "$F" bench "$AOT_M" --reps 2 --warmup 1 --backend 'cpu?target=cuda-nests&gpu-coarsen=off'
expect_error cuda-ukernels "--ukernels is a cpu option" -- "$F" compile "$AOT_M" --backend cuda --emit-ptx "$T/x" --ukernels off
expect_ok cuda-nests-bench "cuda's loop nests on the host \(64-thread blocks\).*max abs error" -- \
  "$F" bench "$AOT_M" --reps 2 --warmup 1 --backend 'cpu?target=cuda-nests&gpu-block=64'

# The ONNX Runtime bridge, when the project venv has onnxruntime.
VENV_PY="$(dirname "$0")/../../.venv/bin/python"
if [[ -x "$VENV_PY" ]] && "$VENV_PY" -c "import onnxruntime" 2>/dev/null; then
  expect_ok ort-run "on ort, batch 2" -- "$F" run "zoo:resnet?depth=2&width=8&resolution=16" --backend ort --batch 2
  # Every zoo archetype, exported to ONNX, must give ONNX Runtime the interpreter's outputs (1e-4 relative to scale).
  for spec in "resnet?depth=2&width=8&resolution=16" "resnet?depth=2&width=8&resolution=32&block=bottleneck" \
              "mobilenetv2?depth=2&width=8&resolution=16" "convnext?depth=2&width=16&resolution=32" \
              "vit?depth=2&width=16&resolution=16&patch=8&heads=2" "mixer?depth=2&width=16&resolution=16&patch=8" "mlp?depth=2"; do
    expect_ok "ort-matches-interp:$spec" "max rel error ([0-9.]+e-(0[5-9]|[1-9][0-9])|0)$" -- bash -c \
      "'$F' bench 'zoo:$spec' --backend 'ort?threads=2' --batch 2 --reps 3 --warmup 1 --passes none | grep 'max rel error' | sed 's/ *$//'"
  done
  expect_ok ort-levels "onnxruntime .*disabled" -- "$F" bench "zoo:mlp" --backend "ort?level=disabled" --reps 3
  # The thread count the session reports back, not only the one asked for; --threads reaches the bridge.
  expect_ok ort-threads-read-back "threads used: 1 intra-op" -- "$F" bench "zoo:mlp" --backend ort --threads 1 --reps 3
  expect_ok ort-conformance "^[0-9]+ passed, 0 failed" -- bash -c "'$F' conformance /usr/share/libonnx-testdata/data/node --backend ort --filter '^test_(conv_|relu|gemm|maxpool_2d|softmax_axis|reshape_|slice)' | tail -1"
  expect_error ort-bad-option "unknown option 'lvl'" -- "$F" run "zoo:mlp" --backend "ort?lvl=1"
  expect_ok ort-ablates-its-own-optimizers "ConstantFolding .*LayerNormFusion" -- bash -c "'$F' ablate 'zoo:vit?depth=1&width=16&resolution=16&patch=8&heads=2' --backend ort --batches 1 --over ConstantFolding,LayerNormFusion --reps 3 --warmup 1 --db '$T/ort.db' 2>/dev/null | tr '\n' ' '"
  expect_error ort-unknown-switch "not a switch of backend ort" -- "$F" ablate "zoo:mlp" --backend ort --over fold-constants --db "$T/ort.db"
else
  echo "SKIP ort bridge: the project venv has no onnxruntime (scripts/setup.sh installs it)"
fi

# The other Python-worker bridges (openvino, iree, tvm), each when the project venv imports
# its package: run, outputs vs the interpreter on several archetypes (1e-4 relative to scale),
# the vendor's version in the executor description, and a clear error for an unknown option.
# IREE 3.13 cannot compile a stride-2 Conv from 2x2 to 1x1 (resnet at resolution 16), hence 32.
BRIDGE_ARCHS=("resnet?depth=2&width=8&resolution=32" "mobilenetv2?depth=2&width=8&resolution=16"
              "vit?depth=2&width=16&resolution=16&patch=8&heads=2" "mixer?depth=2&width=16&resolution=16&patch=8")
bridge_tests() {  # NAME PYTHON_MODULE VENDOR_WORD SPEC_OPTIONS
  local b=$1 module=$2 vendor=$3 opts=$4
  if ! [[ -x "$VENV_PY" ]] || ! "$VENV_PY" -c "import $module" 2>/dev/null; then
    echo "SKIP $b bridge: the project venv cannot import $module (scripts/setup.sh installs vendor_bridge/python/requirements-vendors.txt)"
    return 1
  fi
  expect_ok "$b-run" "on $b, batch 2" -- "$F" run "zoo:resnet?depth=2&width=8&resolution=32" --backend "$b" --batch 2
  for spec in "${BRIDGE_ARCHS[@]}"; do
    expect_ok "$b-matches-interp:$spec" "$vendor [0-9][^ ]* .*max rel error ([0-9.]+e-(0[5-9]|[1-9][0-9])|0)$" -- bash -c \
      "'$F' bench 'zoo:$spec' --backend '$b?$opts' --batch 2 --reps 3 --warmup 1 --passes none | grep -E '  backend |max rel error' | tr '\n' ' ' | sed 's/ *$//'"
  done
  expect_error "$b-bad-option" "backend $b: unknown option 'lvl'" -- "$F" run "zoo:mlp" --backend "$b?lvl=1"
  expect_ok "$b-threads-read-back" "threads used: (--task_topology_max_group_count=)?1([^0-9]|$)" -- "$F" bench "zoo:mlp" --backend "$b" --threads 1 --reps 3
}
if bridge_tests openvino openvino openvino "threads=2&hint=latency"; then
  expect_error openvino-bad-hint "option hint must be one of latency, throughput" -- "$F" run "zoo:mlp" --backend "openvino?hint=fast"
  expect_error openvino-has-no-switches "unknown pass 'fold'" -- "$F" ablate "zoo:mlp" --backend openvino --over fold --db "$T/ov.db"
fi
if bridge_tests iree iree.runtime iree "threads=2&opt=O2"; then
  expect_error iree-unknown-switch "unknown switch 'fusion'" -- "$F" run "zoo:mlp" --backend "iree?disable=fusion"
  expect_ok iree-ablates-its-own-flags "const-eval" -- bash -c "'$F' ablate 'zoo:mlp' --backend 'iree?threads=2' --batches 1 --over const-eval --reps 3 --warmup 1 --db '$T/iree.db' 2>/dev/null | tr '\n' ' '"
fi
if bridge_tests tvm tvm.relax.frontend.onnx tvm "threads=2"; then
  expect_ok tvm-ablates-its-own-passes "FuseOps .*StaticPlanBlockMemory" -- bash -c "'$F' ablate 'zoo:mlp' --backend 'tvm?threads=2' --batches 1 --over FuseOps,StaticPlanBlockMemory --reps 3 --warmup 1 --db '$T/tvm.db' 2>/dev/null | tr '\n' ' '"
fi
# Without the vendor package the bridge says so (a Python without TVM stands in for a venv without it).
if command -v python3 >/dev/null && ! python3 -c "import tvm" 2>/dev/null; then
  expect_error tvm-missing-is-clear "tvm is not installed in .venv" -- env FRICTION_PYTHON="$(command -v python3)" "$F" run "zoo:mlp" --backend tvm
fi

# benchmarks/vendor_agreement.sh's verdict: the sign-test interval of the median per-round ratio against +-5%.
PAIRED="$(dirname "$0")/../../benchmarks/report/paired_ratio.py"
expect_ok agreement-within-band "1\.000  \[0\.990, 1\.010\] +agrees within 5%" -- python3 "$PAIRED" x "99 100 101 100 99 101 100 100 100 100" "100 100 100 100 100 100 100 100 100 100" ""
expect_ok agreement-outside-band "\[1\.190, 1\.210\] +differs by more than 5%" -- python3 "$PAIRED" x "120 121 119 120 120 120 121 119" "100 100 100 100 100 100 100 100" ""
expect_ok agreement-straddles-band "\[0\.900, 1\.100\] +inconclusive  \(rounds" -- python3 "$PAIRED" x "90 100 110 105 95 100 100 102" "100 100 100 100 100 100 100 100" ""
expect_ok agreement-too-few-rounds "n/a .*needs >= 6 rounds" -- python3 "$PAIRED" x "100 100 100 100 100" "100 100 100 100 100" ""
# benchmarks/e2e_vs_ort.sh's table: medians of per-round ratios over 6 rounds, with their intervals.
E2E_SAMPLES=$(mktemp)
for r in 0 1 2 3 4 5; do
  printf '%s\tresnet50\t1\tcpu\t%s\n%s\tresnet50\t1\tort\t10\n%s\tresnet50\t1\tbaseline\t%s\n' \
    "$r" "$((11 + r % 2))" "$r" "$r" "$((12 + r % 2))" >> "$E2E_SAMPLES"
done
expect_ok e2e-summary "resnet50 +1 +11\.50  1\.150 +\[1\.100, 1\.200\] +0\.920 +\[0\.917, 0\.923\]" -- \
  python3 "$(dirname "$0")/../../benchmarks/report/e2e_summary.py" "$E2E_SAMPLES"
rm -f "$E2E_SAMPLES"

# The tensorrt bridge needs a CUDA GPU and TensorRT (kept out of requirements-vendors.txt: see
# docs/vendor-mapping.md); without them it is compile-checked only and says clearly what is missing.
TRT_WORKER="$(dirname "$0")/../../vendor_bridge/python/tensorrt_worker.py"
expect_ok tensorrt-worker-compiles "^ok$" -- python3 -c "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True); print('ok')" "$TRT_WORKER" "$T/trt.pyc"
if [[ -x "$VENV_PY" ]] && "$VENV_PY" -c "import numpy" 2>/dev/null; then
  # The worker's code paths against stand-ins for TensorRT and cuda-python (no GPU needed).
  expect_ok tensorrt-worker-on-stubs "tensorrt worker stub: ok" -- "$VENV_PY" "$(dirname "$0")/tensorrt_worker_stub.py" "$(dirname "$TRT_WORKER")"
fi
expect_error tensorrt-bad-option "backend tensorrt: unknown option 'lvl'" -- "$F" run "zoo:mlp" --backend "tensorrt?lvl=1"
if [[ -x "$VENV_PY" ]] && "$VENV_PY" -c "import tensorrt" 2>/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU; then
  expect_ok tensorrt-run "on tensorrt, batch 2" -- "$F" run "zoo:resnet?depth=2&width=8&resolution=32" --backend tensorrt --batch 2
  expect_ok "tensorrt-matches-interp" "tensorrt [0-9][^ ]* .*max rel error ([0-9.]+e-(0[5-9]|[1-9][0-9])|0)$" -- bash -c \
    "'$F' bench 'zoo:resnet?depth=2&width=8&resolution=32' --backend 'tensorrt?tf32=off' --batch 2 --reps 3 --warmup 1 --passes none | grep -E '  backend |max rel error' | tr '\n' ' ' | sed 's/ *$//'"
else
  why="the project venv cannot import tensorrt"
  nvidia-smi -L 2>/dev/null | grep -q GPU || why="no CUDA GPU on this machine"
  echo "SKIP tensorrt bridge: $why (only compile-checked; docs/vendor-mapping.md says how to install TensorRT)"
  expect_error tensorrt-missing-is-clear "tensorrt: no CUDA GPU on this machine|tensorrt is not installed in .venv" -- "$F" run "zoo:mlp" --backend tensorrt
  expect_error tensorrt-options-checked-first "option opt must be one of 0, 1, 2, 3, 4, 5, got '9'" -- "$F" run "zoo:mlp" --backend "tensorrt?opt=9"
fi

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
