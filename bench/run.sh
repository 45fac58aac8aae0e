#!/usr/bin/env bash
# Benchmarks, run by `make bench` (after `make build`). Prints figures and the command.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python bench/simulator.py "$@"
# The emulator (root only; the whole `make bench`, not its partial variants).
if [ $# -eq 0 ] && [ "$(id -u)" -eq 0 ]; then .venv/bin/python bench/emulator.py; fi
