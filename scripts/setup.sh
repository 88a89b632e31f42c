#!/usr/bin/env bash
# Installs the Debian packages friction needs. Idempotent: when everything is
# present it only runs dpkg-query and returns in well under a second.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  llvm-19-dev libmlir-19-dev mlir-19-tools clang-19 libomp-19-dev
  libclang-rt-19-dev libfuzzer-19-dev
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  libsqlite3-dev nlohmann-json3-dev libcli11-dev libtomlplusplus-dev libfmt-dev
  libgtest-dev libgmock-dev
  python3-venv sqlite3
  chromium
)

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
else
  echo "setup: installing ${#missing[@]} missing packages: ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The project venv: plotting for `friction report` (and, later, vendor bridges).
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REQ="$ROOT/benchmarks/report/requirements.txt"
STAMP="$ROOT/.venv/.requirements"
if [[ -x "$ROOT/.venv/bin/python" ]] && cmp -s "$REQ" "$STAMP"; then
  echo "setup: venv up to date"
else
  echo "setup: creating the project venv in .venv"
  python3 -m venv "$ROOT/.venv"
  "$ROOT/.venv/bin/pip" install -q --disable-pip-version-check -r "$REQ"
  cp "$REQ" "$STAMP"
fi
echo "setup: done"
