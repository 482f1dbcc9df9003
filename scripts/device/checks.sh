#!/usr/bin/env bash
# One device call for the harness's own checks (no study): the fork server started by hand,
# the training-thread CPU probe, fresh-vs-forked A/B, and optionally the host-fidelity A/B.
#   scripts/device/checks.sh SECONDS [steps...]   steps: server probe fork_ab fidelity
# Everything lands in $OUT/checks.tgz (bench outputs, the fork server's own logs, host facts).
set -uo pipefail
t0=$(date +%s); budget=$1; shift
left() { echo $(( budget - ($(date +%s) - t0) )); }
OUT=${OUT:-/tmp/out}; B=$OUT/bench; mkdir -p "$B"
pack() {
  cp -r /tmp/tcbench-fork-* "$B/" 2>/dev/null
  tar czf "$OUT/checks.tgz" -C "$OUT" bench 2>/dev/null; ls -la "$OUT"
}
trap pack EXIT
source "$(dirname "$0")/setup.sh"
export PYTHONPATH=$PWD/workflow
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv; lscpu -e;
  nproc; uptime; } > "$B/host.txt" 2>&1
for step in "$@"; do
  echo "== $step at $(( $(date +%s) - t0 )) s (left $(left) s)"
  case $step in
    server)
      timeout 60 python3 -m tcbench.forkserver --socket /tmp/probe.sock --owner-pid $$ \
        --idle-s 2 > "$B/server_by_hand.txt" 2>&1; echo "exit $?" >> "$B/server_by_hand.txt"
      cat "$B/server_by_hand.txt" ;;
    probe)
      timeout $(( $(left) < 100 ? $(left) : 100 )) python3 scripts/bench/placement_probe.py \
        --rounds 3 --max-seconds 60 --out "$B/placement_probe" 2>&1 | tail -12 ;;
    fork_ab)
      timeout $(( $(left) - 10 )) python3 scripts/bench/fork_ab.py --rounds 4 \
        --out "$B/fork_ab" --work /tmp/fork_ab_work 2>&1 | tail -25
      cp -r /tmp/fork_ab_work/*.log "$B/fork_ab/" 2>/dev/null ;;
    fidelity)
      python3 scripts/bench/host_fidelity.py --pairs 12 --max-seconds $(( $(left) - 40 )) \
        --out "$B/host_fidelity" 2>&1 | tail -12 ;;
  esac
done
echo "done after $(( $(date +%s) - t0 )) s"
