# Build, test and demo millinet. Works on a fresh Debian machine that has Rust and
# python3, as root and without prompts (CI runs .ci/run, which runs `make test`).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

# Debian packages the tools and tests need: add new ones (ns-3, ...) to this list.
APT_PACKAGES := tshark libns3-dev libgsl-dev libsqlite3-dev pkg-config iproute2 tcpdump iperf3
# BPF congestion controls (bpf/, crates/bpfcc): clang compiles them to BPF, bpftool writes
# vmlinux.h from the running kernel's BTF, libbpf-dev has the headers and -lbpf of the loader.
APT_PACKAGES += clang libbpf-dev bpftool
# The proxy daemon's NFQUEUE rule (docs/proxyd.md) and its tests.
APT_PACKAGES += iptables
# Headless Chromium: a test opens a study's page in a real browser.
APT_PACKAGES += chromium
# `make bench` counts the event loop's instructions under callgrind.
APT_PACKAGES += valgrind
# Users' own programs on the emulated path (docs/emulator.md): curl and ping in its examples and tests,
# pgrep to check that nothing of theirs outlives a run.
APT_PACKAGES += curl procps iputils-ping
# Debian's python3 creates venvs only with python3-venv installed.
APT_PACKAGES += $(shell $(PYTHON) -c 'import ensurepip' 2>/dev/null || echo python3-venv)

RUST_SOURCES := Cargo.toml Cargo.lock $(shell find crates -name '*.rs' -o -name Cargo.toml)

# Prints the Python requirements declared in pyproject.toml (runtime, dev and build).
define PRINT_REQUIREMENTS
try:
    import tomllib
except ModuleNotFoundError:
    from pip._vendor import tomli as tomllib
project = tomllib.load(open("pyproject.toml", "rb"))
reqs = project["project"]["dependencies"] + project["project"]["optional-dependencies"]["dev"]
print("\n".join(reqs + project["build-system"]["requires"]))
endef
export PRINT_REQUIREMENTS

.PHONY: deps venv build bpf test docs demo calibrate study study-train study-mptcp study-e2e study-lower-layer study-urban study-dense study-multiflow study-spep-emulation study-l4s study-web studies bench bench-study bench-instructions bench-speed bench-route bench-train bench-mptcp bench-urban bench-dense bench-scale bench-emulator bench-proxyd bench-proxyd-churn parity crosscheck crosscheck-linux fuzz fuzz-corpus

