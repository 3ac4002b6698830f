#!/usr/bin/env bash
# A small Slurm cluster on this machine for tests and demos: munged, slurmctld and one slurmd
# per node in multiple-slurmd mode (Debian's slurm-wlm), every node on 127.0.0.1 with its own
# port and eight GPUs declared as GRES (backed by plain files: nothing runs on them, but
# Slurm allocates them and prints their indexes as on a GPU cluster).
#
#   deploy/slurm/slurm.sh start     fresh state, start the daemons, wait until every node is idle
#   deploy/slurm/slurm.sh stop      stop the daemons by their PIDs (SIGTERM, then SIGKILL)
#   deploy/slurm/slurm.sh status    exit 0 when every node answers idle or allocated
#   deploy/slurm/slurm.sh env       print the SLURM_CONF line a client needs (and slurmrestd's)
#   deploy/slurm/slurm.sh token U   print a JWT for user U (SLURM_JWT=...), for slurmrestd
#
# With Debian's slurmrestd installed, `start` also runs slurmrestd on 127.0.0.1 and on a unix
# socket, authenticating clients by JWT (rest_auth/jwt, with a key made here). slurmrestd
# refuses to run as root: run as root, this script starts it as `nobody`, which cannot reach
# munge's socket in the private home, so rest_auth/local (slurmrestd asking slurmctld through
# munge as itself) is not used; JWT needs no munge.
#
# Settings (environment): RAILTRACE_SLURM_HOME (default .slurm-run/ under the repo),
# RAILTRACE_SLURM_NODES (4), RAILTRACE_SLURM_PREFIX (gb-n), RAILTRACE_SLURM_PORT (16817: the
# controller; slurmd ports follow it, then slurmrestd's), RAILTRACE_SLURM_MIN_JOB_AGE (300: how
# long slurmctld keeps an ended job), RAILTRACE_SLURM_RESTD (auto: on when slurmrestd is
# installed; 0: off).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
home=${RAILTRACE_SLURM_HOME:-$root/.slurm-run}
nodes=${RAILTRACE_SLURM_NODES:-4}
prefix=${RAILTRACE_SLURM_PREFIX:-gb-n}
port=${RAILTRACE_SLURM_PORT:-16817}
min_job_age=${RAILTRACE_SLURM_MIN_JOB_AGE:-300}
restd_port=$((port + 2 + nodes))
case "${RAILTRACE_SLURM_RESTD:-auto}" in
  0|off|no) restd=0 ;;
  *) restd=$(command -v slurmrestd >/dev/null && echo 1 || echo 0) ;;
esac
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
MinJobAge=$min_job_age
$( [ "$restd" = 1 ] && printf 'AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key=%s\n' "$home/state/jwt.key" )
NodeName=$(hostlist) NodeHostname=localhost NodeAddr=127.0.0.1 Port=[$((port + 2))-$((port + 1 + nodes))] CPUs=2 RealMemory=1000 Gres=gpu:8 State=UNKNOWN
PartitionName=gpu Nodes=$(hostlist) Default=YES MaxTime=INFINITE State=UP
CONF
  cat > "$home/gres.conf" <<GRES
NodeName=$(hostlist) Name=gpu File=$home/gpus/gpu[0-7]
GRES
  if [ "$restd" = 1 ]; then
    head -c 32 /dev/urandom > "$home/state/jwt.key"
    chmod 600 "$home/state/jwt.key"
  fi
}

# slurmrestd in the foreground of a background shell (it does not daemonize), its PID kept for
# stop; it takes each client's JWT to slurmctld (SLURM_JWT=daemon). Only the OpenAPI plugins
# of slurmctld are loaded: the slurmdbd ones (dbv0.0.*) refuse to start without accounting.
# As root, slurmrestd runs as nobody, from a copy of the config in a directory of its own
# where it also makes its socket (the home may lie under one only root enters, as pytest's does).
start_restd() {
  local as=() rconf=$conf plugins dir
  if [ "$(id -u)" -eq 0 ]; then
    as=(-u nobody)
    dir=$(mktemp -d /tmp/railtrace-slurmrestd.XXXXXX)
    cp "$conf" "$home/gres.conf" "$dir/"
    chmod 755 "$dir" && chmod 644 "$dir"/* && chown nobody "$dir"
    echo "$dir" > "$home/run/slurmrestd.confdir"
    rconf=$dir/slurm.conf
  fi
  plugins=$(SLURM_CONF=$rconf slurmrestd "${as[@]}" -s list 2>&1 |
    grep -o 'openapi/v[0-9.]*' | paste -sd, -) || true
  if [ -z "$plugins" ]; then
    echo "slurmrestd lists no OpenAPI plugin of slurmctld:"
    SLURM_CONF=$rconf slurmrestd "${as[@]}" -s list 2>&1 | tail -5; exit 1
  fi
  SLURM_CONF=$rconf SLURM_JWT=daemon setsid slurmrestd "${as[@]}" -a rest_auth/jwt \
    -s "$plugins" "127.0.0.1:$restd_port" "unix:$(restd_socket)" \
    </dev/null >"$home/log/slurmrestd.log" 2>&1 &
  echo $! > "$home/run/slurmrestd.pid"
  for _ in $(seq 1 40); do
    if (: <"/dev/tcp/127.0.0.1/$restd_port") 2>/dev/null; then return 0; fi
    sleep 0.25
  done
  echo "slurmrestd not listening on 127.0.0.1:$restd_port within 10 s:"
  tail -20 "$home/log/slurmrestd.log"; exit 1
}

restd_socket() {
  local copy="$home/run/slurmrestd.confdir"
  if [ -f "$copy" ]; then echo "$(cat "$copy")/slurmrestd.socket"
  else echo "$home/run/slurmrestd.socket"; fi
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
    if status 2>/dev/null; then
      if [ "$restd" = 1 ]; then start_restd; fi
      echo "slurm up: $(hostlist) (SLURM_CONF=$conf)"; return 0
    fi
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
  for pidfile in "$home/run/slurmrestd.pid" "$home"/run/slurmd-*.pid "$home/run/slurmctld.pid" \
    "$home/run/munged.pid"; do
    [ -f "$pidfile" ] || continue
    local pid; pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    rm -f "$pidfile"
  done
  local copy="$home/run/slurmrestd.confdir"
  if [ -f "$copy" ]; then
    case "$(cat "$copy")" in /tmp/railtrace-slurmrestd.*) rm -rf "$(cat "$copy")" ;; esac
    rm -f "$copy"
  fi
  echo "slurm stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env)
    echo "SLURM_CONF=$conf"
    if [ "$restd" = 1 ]; then
      echo "SLURMRESTD_URL=http://127.0.0.1:$restd_port"
      echo "SLURMRESTD_SOCKET=unix:$(restd_socket)"
    fi
    ;;
  token) scontrol token username="${2:?usage: $0 token USER}" lifespan=3600 ;;
  *) echo "usage: $0 start|stop|status|env|token USER"; exit 2 ;;
esac
