#!/usr/bin/env bash
# Stops the daemons .ci/slurm-up.sh started in DIR (by their pid files, nothing else).
set -uo pipefail
DIR=$(realpath -m "${1:-${TCBENCH_SLURM_DIR:-/tmp/tcbench-slurm}}")
for name in slurmd slurmctld munged; do
    pidfile=$DIR/run/$name.pid
    [ -s "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    # only a live process of that name: a stale pid file may name someone else by now
    if [ "$(ps -p "$pid" -o comm= 2>/dev/null)" = "$name" ]; then
        kill "$pid"
        for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
        kill -0 "$pid" 2>/dev/null && { echo "slurm-down: $name ($pid) ignores TERM, killing"; kill -9 "$pid"; }
    fi
    rm -f "$pidfile"
done
# and the configuration, if it is the one slurm-up.sh wrote
for f in /etc/slurm/slurm.conf /etc/slurm/gres.conf; do
    grep -qxF "# written by tcbench .ci/slurm-up.sh" "$f" 2>/dev/null && rm -f "$f"
done
echo "slurm-down: stopped what $DIR/run named"
