#!/usr/bin/env bash
# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
# The harness's own checks on a GPU host (no study), bounded in time, packed into DIR/checks.tgz
# (bench outputs, the fork server's own logs, host facts):
#
#   lab/bench/checks.sh --out DIR SECONDS [STEP ...]
#
#   server    start the fork server by hand: it prints `serving` or `not serving: why`
#   probe     the training thread's speed on several CPUs (lab/bench/placement_probe.py)
#   fork_ab   fresh against forked jobs: throughput ratio and fixed cost (lab/bench/fork_ab.py)
#   fidelity  tcbench against a plain training loop (lab/bench/host_fidelity.py)
#   hf_check  a GPT-2 small job's fixed cost when forked, its parameter check above all (a few
#             steps, lab/bench/job_cost.py --forked; transformers must be installed)
#   check_cost  where that parameter check spends its time in a forked child, profiled
#             (lab/bench/check_cost.py, about 1 minute)
#
# On an H200 host the first three take about 340 s, fidelity 160 s more; as with study.sh, give
# the batch job or remote command at least 60 s more than SECONDS.
set -uo pipefail
usage="usage: lab/bench/checks.sh --out DIR SECONDS [server|probe|fork_ab|fidelity|hf_check|check_cost ...]"
if [ "${1:-}" != --out ] || [ $# -lt 3 ]; then echo "$usage" >&2; exit 2; fi
dest=$(realpath -m "$2"); budget=$3; shift 3
case $budget in ''|*[!0-9]*) echo "checks.sh: SECONDS=$budget is not a whole number; $usage" >&2; exit 2 ;; esac
for step in "$@"; do
  case $step in server|probe|fork_ab|fidelity|hf_check|check_cost) ;; *) echo "checks.sh: unknown step $step; $usage" >&2; exit 2 ;; esac
done
cd "$(dirname "$0")/../.."
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
B=$dest/bench; mkdir -p "$B"
pack() {
  cp -r "${TMPDIR:-/tmp}"/tcbench-fork-* "$B/" 2>/dev/null
  tar czf "$dest/checks.tgz" -C "$dest" bench 2>/dev/null; ls -la "$dest"
}
trap pack EXIT
source scripts/remote/setup.sh
export PYTHONPATH=$PWD/workflow
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv; lscpu -e;
  nproc; uptime; } > "$B/host.txt" 2>&1
for step in "$@"; do
  echo "== $step at $(( $(date +%s) - t0 )) s (left $(left) s)"
  case $step in
    server)
      timeout 60 python3 -m tcbench.launch.forkserver --socket "${TMPDIR:-/tmp}/tcbench-probe.sock" \
        --owner-pid $$ --idle-s 2 > "$B/server_by_hand.txt" 2>&1
      echo "exit $?" >> "$B/server_by_hand.txt"
      cat "$B/server_by_hand.txt" ;;
    probe)
      timeout $(( $(left) < 100 ? $(left) : 100 )) python3 lab/bench/placement_probe.py \
        --rounds 3 --max-seconds 60 --out "$B/placement_probe" 2>&1 | tail -12 ;;
    fork_ab)
      timeout $(( $(left) - 10 )) python3 lab/bench/fork_ab.py --rounds 4 \
        --out "$B/fork_ab" --work "${TMPDIR:-/tmp}/fork_ab_work" 2>&1 | tail -25
      cp -r "${TMPDIR:-/tmp}"/fork_ab_work/*.log "$B/fork_ab/" 2>/dev/null ;;
    fidelity)
      python3 lab/bench/host_fidelity.py --pairs 12 --max-seconds $(( $(left) - 40 )) \
        --out "$B/host_fidelity" 2>&1 | tail -12 ;;
    hf_check)
      HF_HUB_OFFLINE=1 python3 lab/bench/job_cost.py --forked --repeats 4 \
        --max-seconds $(( $(left) - 30 )) --out "$B/transformer_check" --name forked \
        --spec '{"experiment": "tf_gpt2_small", "cell": "amp-bf16_bs4", "workload": "transformers",
                 "precision": "amp-bf16", "batch_size": 4, "params": {"model": "gpt2-small",
                 "seq_len": 1024, "steps": 5, "warmup_steps": 2}}' 2>&1 | tail -8 ;;
    check_cost)
      HF_HUB_OFFLINE=1 timeout $(( $(left) - 20 )) python3 lab/bench/check_cost.py \
        --out "$B/check_cost" --rounds 3 --servers 2 2>&1 | tail -8 ;;
  esac
done
echo "done after $(( $(date +%s) - t0 )) s"
