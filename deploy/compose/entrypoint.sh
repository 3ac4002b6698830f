#!/bin/sh
# Entry point of the railtrace image: runs its arguments (`railtrace ...`).
#
# Kafka static membership (worker.instance_id) lets a restarted worker take its partitions
# straight back instead of waiting out its old session (benchmarks/README.md: 2 s against 13 s).
# It needs a name that is stable across restarts of one container and unique among live ones.
# A container's host name is both (it changes only when the container is re-created), and
# Compose cannot give each replica of a service its own value, so when nothing set one, the
# host name is used. Kubernetes sets RAILTRACE_WORKER__INSTANCE_ID from the pod name instead
# (deploy/k8s/worker.yaml) and does not run this script.
set -eu
if [ -z "${RAILTRACE_WORKER__INSTANCE_ID:-}" ]; then
  RAILTRACE_WORKER__INSTANCE_ID=$(cat /proc/sys/kernel/hostname)
  export RAILTRACE_WORKER__INSTANCE_ID
fi
exec "$@"
