#!/usr/bin/env bash
# A one-node SLURM cluster on this machine for the SLURM test: Debian's slurm (22.05 on
# bookworm) and munge, started by hand (no systemd), no cgroups, no accounting database.
# Everything talks to 127.0.0.1; fake GPUs (gres File=/dev/null, ...) make --gpus=1 schedulable.
#
#   .ci/slurm-up.sh [DIR]     installs what is missing, writes /etc/slurm/{slurm,gres}.conf,
#                             starts munged, slurmctld and slurmd, waits until the node takes
#                             jobs; state and logs in DIR (default /tmp/tcbench-slurm)
#   .ci/slurm-down.sh [DIR]   stops exactly the daemons this script started
#
# The configuration goes to the default place, not behind SLURM_CONF: the executor plugin's
# job step (snakemake-executor-plugin-slurm-jobstep) drops every SLURM_* variable but the job's
# identity before its inner srun, SLURM_CONF included, and that srun then finds no cluster.
# A /etc/slurm/slurm.conf that this script did not write is never touched: it stops instead.
#
# Idempotent: a cluster already answering in DIR is left as it is. Every wait is bounded
# (TCBENCH_SLURM_UP_TIMEOUT, default 120 s) so a stuck daemon fails loudly instead of hanging.
# Exit 77 when not root (nothing can be installed or started): callers treat it as "skip".
set -euo pipefail

DIR=$(realpath -m "${1:-${TCBENCH_SLURM_DIR:-/tmp/tcbench-slurm}}")
TIMEOUT=${TCBENCH_SLURM_UP_TIMEOUT:-120}
# fake GPUs on the node: 2 lets two jobs run at once (a 2-core CI machine gains from no more)
GPUS=${TCBENCH_SLURM_GPUS:-2}
FAKE_DEVICES=(/dev/null /dev/zero /dev/full /dev/urandom)
NODE=$(hostname -s)
ETC=/etc/slurm RUN=$DIR/run LOG=$DIR/log STATE=$DIR/state
CONF=$ETC/slurm.conf
MARK="# written by tcbench .ci/slurm-up.sh"
unset SLURM_CONF

