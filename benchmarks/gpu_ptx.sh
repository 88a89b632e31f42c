#!/usr/bin/env bash
# The cuda target without a GPU: per model, compile time to PTX (load and
# passes, MLIR build, lowering with libdevice), kernels, launches a run and
# the steps no GPU kernel covers yet; per kernel, PTX size, launches and the
# registers ptxas reports (-v), so a code-generation regression is a number.
# Usage: benchmarks/gpu_ptx.sh [FRICTION_BINARY]
#   env: MODELS (paths or zoo specs; default: out/families/{resnet50,mobilenet_v2,vit_b_16} when exported
#        by scripts/make_torch_families.py, else the torch fixtures), CHIP (sm_90), BATCH (1), KERNELS=1 (per-kernel rows)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
F=${1:-$ROOT/build/bin/friction}
CHIP=${CHIP:-sm_90} BATCH=${BATCH:-1} KERNELS=${KERNELS:-0}
if [[ -z ${MODELS:-} ]]; then
  MODELS=""
  for m in resnet50 mobilenet_v2 vit_b_16; do
    [[ -f $ROOT/out/families/$m/model.onnx ]] && MODELS+=" $ROOT/out/families/$m/model.onnx"
  done
  [[ -n $MODELS ]] || MODELS=$(ls -d "$ROOT"/tests/models/torch/*/model.onnx)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-28s %8s %8s %9s %8s %10s %9s %9s  %s\n' model compile_s kernels calls launches ptx_kB max_regs ptxas_ok "host steps"
for m in $MODELS; do
  name=$m
  [[ $m == */model.onnx ]] && name=$(basename "$(dirname "$m")")
  start=$(date +%s.%N)
  "$F" compile "$m" --backend cuda --gpu-chip "$CHIP" --batch "$BATCH" --emit-ptx "$tmp/$name" --ptxas --json \
    > "$tmp/$name.json" 2> "$tmp/$name.log" || { cat "$tmp/$name.log" >&2; exit 1; }
  python3 - "$tmp/$name.json" "$name" "$KERNELS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); name = sys.argv[2]
ks = r["kernels"]
host = sum(r["host_steps"].values())
ok = sum(1 for k in ks if k.get("ptxas") == "ok")
print("%-28s %8.2f %8d %9d %8d %10.1f %9d %6d/%-3d %d %s" % (name, r["total_ms"] / 1000, len(ks), r["kernel_calls"],
      r["launches"], sum(k["ptx_bytes"] for k in ks) / 1024, max([k.get("registers", -1) for k in ks] or [-1]), ok,
      len(ks), host, ", ".join("%s x%d" % kv for kv in sorted(r["host_steps"].items()))))
if sys.argv[3] == "1":
    for k in sorted(ks, key=lambda k: -k["ptx_bytes"]):
        print("    %-70s calls %3d launches %3d ptx %7d B regs %3d" % (k["label"][:70], k["calls"], k["launches"],
              k["ptx_bytes"], k.get("registers", -1)))
PY
done
