#!/usr/bin/env bash
# Runs a study, or part of one, on a GPU host, bounded in time, and packs what it made into
# DIR/results.tgz (the files under results/ and logs/ it wrote: records, job timings, logs;
# unpack it at the repository root back home):
#
#   scripts/remote/study.sh --out DIR CONFIGFILE SECONDS [snakemake targets...]
#
# SECONDS bounds the whole script, install included: give the batch job or the remote command
# that runs it at least 60 s more, because a run killed at its own time limit may return
# nothing at all. When the time is up the job in flight is stopped (its record is never
# half-written: records are written atomically) and what finished is packed. Snakemake makes
# only what is missing, so a study too long for one run is finished by the next, once the
# records of the earlier ones are back in results/. ONLY=a,b (or SKIP=c) runs those experiments
# of the config (their records, adaptive decisions, interleaved comparisons and the
# calibration: scripts/remote/targets.py, run here once Snakemake is installed; ONLY=all: every
# experiment's, without the reports); targets given
# instead name the part to run; neither: the whole study.
# A compile cache across runs on fresh hosts (max-autotune benchmarks its GEMM and convolution
# choices for minutes, once per host): CACHE_OUT=1 packs the torch.compile cache this run left
# into DIR/compile-cache.tgz, Inductor's part without Triton's binaries (its autotuning
# timings, compiled graphs and kernel sources), or where that is over CACHE_MAX_MB (15) the
# autotuning timings alone; CACHE_IN=FILE unpacks such a file before the run, so the next
# run's jobs find the timings instead of benchmarking again (their records say whether their
# compile hit the cache).
# Optional steps first: PREFLIGHT=1 (four tiny jobs; stop if the harness fails on this GPU),
# KERNELS=1 (kernel names per precision), NCU=1 (Nsight Compute cross-check). GPUS=N overrides
# the number of GPUs used (default: every GPU of the host, one job each).
set -uo pipefail
usage="usage: scripts/remote/study.sh --out DIR CONFIGFILE SECONDS [snakemake targets...]"
if [ "${1:-}" != --out ] || [ $# -lt 4 ]; then echo "$usage" >&2; exit 2; fi
dest=$(realpath -m "$2"); cfg=$3; budget=$4; shift 4
cd "$(dirname "$0")/../.."   # paths below, CONFIGFILE's too, are the repository root's
case $budget in ''|*[!0-9]*) echo "study.sh: SECONDS=$budget is not a whole number; $usage" >&2; exit 2 ;; esac
[ -f "$cfg" ] || { echo "study.sh: $cfg: no such config (a path from the repository root)" >&2; exit 2; }
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
mkdir -p "$dest" logs
started="$dest/.started"; touch "$started"
pack() {
  # small on purpose: only what this run wrote travels back, not the committed result sets
  # (tens of MB) nor an earlier run's records brought along
  find results logs -type f -newer "$started" 2>/dev/null | sort > "$dest/.made"
  tar czf "$dest/results.tgz" --files-from "$dest/.made" 2>/dev/null
  echo "packed $(wc -l < "$dest/.made") files this run wrote into $dest/results.tgz"
  rm -f "$started" "$dest/.made"
  [ "${CACHE_OUT:-0}" = 1 ] && pack_cache
  ls -la "$dest"
}
pack_cache() {
  local parts file=$dest/compile-cache.tgz
  parts=$(find resources/compile-cache -mindepth 2 -maxdepth 2 -name inductor -type d 2>/dev/null)
  [ -n "$parts" ] || { echo "study.sh: no compile cache to pack"; return 0; }
  # shellcheck disable=SC2086  # the cache paths are words without spaces
  tar czf "$file" $parts
  if [ "$(stat -c %s "$file")" -gt $(( ${CACHE_MAX_MB:-15} * 1024 * 1024 )) ]; then
    local timings
    timings=$(for p in $parts; do [ -d "$p/cache" ] && echo "$p/cache"; done)
    echo "study.sh: the compile cache is over ${CACHE_MAX_MB:-15} MB: its autotuning timings alone"
    rm -f "$file"
    [ -n "$timings" ] || { echo "study.sh: no autotuning timings to pack"; return 0; }
    # shellcheck disable=SC2086
    tar czf "$file" $timings
  fi
  echo "packed the compile cache ($(du -h "$file" | cut -f1)) into $file"
}
trap pack EXIT
source scripts/remote/setup.sh
python -c "import numpy, torch" || exit 1
if [ -n "${CACHE_IN:-}" ]; then
  tar xzf "$CACHE_IN" || { echo "study.sh: CACHE_IN=$CACHE_IN: not a packed compile cache" >&2; exit 1; }
  echo "study.sh: compile cache from $CACHE_IN"
fi
if [ -n "${ONLY:-}${SKIP:-}" ]; then
  # after setup.sh: targets.py reads the config as Snakemake does, so it needs Snakemake, and a
  # failure here must stop the run rather than leave no targets (which would mean the whole study)
  only=${ONLY:-}; [ "$only" = all ] && only=
  run=()   # the result set a `--config run=NAME` among the arguments names
  for a in "$@"; do case $a in run=*) run=(--run "${a#run=}") ;; esac; done
  part=$(python3 scripts/remote/targets.py "$cfg" --only "$only" --skip "${SKIP:-}" "${run[@]}") || {
    echo "study.sh: no targets for ONLY=${ONLY:-} SKIP=${SKIP:-} in $cfg" >&2; exit 1; }
  # shellcheck disable=SC2086  # the targets are words without spaces
  set -- $part "$@"
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu \
  --format=csv | tee "$dest/nvidia-smi.csv"
if [ "${PREFLIGHT:-0}" = 1 ]; then
  PYTHONPATH=workflow timeout 300 python3 scripts/remote/preflight.py "${TMPDIR:-/tmp}/tcbench-preflight" \
    || exit 1
fi
if [ "${KERNELS:-0}" = 1 ]; then
  timeout "$(left)" python3 lab/kernels/collect_kernels.py "$dest/kernel_names.csv" 2>&1 | tail -20
fi
if [ "${NCU:-0}" = 1 ] && command -v ncu >/dev/null; then
  timeout "$(left)" bash lab/kernels/ncu_crosscheck.sh "$dest/ncu_steps.csv"
fi
# every GPU of the host, one job each (tcbench.host.gpus pins each job to its own)
gpus=${GPUS:-$(nvidia-smi -L | grep -c '^GPU')}
log="$dest/snakemake-$(basename "$cfg" .yaml).log"
bound=$(( $(left) - 15 ))   # 15 s to stop the job in flight and pack
if [ "$bound" -le 0 ]; then
  echo "study.sh: SECONDS=$budget leaves no time for Snakemake after $(( $(date +%s) - t0 )) s of setup" >&2
  exit 1
fi
# targets first: --rerun-triggers takes several values and would swallow them
timeout -k 10 "$bound" snakemake "$@" --cores "$(nproc)" --resources gpu="$gpus" \
  --configfile "$cfg" --keep-going --rerun-triggers mtime > "$log" 2>&1
rc=$?
echo "snakemake exit $rc after $(( $(date +%s) - t0 )) s"
if [ "$rc" = 137 ]; then
  # killed when its stop took longer than the grace period: the lock it left would refuse the
  # next run in this tree ("Directory cannot be locked")
  snakemake "$@" --configfile "$cfg" --unlock >> "$log" 2>&1 && echo "study.sh: unlocked"
fi
grep -E "^(Error|Finished|[0-9]+ of [0-9]+ steps)" "$log" | tail -5
