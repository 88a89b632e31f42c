#!/usr/bin/env bash
# Installs the Debian packages friction needs. Idempotent: when everything is
# present it only runs dpkg-query and returns in well under a second.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools clang-19 libomp-19-dev
  libclang-rt-19-dev libfuzzer-19-dev
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  libhalide14-0-dev libdnnl-dev libsqlite3-dev nlohmann-json3-dev libcli11-dev libtomlplusplus-dev libfmt-dev
  libgtest-dev libgmock-dev
  python3-venv python3-dev pybind11-dev sqlite3 valgrind graphviz slurm-wlm munge
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

# `import friction` in the venv: the module is built into build/python (python/CMakeLists.txt).
SITE=$("$ROOT/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [[ "$(cat "$SITE/friction.pth" 2>/dev/null)" != "$ROOT/build/python" ]]; then
  echo "$ROOT/build/python" > "$SITE/friction.pth"
fi

# The vendor compilers of the bridges (openvino, iree, tvm), one group at a time: a group
# that fails to install is reported and skipped (its bridge tests skip), the others stay.
# The stamp is written only when every group installed, so a failed group is retried.
VREQ="$ROOT/vendor_bridge/python/requirements-vendors.txt"
VSTAMP="$ROOT/.venv/.requirements-vendors"
if [[ -n "${FRICTION_SKIP_VENDORS:-}" ]]; then
  echo "setup: FRICTION_SKIP_VENDORS is set: vendor bridge packages not installed"
elif cmp -s "$VREQ" "$VSTAMP"; then
  echo "setup: vendor bridge packages up to date"
else
  vfailed=0
  for group in $(sed -n 's/^# group //p' "$VREQ"); do
    mapfile -t pkgs < <(awk -v g="$group" '/^# group /{on = ($3 == g); next} on && NF && !/^#/' "$VREQ")
    echo "setup: installing $group (${pkgs[*]})"
    if ! log=$("$ROOT/.venv/bin/pip" install -q --disable-pip-version-check "${pkgs[@]}" 2>&1); then
      echo "setup: could not install $group ($(grep -m1 -E 'ERROR|error' <<<"$log" || tail -1 <<<"$log")); its bridge tests will skip"
      vfailed=1
    fi
  done
  if ((vfailed == 0)); then cp "$VREQ" "$VSTAMP"; fi
fi
echo "setup: done"
