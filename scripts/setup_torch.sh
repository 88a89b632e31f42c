#!/usr/bin/env bash
# Creates .venv-torch with PyTorch and torchvision (scripts/requirements-torch.txt),
# for exporting models: scripts/make_torch_fixtures.py and benchmarks/e2e_vs_ort.sh's
# full-size families. Idempotent; several GB, so only the scripts that need it call it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REQ="$ROOT/scripts/requirements-torch.txt"
VENV="$ROOT/.venv-torch"
if [[ -x "$VENV/bin/python" ]] && cmp -s "$REQ" "$VENV/.requirements"; then
  exit 0
fi
bash "$ROOT/scripts/setup.sh" >/dev/null  # python3-venv among the Debian packages
echo "setup_torch: installing PyTorch and torchvision into .venv-torch (several GB, a few minutes)" >&2
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQ"
cp "$REQ" "$VENV/.requirements"
