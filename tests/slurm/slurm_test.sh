#!/usr/bin/env bash
# `friction sweep --slurm-array` on a real scheduler: starts Debian's slurm-wlm (slurmctld, slurmd) and munge
# on this machine as a one-node cluster in a temporary folder (its own ports, sockets and state; nothing
# system-wide is touched), submits a small sweep as a job array of shards plus the merge job, waits, and checks
# that the merged store holds exactly the cells of the same sweep run here, and that the report was written.
# Cleans up after itself; exits 77 (ctest: skipped) with the reason when Slurm cannot start.
# Usage: slurm_test.sh FRICTION_BINARY
set -uo pipefail
F=$(realpath "$1")
skip() { echo "SKIP slurm: $*"; exit 77; }
for tool in munged slurmctld slurmd sbatch squeue sqlite3; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (scripts/setup.sh installs slurm-wlm, munge, sqlite3)"
done
[[ $(id -u) -eq 0 ]] || skip "the test cluster's slurmd must run as root (this is uid $(id -u))"

T=$(mktemp -d /tmp/friction-slurm.XXXXXX)
chmod 700 "$T"
cleanup() {
  [[ -f "$T/slurm.conf" ]] && SLURM_CONF="$T/slurm.conf" scancel --quiet --user=root 2>/dev/null
  local pids=()
  for d in slurmd slurmctld munged; do [[ -f "$T/$d.pid" ]] && pids+=("$(cat "$T/$d.pid")"); done
  ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null
  for _ in $(seq 20); do kill -0 "${pids[@]}" 2>/dev/null || break; sleep 0.5; done  # daemons take a moment
  rm -rf "$T"
}
trap cleanup EXIT

dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 2>/dev/null && chmod 400 "$T/munge.key"
munged --force --socket="$T/munge.sock" --key-file="$T/munge.key" --log-file="$T/munged.log" \
  --pid-file="$T/munged.pid" --seed-file="$T/munged.seed" || skip "munged did not start: $(tail -1 "$T/munged.log" 2>/dev/null)"
port=$((20000 + $$ % 20000))
H=$(hostname -s)
mkdir -p "$T/state" "$T/spool"
cat > "$T/slurm.conf" <<CONF
ClusterName=friction-test
SlurmctldHost=$H(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$T/munge.sock
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$H NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=friction Nodes=$H Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$T/slurm.conf"
slurmctld -f "$SLURM_CONF" || skip "slurmctld did not start: $(tail -1 "$T/slurmctld.log" 2>/dev/null)"
slurmd -f "$SLURM_CONF" || skip "slurmd did not start: $(tail -1 "$T/slurmd.log" 2>/dev/null)"
for _ in $(seq 30); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 1; done
sinfo -h -o %t 2>/dev/null | grep -q idle || skip "the node did not come up: $(tail -1 "$T/slurmd.log" 2>/dev/null)"

cat > "$T/study.toml" <<'TOML'
name = "slurm-test"
models = ["zoo:mlp?width=16&inputs=16", "zoo:resnet?width=8&resolution=16"]
depths = [1]
batches = [1, 2]
executors = [{ backend = "cpu", config = "all-off" }, { backend = "cpu", config = "default" }]
threads = 1
rounds = 3
min_rounds = 3
max_seconds = 0.1
aa_control = true
check = false
TOML
fail() { echo "FAIL slurm: $*"; for l in "$T"/results/*.log; do echo "--- $l"; tail -5 "$l"; done; exit 1; }
"$F" sweep "$T/study.toml" --slurm-array "$T/submit.sh" --shards 2 || fail "--slurm-array"
grep -q -- '--array=0-1' "$T/submit.sh" || fail "submit.sh has no 2-task array"
start=$SECONDS
FRICTION_RESULTS="$T/results" bash "$T/submit.sh" || fail "submission"
waiting() { squeue -h -t pending,running,configuring 2>/dev/null; }
for _ in $(seq 300); do [[ -z $(waiting) ]] && break; sleep 1; done
[[ -z $(waiting) ]] || fail "jobs still queued after 300 s: $(waiting | head -3)"
took=$((SECONDS - start))
[[ -f "$T/results/report.html" ]] || fail "the merge job wrote no report"

"$F" sweep "$T/study.toml" --db "$T/local.db" >/dev/null 2>&1 || fail "the local sweep"
keys() { sqlite3 "$1" "SELECT cell_key FROM measurements ORDER BY cell_key"; }
if ! diff <(keys "$T/results/study.db") <(keys "$T/local.db") >"$T/diff.txt"; then
  fail "the merged store's cells differ from a local run's: $(head -5 "$T/diff.txt")"
fi
echo "slurm: 2 array tasks and the merge job ran in $took s; merged store = local run ($(keys "$T/local.db" | wc -l) cells); report written"
