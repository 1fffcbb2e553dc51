#!/usr/bin/env bash
# Set up, then lint and run the default test suite (tests marked slow are left out; add -m slow for them).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/bootstrap.sh"
cd "$root"
export JAX_PLATFORMS=cpu
.venv/bin/ruff check src tests benchmarks
exec .venv/bin/python -m pytest -q "$@"
