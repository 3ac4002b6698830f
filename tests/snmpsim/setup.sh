#!/usr/bin/env bash
# snmpsim serving real switch recordings, for tests/test_collect_snmp_recordings.py.
#
# Run as root (`make system-deps` does): installs Debian's python3-gdbm and python3-venv when
# absent, creates the system user snmpsim runs as, a venv of Debian's own /usr/bin/python3 with
# pinned snmpsim and snmpsim-data (lextudio's maintained packages on PyPI), and decompresses the
# recordings the tests use into a data directory that user can read. Idempotent: a second run
# finds the stamp and only checks. Everything lives under RAILTRACE_SNMPSIM_DIR
# (/var/cache/railtrace/snmpsim); tests/snmpsim_support.py reads the same layout.
set -euo pipefail

SNMPSIM_USER=railtrace-snmpsim
ROOT=${RAILTRACE_SNMPSIM_DIR:-/var/cache/railtrace/snmpsim}
# Everything the simulator imports, pinned, installed --no-deps: snmpsim imports pysmi (for its
# version banner only) without requiring it, and pysmi's own requirements (jinja2, ply,
# requests) serve MIB compilation, which numeric-OID recordings never need.
PACKAGES=(snmpsim==1.2.2 pysnmp==7.1.30 pyasn1==0.6.5 pysmi==1.6.3 snmpsim-data==1.0.1)
# Recordings (paths inside snmpsim_data/data, without .snmprec.bz2). Each is served under the
# community of its file name (the path relative to the data directory, less the extension).
RECORDINGS=(
  cloud/arista-dcs-7150s-52-cl
  network/switch/cisco-n5000
  network/switch/cisco-n5000-uk9
  network/switch/hpe-procurve-516733-b21
  network/switch/h3c-e528-1
  network/switch/h3c-comware-7-1-075
)
STAMP_TEXT="${PACKAGES[*]} | ${RECORDINGS[*]}"

venv=$ROOT/venv
data=$ROOT/data
index=$ROOT/index
stamp=$ROOT/.installed

up_to_date() {
  [[ -f $stamp && "$(cat "$stamp")" == "$STAMP_TEXT" ]] &&
    [[ -x $venv/bin/snmpsim-command-responder ]] &&
    id -u "$SNMPSIM_USER" >/dev/null 2>&1 &&
    [[ -d $index ]] &&
    /usr/bin/python3 -c 'import dbm.gnu' 2>/dev/null
}

if up_to_date; then
  echo "snmpsim: up to date in $ROOT"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "snmpsim: setup needs root (apt, a system user): sudo bash $0" >&2
  exit 1
fi

missing=()
for pkg in python3-gdbm python3-venv; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
done
if ((${#missing[@]})); then
  apt-get update -q && apt-get install -y -q "${missing[@]}"
fi

if ! id -u "$SNMPSIM_USER" >/dev/null 2>&1; then
  useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin "$SNMPSIM_USER"
fi

rm -f "$stamp"
mkdir -p "$ROOT"
chmod 755 "$ROOT" "$(dirname "$ROOT")"

# A fresh venv whenever the pins change; never the project's .venv: snmpsim wants Debian's own
# python3, whose gdbm module (python3-gdbm) keeps its record indices.
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps "${PACKAGES[@]}"

# snmpsim reads no .bz2: decompress the recordings, flat, so each community is the file name.
rm -rf "$data" && mkdir -p "$data"
"$venv/bin/python" - "$data" "${RECORDINGS[@]}" <<'PY'
import bz2
import pathlib
import sys

import snmpsim_data

source = pathlib.Path(snmpsim_data.__file__).parent / "data"
target = pathlib.Path(sys.argv[1])
for recording in sys.argv[2:]:
    packed = source / f"{recording}.snmprec.bz2"
    out = target / f"{pathlib.PurePosixPath(recording).name}.snmprec"
    out.write_bytes(bz2.decompress(packed.read_bytes()))
PY
chmod -R a+rX "$venv" "$data"

# snmpsim's record indices, built by the simulator itself on its first start, as its user.
rm -rf "$index" && mkdir -p "$index"
chown "$SNMPSIM_USER:$SNMPSIM_USER" "$index"
chmod 755 "$index"

echo "$STAMP_TEXT" >"$stamp"
echo "snmpsim: installed in $ROOT (${#RECORDINGS[@]} recordings)"
