#!/usr/bin/env bash
# Benchmarks, run by `make bench` (after `make build`). Prints figures and the command.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python bench/simulator.py "$@"