say() { echo "slurm-up: $*" >&2; }
die() {
    say "error: $*"
    for f in "$LOG"/*.log /var/log/munge/munged.log; do
        [ -f "$f" ] && { echo "--- tail $f" >&2; tail -n 30 "$f" >&2; }
    done
    exit 1
}
# wait_until SECONDS WHAT CMD...: poll CMD every second until it succeeds or time runs out
wait_until() {
    local limit=$1 what=$2; shift 2
    local end=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $end ] || die "$what: not after ${limit} s"
        sleep 1
    done
}

case $GPUS in [1-4]) ;; *) say "TCBENCH_SLURM_GPUS=$GPUS: 1 to 4"; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { say "needs root (installs packages, starts daemons as root)"; exit 77; }

if grep -qxF "$MARK" "$CONF" 2>/dev/null && ! grep -qxF "StateSaveLocation=$STATE/ctld" "$CONF" \
    && timeout 10 scontrol ping 2>/dev/null | grep -q "is UP"; then
    other=$(sed -n 's|^StateSaveLocation=\(.*\)/state/ctld$|\1|p' "$CONF")
    die "a test cluster of another directory runs ($other): .ci/slurm-down.sh $other first"
fi
if grep -qxF "StateSaveLocation=$STATE/ctld" "$CONF" 2>/dev/null && timeout 10 scontrol ping 2>/dev/null | grep -q "is UP" \
    && timeout 10 sinfo -h -n "$NODE" -o %t 2>/dev/null | grep -Eq "^(idle|mix|alloc)"; then
    say "already up ($CONF)"
    exit 0
fi

# --- packages: Debian's, through apt (the daemons' postinst cannot start them: no systemd)
missing=()
for pair in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client squeue:slurm-client \
            munged:munge; do
    command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
    pkgs=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
    say "installing $pkgs"
    export DEBIAN_FRONTEND=noninteractive
    timeout 300 apt-get update -qq || die "apt-get update failed"
    # shellcheck disable=SC2086
    timeout 600 apt-get install -y -qq --no-install-recommends $pkgs >/dev/null \
        || die "apt-get install $pkgs failed"
fi

if [ -e "$CONF" ] && ! grep -qxF "$MARK" "$CONF"; then
    die "$CONF exists and is not ours: a real SLURM lives here, leaving it alone"
fi
mkdir -p "$ETC" "$RUN" "$LOG" "$STATE/ctld" "$STATE/d"

# --- munge: the key comes with the package (created if absent); munged runs as its own user
if ! timeout 10 sh -c 'munge -n | unmunge' >/dev/null 2>&1; then
    if [ ! -s /etc/munge/munge.key ]; then
        mungekey --create --keyfile=/etc/munge/munge.key
        chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
    fi
    install -d -o munge -g munge -m 0755 /run/munge
    runuser -u munge -- /usr/sbin/munged || die "munged did not start"
    cp /run/munge/munged.pid "$RUN/munged.pid"   # ours to stop in slurm-down.sh
    wait_until "$TIMEOUT" "munge credentials" sh -c 'munge -n | unmunge'
fi

# --- configuration: sized from what slurmd sees; facts found on Debian's 22.05:
# linuxproc/none plugins need no cgroup.conf; without an accounting database sacct answers
# "accounting storage is disabled", so job status comes from squeue, which keeps finished
# jobs for MinJobAge seconds.
read -r CPUS MEM < <(slurmd -C | tr ' ' '\n' | awk -F= '/^CPUs=/{c=$2} /^RealMemory=/{m=$2}
                                                    END{print c, m}')
[ -n "$CPUS" ] && [ -n "$MEM" ] || die "slurmd -C did not report CPUs and RealMemory"
# Declared at least as big as a modest GPU node (config_overrides lets slurmd accept it) so that
# profiles/slurm's real-cluster requests (4 CPUs, 16 GB a job) are schedulable unchanged; with
# task/none and no cgroups nothing enforces them, and the single GPU runs one job at a time.
CPUS=$(( CPUS > 8 ? CPUS : 8 )) MEM=$(( MEM > 32768 ? MEM : 32768 ))
cat > "$CONF.tmp" <<CONF
$MARK
# a one-node test cluster on 127.0.0.1; state and logs in $DIR
ClusterName=tcbench
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=${TCBENCH_SLURMCTLD_PORT:-6817}
SlurmdPort=${TCBENCH_SLURMD_PORT:-6818}
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MinJobAge=600
SlurmdParameters=config_overrides
GresTypes=gpu
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM Gres=gpu:$GPUS State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
CONF
# GPUs without hardware: any device file will do for the scheduler to grant --gpus=1 and set
# CUDA_VISIBLE_DEVICES (0, 1, ...); one file per GPU
{
    echo "$MARK"
    for dev in "${FAKE_DEVICES[@]:0:$GPUS}"; do echo "NodeName=$NODE Name=gpu File=$dev"; done
} > "$ETC/gres.conf"
mv "$CONF.tmp" "$CONF"

# --- daemons (they fork into the background and write their pid files)
slurmctld -c || die "slurmctld did not start"
wait_until "$TIMEOUT" "slurmctld answering" sh -c 'scontrol ping | grep -q "is UP"'
slurmd -N "$NODE" || die "slurmd did not start"
wait_until "$TIMEOUT" "node $NODE idle" \
    sh -c "sinfo -h -n '$NODE' -o %t | grep -Eq '^(idle|mix|alloc)'"

say "up: node $NODE, $CPUS CPUs, ${MEM} MB, $GPUS fake gpu(s) ($CONF; logs in $LOG)"
