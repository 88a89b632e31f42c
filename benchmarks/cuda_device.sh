#!/usr/bin/env bash
# Runs on a GPU machine what benchmarks/cuda_plans.sh prepared (issue 16's
# device check): every plan under DIR/numerics checked against the
# interpreter's outputs at rtol 1e-4, then the plans under DIR/timing
# interleaved in rounds with PyTorch eager on the same architectures
# (benchmarks/cuda_vs_torch.py), then the pass configurations under
# DIR/ablate against their default (benchmarks/cuda_ablate.py). Needs the driver and python3 with torch and
# torchvision; nothing of the compiler.
# Usage: benchmarks/cuda_device.sh DIR OUT_DIR [ROUNDS] [REPS]
set -uo pipefail
dir=${1:?usage: cuda_device.sh DIR OUT_DIR [ROUNDS] [REPS]}
out=${2:?usage: cuda_device.sh DIR OUT_DIR [ROUNDS] [REPS]}
rounds=${3:-3}
reps=${4:-10}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/device.txt"
python3 -c "
import onnxruntime as o; print('onnxruntime', o.__version__, o.get_available_providers())" 2>&1 | tee -a "$out/device.txt"
python3 -c "import tensorrt as t; print('tensorrt', t.__version__)" 2>&1 | tail -1 | tee -a "$out/device.txt"
pass=0; fail=0
for d in "$dir"/numerics/*/; do
  name=$(basename "$d")
  if line=$("$dir/friction-cuda-run" "$d" --reps 3 --warmup 1 --json 2>"$out/err.txt"); then
    echo "$line" >> "$out/numerics.jsonl"; pass=$((pass + 1))
  else
    echo "{\"plan\": \"$name\", \"error\": $(python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()))' < "$out/err.txt"), \"out\": $(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$line")}" >> "$out/numerics.jsonl"
    fail=$((fail + 1)); echo "FAIL $name: $(cat "$out/err.txt") $line"
  fi
done
echo "numerics: $pass plans pass, $fail fail or refused" | tee -a "$out/device.txt"
"$dir/friction-cuda-run" "$dir/numerics/mobilenet_v2-full" --reps 10 --profile 12 2>&1 | tee "$out/profile-mobilenet_v2.txt"
PYTHONUNBUFFERED=1 python3 "$here/cuda_vs_torch.py" "$dir/timing" --runner "$dir/friction-cuda-run" --rounds "$rounds" \
  --reps "$reps" 2>&1 | tee "$out/timing.txt"
if [[ -d $dir/ablate ]]; then
  PYTHONUNBUFFERED=1 python3 "$here/cuda_ablate.py" "$dir/ablate" --runner "$dir/friction-cuda-run" --rounds "$rounds" \
    --reps "$reps" 2>&1 | tee "$out/ablate.txt"
fi
