#!/usr/bin/env bash
# Builds millinet at commit $1 into a temporary folder and runs bench/route_against.py
# against it (make bench-route REF=<commit>).
set -euo pipefail
cd "$(dirname "$0")/.."
ref=$(git rev-parse --verify "${1:?usage: route_against.sh COMMIT}^{commit}")
work=$(mktemp -d)
trap 'git worktree remove --force "$work/src" 2>/dev/null || true; rm -rf "$work"' EXIT
git worktree add --quiet --detach "$work/src" "$ref"
(cd "$work/src" && CARGO_TARGET_DIR="$PWD/../target" "$OLDPWD/.venv/bin/maturin" build --release --quiet -o "$work/wheel")
.venv/bin/pip install --quiet --no-deps --target "$work/reference" "$work"/wheel/*.whl
echo "reference: $ref"
.venv/bin/python bench/route_against.py --reference "$work/reference"
