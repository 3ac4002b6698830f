#!/usr/bin/env bash
# Installs the Go gNMI tools railtrace is compared with (the collector benchmark's client, the
# interop tests' target and client), from the Go module proxy only, into benchmarks/.bin/
# (idempotent: an installed binary is reused). Prints the
# binary's path on stdout; on failure prints the command and the go tool's error on stderr and
# exits non-zero.
#
#   benchmarks/install-gnmic.sh            gnmic $GNMIC_VERSION (default below)
#   benchmarks/install-gnmic.sh gnmi_cli   openconfig's reference client (cmd/gnmi_cli of
#                                          github.com/openconfig/gnmi $GNMI_VERSION), the
#                                          baseline used when the proxy will not serve gnmic
#   benchmarks/install-gnmic.sh fake_server  openconfig's reference gNMI target (testing/fake/
#                                          gnmi/cmd/fake_server of the same module and version),
#                                          which the interop tests run railtrace and gnmi_cli
#                                          against (`make system-deps` installs it and gnmi_cli)
#
# Settings (environment): GNMIC_VERSION, GNMI_VERSION, RAILTRACE_BENCH_BIN (install folder),
# GOTOOLCHAIN (set it to go1.27.3 if the module needs Go 1.27; the go command then takes that
# toolchain from the module proxy too).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${RAILTRACE_BENCH_BIN:-$here/.bin}
what=${1:-gnmic}

case "$what" in
  gnmic)
    version=${GNMIC_VERSION:-v0.42.0}
    module=github.com/openconfig/gnmic
    name=gnmic
    ;;
  gnmi_cli)
    version=${GNMI_VERSION:-v0.14.1}
    module=github.com/openconfig/gnmi/cmd/gnmi_cli
    name=gnmi_cli
    ;;
  fake_server)
    version=${GNMI_VERSION:-v0.14.1}
    module=github.com/openconfig/gnmi/testing/fake/gnmi/cmd/fake_server
    name=fake_server
    ;;
  *)
    echo "usage: $0 [gnmic|gnmi_cli|fake_server]" >&2
    exit 2
    ;;
esac

target="$bin/$name-$version"
if [ -x "$target" ]; then
  echo "$target"
  exit 0
fi
command -v go >/dev/null || { echo "go is not installed" >&2; exit 1; }
mkdir -p "$bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmd=(go install "$module@$version")
# Run outside any module, so no go.mod around here has a say.
if ! (cd "$work" && GOBIN="$work" "${cmd[@]}") >"$work/log" 2>&1; then
  echo "failed: GOBIN=$bin ${cmd[*]}" >&2
  cat "$work/log" >&2
  exit 1
fi
mv "$work/$name" "$target"
echo "$target"
