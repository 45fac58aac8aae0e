#!/usr/bin/env bash
# Runs every fuzz target (or those named) for FUZZ_SECONDS each, at the lowest CPU
# priority, and prints the executions each reached: the cargo-fuzz targets of Cargo.toml
# and the Python ones, python/<target>.py under Atheris (the project's venv, `make build`).
# New inputs go to fuzz/work/<target> (not checked in); crashes to fuzz/artifacts/<target>. With --minimise, merges what a
# target reached into fuzz/corpus/<target> instead, keeping at most FUZZ_CORPUS_FILES
# inputs (libFuzzer's merge keeps those that add coverage; of those, a spread of sizes).
set -euo pipefail
cd "$(dirname "$0")"

seconds=${FUZZ_SECONDS:-120}
keep=${FUZZ_CORPUS_FILES:-40}
minimise=false
if [[ ${1:-} == --minimise ]]; then minimise=true; shift; fi
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -vx millinet-fuzz; for f in python/*.py; do basename "$f" .py; done)
fi

# Runs target $1 under libFuzzer: the folders and -flags that follow are libFuzzer's.
run_target() {
  local t=$1 dirs=() flags=()
  shift
  for a in "$@"; do if [[ $a == -* ]]; then flags+=("$a"); else dirs+=("$a"); fi; done
  if [[ -f python/$t.py ]]; then
    mkdir -p "artifacts/$t"
    # libFuzzer's -merge runs the target again as argv[0]: the script (executable, its
    # shebang finding the venv's python first on PATH).
    PATH="$(cd .. && pwd)/.venv/bin:$PATH" nice -n 19 "python/$t.py" -artifact_prefix="artifacts/$t/" "${flags[@]}" "${dirs[@]}"
  else
    nice -n 19 cargo +nightly fuzz run -O -a -s none "$t" "${dirs[@]}" -- "${flags[@]}"
  fi
}

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

failed=()
for t in "${targets[@]}"; do
  mkdir -p "work/$t" "corpus/$t"
  if $minimise; then
    rm -rf "work/$t.merged" && mkdir "work/$t.merged"
    run_target "$t" "work/$t.merged" "corpus/$t" "work/$t" -merge=1 2>"work/$t.merge.log"
    rm -f "corpus/$t"/*
    # Evenly across sizes: the smallest inputs alone are trivial ones.
    mapfile -t by_size < <(ls -S -r "work/$t.merged")
    n=${#by_size[@]}
    for ((i = 0; i < (n < keep ? n : keep); i++)); do
      f=${by_size[i * n / (n < keep ? n : keep)]}
      cp "work/$t.merged/$f" "corpus/$t/$f"
    done
    echo "$t: $(ls "corpus/$t" | wc -l) corpus files, $(du -s --apparent-size --block-size=1 "corpus/$t" | cut -f1) bytes"
    continue
  fi
  log="work/$t.log"
  if run_target "$t" "work/$t" "corpus/$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=60 >"$log" 2>&1; then
    status=ok
  else
    status="FAILED (see fuzz/$log and fuzz/artifacts/$t)"
    failed+=("$t")
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  echo "$t: ${execs:-?} executions in ${seconds} s: $status"
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "failed: ${failed[*]}" >&2
  exit 1
fi