deps:
	@missing=$$(for p in $(APT_PACKAGES); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed$$' || echo $$p; \
	  done); \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:" $$missing; \
	  apt-get update; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi

venv: $(VENV)/.deps-installed
$(VENV)/.deps-installed: pyproject.toml | deps
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/python -c "$$PRINT_REQUIREMENTS" > $(VENV)/requirements.txt
	$(BIN)/pip install --quiet -r $(VENV)/requirements.txt
	touch $@

build: $(VENV)/.built
$(VENV)/.built: $(VENV)/.deps-installed $(RUST_SOURCES)
	VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/maturin develop --release --quiet
	@# The proxy daemon (docs/proxyd.md), at target/release/millinet-proxyd.
	cargo build --release -p millinet-proxyd
	touch $@

# The BPF congestion controls (bpf/, docs/models/bpf-congestion-control.md) and their loader,
# in target/bpf. vmlinux.h comes from the running kernel's BTF, generated, never checked in.
BPF_OUT := target/bpf
BPF_OBJECTS := $(BPF_OUT)/highspeed.bpf.o $(BPF_OUT)/coupled.bpf.o $(BPF_OUT)/scalable.bpf.o
bpf: $(BPF_OBJECTS) $(BPF_OUT)/mn-bpfcc-loader

$(BPF_OUT)/vmlinux.h: /sys/kernel/btf/vmlinux | deps
	mkdir -p $(BPF_OUT)
	bpftool btf dump file $< format c > $@.tmp
	mv $@.tmp $@

# RFC 3649's Appendix B table, from the rows in bpf/rfc3649_appendix_b.csv.
$(BPF_OUT)/highspeed_table.h: bpf/highspeed_table.py bpf/rfc3649_appendix_b.csv
	mkdir -p $(BPF_OUT)
	$(PYTHON) $< > $@.tmp
	mv $@.tmp $@

# -mcpu=v3: 32-bit atomics (a subflow takes its slot with a compare-and-swap).
$(BPF_OUT)/%.bpf.o: bpf/%.bpf.c bpf/cc.h $(BPF_OUT)/vmlinux.h $(BPF_OUT)/highspeed_table.h
	clang -g -O2 -Wall -Werror -mcpu=v3 -target bpf -D__TARGET_ARCH_x86 -I$(BPF_OUT) -Ibpf -c $< -o $@

$(BPF_OUT)/mn-bpfcc-loader: bpf/loader.c | deps
	mkdir -p $(BPF_OUT)
	cc -O2 -Wall -Wextra -Werror -o $@ $< -lbpf

test: deps build bpf
	@# Style first: the tree stays formatted (rustfmt.toml) and free of clippy warnings.
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --release -- -D warnings
	cargo test --workspace --profile testing
	@# pytest exits 5 when it collected no test: that must fail loudly, not pass.
	status=0; $(BIN)/pytest -q tests || status=$$?; \
	if [ $$status -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi; \
	exit $$status

# The documentation site (docsite/mkdocs.yml): docs/, the README as its home page, BENCHMARKS.md
# and a CLI reference generated from the CLI (hence `build`), into target/site. DOCS_BUILD is
# also what tests/test_docs_site.py runs.
DOCS_BUILD := $(BIN)/mkdocs build --strict -f docsite/mkdocs.yml
docs: build
	$(DOCS_BUILD)
	@echo "docs: open target/site/index.html, or for the search serve it: python3 -m http.server -d target/site"

# The flagship experiment: the milliProxy study, quick variant (about six minutes on 2 cores):
# CUBIC over the mmWave route without a proxy and with milliProxy at the gNB under its default
# policy (calibrated) and the published one (bdp), paired on 30 seeds; a verdict and the table
# on the terminal, page in runs/demo/index.html.
demo: build
	$(BIN)/millinet study milliproxy --quick --out runs/demo

# The channel against TR 38.901 §7.8.1's large-scale calibration (docs/models/channel.md §13):
# UMa and UMi at 30 GHz, 11,400 UEs each, CDFs against the 3GPP baseline; a few seconds.
calibrate: build
	$(BIN)/millinet calibrate --out runs/calibration

# The full milliProxy study (docs/studies.md, 5600 runs, 50 paired seeds per point, both policies;
# about 45 minutes on 2 cores).
study: build
	$(BIN)/millinet study milliproxy --out runs/study-milliproxy

# The full high-speed train study (docs/studies.md#train, 800 runs of 60 s, 10 paired seeds per point;
# about 50 minutes on 2 cores: one seed's 80 runs took 5 min 8 s, 596 s of run time on 2 workers).
# Not in CI; `millinet study train --quick` (24 runs of 20 s, about 30 s) is, in `make test`.
study-train: build
	$(BIN)/millinet study train --out runs/study-train

# The full MP-TCP study (docs/studies.md#mptcp, 600 runs of 60 s, 10 paired seeds per point, about 30 min on 2 cores).
# Not in CI; `millinet study mptcp --quick` (15 runs of 3 s, under a minute) is, in `make test`.
study-mptcp: build
	$(BIN)/millinet study mptcp --out runs/study-mptcp

# The full end-to-end study (docs/studies.md#e2e, 190 runs: blockers, buildings, outages, drive and
# pedestrian traces, 10 seeds): 204 s on 2 cores (measured, beside two fuzzers at nice 19).
# Not in CI; `millinet study e2e --quick` (11 runs, about 15 s) is, in `make test`.
study-e2e: build
	$(BIN)/millinet study e2e --out runs/study-e2e

# The full link-level retransmission study (docs/studies.md#lower-layer, 640 runs of 10 s, 10 seeds):
# 149 s on 2 cores with the analysis (measured 2026-11-24, beside a cargo build). Not in CI;
# `millinet study lower-layer --quick` (32 runs of 5 s, about 10 s) is, in `make test`.
study-lower-layer: build
	$(BIN)/millinet study lower-layer --out runs/study-lower-layer

# The full dense-urban study (docs/studies.md#urban, 40 runs of 10 s: ten UEs on one cell, four CCs,
# 10 seeds): 164 s on 2 cores with the analysis (measured 2026-11-24, beside a cargo build; a
# run takes 2.2-3.5 s on one core, BBR the slowest). Not in CI; `millinet study urban --quick`
# (4 runs of 5 s, about 20 s) is, in `make test`.
study-urban: build
	$(BIN)/millinet study urban --out runs/study-urban

# Several flows per UE against RAPID (docs/studies.md, 320 runs of 10 s, 20 seeds; about 40 s).
# The dense urban street grid (docs/studies.md#dense, 18 runs of 10 s: 8 interfering cells,
# 100 UEs; about 12 minutes on 2 cores). `millinet study dense --quick` is in `make test`.
study-dense: build
	$(BIN)/millinet study dense --out runs/study-dense

study-multiflow: build
	$(BIN)/millinet study multiflow --out runs/study-multiflow

# The full split-proxy study (docs/studies.md#spep-emulation, 1280 one-file downloads in runs of up to 60 s:
# LTE and three mmWave λ x proxy or none x near/far server x 4 file sizes, 20 seeds): 40 s
# on 2 cores with the analysis (measured 2026-11-24). Not in CI; `millinet study spep-emulation --quick` (80 runs,
# about 10 s) is, in `make test`.
study-spep-emulation: build
	$(BIN)/millinet study spep-emulation --out runs/study-spep-emulation

# The full L4S study (docs/studies.md#l4s, 3200 runs of 10 s: D_RS x B_RLC x CUBIC/BBR/DCTCP/Prague x
# drop-tail, CoDel, DualPI2, milliProxy and milliProxy over DualPI2, 20 paired seeds). Not in CI;
# `millinet study l4s --quick` (120 runs of 4 s, about 20 s) is, in `make test`.
study-l4s: build
	$(BIN)/millinet study l4s --out runs/study-l4s

# The full web study (docs/studies.md: headless Chromium's page load time over the emulated
# milliproxy route, 4 pages x LOS/obstacles x no proxy/milliProxy/split, 10 seeds: 60 emulations,
# 7 min 49 s measured 2026-11-28; root). Not in CI; `millinet study web --quick` (12 runs, about 1.5 minutes) is.
study-web: build
	$(BIN)/millinet study web --out runs/study-web

# Every full study of the simulator, then one page linking them all (runs/index.html); the web
# study runs the emulator (root): `make study-web` on its own.
studies: study study-train study-mptcp study-e2e study-lower-layer study-urban study-dense study-multiflow study-spep-emulation study-l4s
	$(BIN)/millinet studies --index runs

# Issue 7's figures in one run (BENCHMARKS.md): speed against ns-3 on the dumbbell, real time
# and memory on the milliproxy route, the study's core grid on 2 cores. About 45 minutes: ns-3
# runs once per rate, 2 simulated seconds each, about 3 minutes at 1 Gbit/s and 30-35 at 3.
bench: build deps
	bash bench/run.sh

# Only the milliProxy study's core grid (800 runs on 2 workers, about five minutes).
bench-study: build
	bash bench/run.sh --study

# Only the train run (d): one UE past four mmWave gNBs and an LTE anchor, 60 s, MSS 1400 and
# 14000, median of 3 runs each (about four minutes).
bench-train: build
	bash bench/run.sh --train --runs 3

# Only the mptcp runs (e): 10 s of LIA over 28 GHz + LTE and over 28 + 73 GHz against
# single-path CUBIC, median of 3 runs each (about two minutes).
bench-mptcp: build
	bash bench/run.sh --mptcp --runs 3

# Only the urban runs (f): 10 s of the urban scenario with 10 and with 100 UEs on one cell,
# median of 3 runs each (about 40 seconds).
bench-urban: build
	bash bench/run.sh --urban --runs 3

# Only the dense-urban runs (j): 10 s of 8 interfering cells and 100 UEs, with and without
# interference, one run each (about a minute and a half).
bench-dense: build
	bash bench/run.sh --dense --runs 1

# How speed grows with the UEs (issue 38; about ten minutes): fresh `millinet run` processes
# of the urban cell with 10 and 100 UEs and of 1000 dense-urban UEs over 24 cells (1 s), then
# the urban cell with 10 to 1000 UEs, all downloading or 10 of them; writes
# docs/img/benchmarks/scale.png (BENCHMARKS.md shows it).
bench-scale: build
	.venv/bin/python bench/scale.py

# Only the instruction counts of `make bench` (callgrind; about two minutes): the dumbbell at
# 1 Gbit/s and the milliproxy route with and without milliProxy, 10 s each.
bench-instructions: build deps
	bash bench/run.sh --instructions

# Only millinet's own speed figures of `make bench` (issue 21; a few minutes): the dumbbell at
# 1 and 3 Gbit/s and the milliproxy route with and without milliProxy, 10 s each, the median
# event-loop wall time of 5 runs in one process (warm) and of 5 `millinet run` processes (fresh).
bench-speed: build
	bash bench/run.sh --speed

# Only the emulator's figures of `make bench` (root; about a minute of real time).
bench-emulator: build
	.venv/bin/python bench/emulator.py

# The simulator against the emulator (real Linux TCP) on all 17 shipped scenarios at their
# own durations, same seed (root; about 12 minutes): the table of docs/validation.md,
# "Simulator and emulator on every scenario".
parity: build
	.venv/bin/python bench/parity.py

# The proxy daemon's forwarding rate (root; about half a minute): 400 MB of kernel TCP through a
# router namespace without the daemon, and through the daemon pinned to one core with the flow
# passed through and proxied; Gbit/s and packets/s (docs/proxyd.md).
bench-proxyd: deps
	cargo test --release -p millinet-proxyd --test daemon -- --ignored --exact bench_forwarding_rate --nocapture

# The daemon's packet path under ten million short flows of a million UEs: resident memory
# every million flows (BENCHMARKS.md, "milliProxy's memory under churn").
bench-proxyd-churn:
	cargo test --release -p millinet-proxyd --test churn -- --ignored --exact soak_rss_stays_flat --nocapture

# millinet against ns-3 on the dumbbell, every case of issue 4 (slow: run it by hand);
# `make test` runs a subset. Results and plots in runs/crosscheck, see docs/validation.md.
crosscheck: deps build
	$(BIN)/python crosscheck/run.py --out runs/crosscheck

# The simulator against real Linux TCP through the emulator (root): dumbbell 100 Mbit/s and
# 1 Gbit/s, constant and switching, 1 and 0.1 BDP, CUBIC and NewReno, the milliproxy route
# for two seeds, and kernel MPTCP (two scenarios, four controls, two seeds); about 13 minutes.
# `make test` runs a subset. Table and cwnd overlays in runs/crosscheck-linux, results in
# docs/validation.md.
crosscheck-linux: deps build
	$(BIN)/python crosscheck/linux.py --out runs/crosscheck-linux

# Figure (b) of `make bench` (the milliproxy route with and without milliProxy) for this build
# against the build of commit REF, runs interleaved in one sitting (a few minutes plus REF's build).
REF ?= HEAD~1
bench-route: build
	bash bench/route_against.sh $(REF)

# Every fuzz target for FUZZ_SECONDS each at the lowest CPU priority: the cargo-fuzz ones
# (installs cargo-fuzz if missing; needs the nightly toolchain) and the Python ones under
# Atheris in the venv; prints the executions each reached.
# FUZZ_TARGETS names a subset. docs/reliability.md records what the targets reached.
FUZZ_SECONDS ?= 120
FUZZ_TARGETS ?=
fuzz: build
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh $(FUZZ_TARGETS)

# Merges what `make fuzz` found into the checked-in corpora (fuzz/corpus, replayed by `make test`).
fuzz-corpus: build
	fuzz/run.sh --minimise $(FUZZ_TARGETS)
