#!/usr/bin/env bash
# Runs lsm-tree's own test suites (unit and integration) on the patched copy in
# vendor/lsm-tree. Its tests/ come from the upstream repository at commit
# aba7320e (3.1.9 plus the merges 3.1.10 was cut from): the published crate
# leaves them out. Builds in its own target directory (a few minutes).
set -euo pipefail
cd "$(dirname "$0")/lsm-tree"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${TMPDIR:-/tmp}/freight-lsm-tree-target}"
cargo test --release --lib --tests "$@"
