# The commands of the README: `make demo`, `make test` and `make check`. Each installs what it
# needs into .venv first; `make test` also installs Java, Maven and kcat (Debian) and runs a
# broker; `make check` needs nothing else.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml setup.py proto/*.proto streams/telemetry/walk/Cargo.* streams/telemetry/walk/src/*.rs | sha1sum | cut -c1-12)

.PHONY: install system-deps demo test check lint typecheck rust-check wheel-check pytest clean

# pip and setuptools print pages of warnings that look like a failure; they go to a log that is
# shown only if the install fails. What is happening is said before the quiet minute or two.
INSTALL_LOG := $(VENV)/install.log

$(STAMP):
	@test -x $(PY) || python3 -m venv $(VENV)
	@echo "Installing railtrace and its dependencies into $(VENV) (a minute or two the first time; log: $(INSTALL_LOG))"
	@{ $(PY) -m pip install -q --disable-pip-version-check --upgrade pip && \
	  $(PY) -m pip install -q --disable-pip-version-check -e ".[dev]"; } > $(INSTALL_LOG) 2>&1 || \
	  { cat $(INSTALL_LOG); echo "Install failed; the output above is kept in $(INSTALL_LOG)"; exit 1; }
	@rm -f $(VENV)/.installed-* && touch $(STAMP)
	@echo "Installed."

install: $(STAMP)

# What the tests need beyond Python: Java 17 and Maven (to fetch and run the Kafka broker),
# kcat (an independent Kafka client, to cross-check the wire format), and net-snmp's snmpd and
# snmptrap (real SNMP peers for the collector tests), Chromium (the incident page's browser
# test, driven by Playwright without its own browser download), Slurm (slurm-wlm: scontrol
# expands hostlists as the reference for ours; slurmrestd with its JWT plugin, for the
# scheduler collector's REST source). Debian packages. Then snmpsim serving real
# switch recordings (a user, a venv of Debian's python3; tests/snmpsim/setup.sh), and
# openconfig's reference gNMI target and client (fake_server, gnmi_cli v0.14.1, built with the
# machine's Go from the Go module proxy into benchmarks/.bin; a built one is kept).
system-deps:
	command -v kcat >/dev/null || (apt-get update -q && apt-get install -y -q kcat)
	command -v snmpd >/dev/null && command -v snmptrap >/dev/null || \
	  (apt-get update -q && apt-get install -y -q snmpd snmp)
	command -v java >/dev/null && command -v mvn >/dev/null || \
	  (apt-get update -q && apt-get install -y -q openjdk-17-jre-headless maven)
	command -v chromium >/dev/null || (apt-get update -q && apt-get install -y -q chromium)
	command -v scontrol >/dev/null && command -v slurmrestd >/dev/null || \
	  (apt-get update -q && apt-get install -y -q slurm-wlm slurmrestd slurm-wlm-jwt-plugin)
	bash tests/snmpsim/setup.sh
	bash benchmarks/install-gnmic.sh fake_server >/dev/null
	bash benchmarks/install-gnmic.sh gnmi_cli >/dev/null

demo: install
	$(VENV)/bin/railtrace demo

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	.ci/typecheck

wheel-check: install
	.ci/check-wheel

# The compiled part of the telemetry stage (streams/telemetry/walk): formatted, clippy-clean and
# its rules' unit tests passing. The tests run as a plain binary linked to this Python's
# libpython (`--no-default-features` leaves out the extension-module feature).
WALK := streams/telemetry/walk
rust-check: install
	cd $(WALK) && cargo fmt --check && cargo clippy --release -q -- -D warnings
	cd $(WALK) && LD_LIBRARY_PATH=$$($(abspath $(PY)) -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))') \
	  cargo test --release -q --no-default-features

# The streaming tests need a real broker: started here (KRaft, 127.0.0.1:9092) and stopped after.
# The 25 slowest tests are listed, so the suite's time (CI aims for under 25 minutes) has names.
pytest: install system-deps
	deploy/kafka/kafka.sh start
	$(VENV)/bin/pytest -q --durations=25; rc=$$?; deploy/kafka/kafka.sh stop; exit $$rc

test: lint typecheck rust-check wheel-check pytest

# The fast tier, under two minutes: lint, types and the core tests (pytest -m core: pure, no
# process, socket, chDB store or service; tests/conftest.py gives the markers and fails a core
# test that reaches for one). The five slowest are shown, so a test that slows the tier shows.
check: lint typecheck rust-check
	$(VENV)/bin/pytest -q -m core --durations=5

clean:
	rm -rf $(VENV) build dist *.egg-info railtrace-demo
