#!/usr/bin/env bash
# A single-node SLURM cluster on this Debian/Ubuntu machine, to try the grid's SLURM backend and to
# test it in CI (docs/distributed.md).
#
#   scripts/slurm_local.sh start    install slurmctld, slurmd, slurm-client and munge if missing, write
#                                   a slurm.conf for this host, start munged, slurmctld and slurmd
#   scripts/slurm_local.sh stop     cancel the cluster's jobs, stop the three daemons by their pids
#   scripts/slurm_local.sh status   which daemons run, and sinfo
#
# Needs root. Idempotent: `start` on a running cluster only checks it; `stop` on a stopped one does
# nothing. The cluster has no accounting (most small clusters run without). Settings:
#   SLURM_LOCAL_CPUS       CPUs the node offers (default 2, at most what `slurmd -C` sees)
#   SLURM_LOCAL_MEMORY_MB  memory the node offers (default 90% of what `slurmd -C` sees)
#   SLURM_LOCAL_PARTITION  the one partition's name (default debug)
# A slurm.conf that this script did not write is never overwritten: `start` stops and says so.
set -euo pipefail

CONF=/etc/slurm/slurm.conf
MARK="# written by llmexplore scripts/slurm_local.sh"
RUN=/run/slurm-local
CTLD_PID=$RUN/slurmctld.pid
SLURMD_PID=$RUN/slurmd.pid
MUNGE_PID=/run/munge/munged.pid
PACKAGES=(slurmctld slurmd slurm-client munge)

say() { echo "slurm_local: $*"; }
die() { echo "slurm_local: error: $*" >&2; exit 2; }

need_root() {
    [[ $(id -u) -eq 0 ]] || die "run as root (it installs packages and starts system daemons)"
}

pid_alive() {  # pidfile -> 0 if the pid in it is a live process
    local pid
    [[ -s $1 ]] || return 1
    pid=$(cat "$1")
    [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null
}

install_packages() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    command -v apt-get >/dev/null || die "apt-get not found: this script knows Debian and Ubuntu only"
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
        || { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; } \
        || die "could not install ${missing[*]} (no package mirror reachable?)"
}

write_conf() {
    local host cpus mem seen_cpus seen_mem partition
    host=$(hostname -s)
    read -r seen_cpus seen_mem < <(slurmd -C | tr ' ' '\n' | awk -F= '/^CPUs=/{c=$2} /^RealMemory=/{m=$2} END{print c, m}')
    cpus=${SLURM_LOCAL_CPUS:-2}
    [[ $cpus =~ ^[1-9][0-9]*$ ]] || die "SLURM_LOCAL_CPUS must be a positive whole number (got '$cpus')"
    (( cpus > seen_cpus )) && cpus=$seen_cpus
    mem=${SLURM_LOCAL_MEMORY_MB:-$(( seen_mem * 9 / 10 ))}
    [[ $mem =~ ^[1-9][0-9]*$ ]] || die "SLURM_LOCAL_MEMORY_MB must be a positive whole number (got '$mem')"
    (( mem > seen_mem )) && die "SLURM_LOCAL_MEMORY_MB=$mem is more than this machine has ($seen_mem MB)"
    partition=${SLURM_LOCAL_PARTITION:-debug}
    [[ $partition =~ ^[A-Za-z0-9_-]+$ ]] || die "SLURM_LOCAL_PARTITION must be letters, digits, _ or - (got '$partition')"
    if [[ -e $CONF ]] && ! head -1 "$CONF" | grep -qF "$MARK"; then
        die "$CONF exists and was not written by this script; move it away to use the local cluster"
    fi
    mkdir -p /etc/slurm /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm "$RUN"
    local tmp=$CONF.tmp.$$
    cat > "$tmp" <<EOF
$MARK
ClusterName=llmexplore-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
JobRequeue=1
KillWait=30
MinJobAge=300
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=$partition Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    if ! cmp -s "$tmp" "$CONF" 2>/dev/null; then
        mv "$tmp" "$CONF"
        say "wrote $CONF (node $host: $cpus CPUs, $mem MB; partition $partition)"
        return 0
    fi
    rm -f "$tmp"
    return 1  # unchanged
}

start_munge() {
    pid_alive "$MUNGE_PID" && return 0
    [[ -s /etc/munge/munge.key ]] || { mungekey --create >/dev/null 2>&1 || create-munge-key -f >/dev/null; }
    chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    runuser -u munge -- /usr/sbin/munged
    say "munged started (pid $(cat "$MUNGE_PID"))"
}

wait_for() {  # seconds, description, command...
    local seconds=$1 what=$2
    shift 2
    for _ in $(seq $(( seconds * 2 ))); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    die "$what did not come up within ${seconds}s (see /var/log/slurm/)"
}

node_ready() {
    local state
    state=$(sinfo -h -N -o %T 2>/dev/null | head -1)
    [[ $state == idle* || $state == mixed* || $state == allocated* ]]
}

start() {
    need_root
    install_packages
    local changed=0
    write_conf && changed=1
    if (( changed )) && { pid_alive "$CTLD_PID" || pid_alive "$SLURMD_PID"; }; then
        say "slurm.conf changed: restarting the daemons"
        stop_daemons
    fi
    start_munge
    if ! pid_alive "$CTLD_PID"; then
        /usr/sbin/slurmctld
        wait_for 30 slurmctld scontrol ping
        say "slurmctld started (pid $(cat "$CTLD_PID"))"
    fi
    if ! pid_alive "$SLURMD_PID"; then
        /usr/sbin/slurmd
        wait_for 30 slurmd pid_alive "$SLURMD_PID"
        say "slurmd started (pid $(cat "$SLURMD_PID"))"
    fi
    wait_for 60 "the node" node_ready
    if sinfo -h -N -o %T | grep -Eq 'drain|down'; then
        scontrol update NodeName="$(hostname -s)" State=RESUME >/dev/null 2>&1 || true
    fi
    say "cluster up: $(sinfo -h -N -o '%N %T %c CPUs %m MB partition %P' | head -1)"
}

stop_pid() {  # pidfile, name
    pid_alive "$1" || { rm -f "$1"; return 0; }
    local pid
    pid=$(cat "$1")
    kill -TERM "$pid"
    for _ in $(seq 60); do
        kill -0 "$pid" 2>/dev/null || { say "$2 stopped (pid $pid)"; rm -f "$1"; return 0; }
        sleep 0.5
    done
    kill -KILL "$pid" 2>/dev/null || true
    say "$2 killed after 30 s (pid $pid)"
    rm -f "$1"
}

stop_daemons() {
    stop_pid "$SLURMD_PID" slurmd
    stop_pid "$CTLD_PID" slurmctld
}

stop() {
    need_root
    if pid_alive "$CTLD_PID" && [[ -n $(squeue -h -o %i 2>/dev/null) ]]; then
        say "cancelling the cluster's jobs"
        scancel --full $(squeue -h -o %i) 2>/dev/null || true
        for _ in $(seq 90); do
            [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break
            sleep 0.5
        done
    fi
    stop_daemons
    stop_pid "$MUNGE_PID" munged
}

status() {
    local up=0
    for d in "munged:$MUNGE_PID" "slurmctld:$CTLD_PID" "slurmd:$SLURMD_PID"; do
        if pid_alive "${d#*:}"; then echo "${d%%:*}: running (pid $(cat "${d#*:}"))"; up=$((up + 1));
        else echo "${d%%:*}: stopped"; fi
    done
    if (( up == 3 )); then sinfo -N -o '%N %T %c %m %P'; squeue; fi
    (( up == 3 ))
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
