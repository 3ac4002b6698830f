#!/usr/bin/env bash
# A small Slurm cluster on this machine for tests and demos: munged, slurmctld and one slurmd
# per node in multiple-slurmd mode (Debian's slurm-wlm), every node on 127.0.0.1 with its own
# port and eight GPUs declared as GRES (backed by plain files: nothing runs on them, but
# Slurm allocates them and prints their indexes as on a GPU cluster).
#
#   deploy/slurm/slurm.sh start     fresh state, start the daemons, wait until every node is idle
#   deploy/slurm/slurm.sh stop      stop the daemons by their PIDs (SIGTERM, then SIGKILL)
#   deploy/slurm/slurm.sh status    exit 0 when every node answers idle or allocated
#   deploy/slurm/slurm.sh env       print the SLURM_CONF line a client needs
#
# Settings (environment): RAILTRACE_SLURM_HOME (default .slurm-run/ under the repo),
# RAILTRACE_SLURM_NODES (4), RAILTRACE_SLURM_PREFIX (gb-n), RAILTRACE_SLURM_PORT (16817: the
# controller; slurmd ports follow it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
home=${RAILTRACE_SLURM_HOME:-$root/.slurm-run}
nodes=${RAILTRACE_SLURM_NODES:-4}
prefix=${RAILTRACE_SLURM_PREFIX:-gb-n}
port=${RAILTRACE_SLURM_PORT:-16817}
conf=$home/slurm.conf
export SLURM_CONF=$conf

names() { for i in $(seq 1 "$nodes"); do printf '%s%03d\n' "$prefix" "$i"; done; }
hostlist() { printf '%s[001-%03d]' "$prefix" "$nodes"; }

configure() {
  local user; user=$(id -un)
  mkdir -p "$home"/{munge,state,spool,log,run,gpus}
  chmod 700 "$home" "$home/munge"
  for g in 0 1 2 3 4 5 6 7; do : > "$home/gpus/gpu$g"; done
  cat > "$conf" <<CONF
ClusterName=railtrace
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$home/munge/munge.socket
CredType=cred/munge
SlurmUser=$user
SlurmdUser=$user
StateSaveLocation=$home/state
SlurmdSpoolDir=$home/spool/%n
SlurmctldPidFile=$home/run/slurmctld.pid
SlurmdPidFile=$home/run/slurmd-%n.pid
SlurmctldLogFile=$home/log/slurmctld.log
SlurmdLogFile=$home/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
NodeName=$(hostlist) NodeHostname=localhost NodeAddr=127.0.0.1 Port=[$((port + 2))-$((port + 1 + nodes))] CPUs=2 RealMemory=1000 Gres=gpu:8 State=UNKNOWN
PartitionName=gpu Nodes=$(hostlist) Default=YES MaxTime=INFINITE State=UP
CONF
  cat > "$home/gres.conf" <<GRES
NodeName=$(hostlist) Name=gpu File=$home/gpus/gpu[0-7]
GRES
}

start() {
  command -v slurmctld >/dev/null || { echo "slurmctld not found: apt-get install slurm-wlm"; exit 1; }
  if status 2>/dev/null; then echo "slurm already running"; return 0; fi
  stop >/dev/null
  rm -rf "$home"
  configure
  mungekey --create --keyfile="$home/munge/munge.key"
  munged --force --key-file="$home/munge/munge.key" --socket="$home/munge/munge.socket" \
    --pid-file="$home/run/munged.pid" --log-file="$home/log/munged.log" \
    --seed-file="$home/munge/munge.seed"
  slurmctld -i >"$home/log/slurmctld.out" 2>&1
  for n in $(names); do
    mkdir -p "$home/spool/$n"
    slurmd -N "$n" >"$home/log/slurmd-$n.out" 2>&1
  done
  for _ in $(seq 1 120); do
    if status 2>/dev/null; then echo "slurm up: $(hostlist) (SLURM_CONF=$conf)"; return 0; fi
    sleep 0.5
  done
  echo "slurm nodes not idle within 60 s:"; sinfo -N 2>&1 || true
  tail -20 "$home/log/slurmctld.log" 2>/dev/null || true; exit 1
}

status() {
  [ -f "$conf" ] || return 1
  local up
  up=$(sinfo -h -N -o '%N %t' 2>/dev/null | grep -cE ' (idle|alloc|mix)$' || true)
  [ "$up" -eq "$nodes" ]
}

stop() {
  for pidfile in "$home"/run/slurmd-*.pid "$home/run/slurmctld.pid" "$home/run/munged.pid"; do
    [ -f "$pidfile" ] || continue
    local pid; pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    rm -f "$pidfile"
  done
  echo "slurm stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) echo "SLURM_CONF=$conf" ;;
  *) echo "usage: $0 start|stop|status|env"; exit 2 ;;
esac
