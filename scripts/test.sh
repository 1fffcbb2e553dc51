#!/usr/bin/env bash
# Set up, lint, then run the test suite on both cores and print the 15 slowest tests.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bash scripts/test.sh [--all | --slow] [--serial] [PATH ...] [-- PYTEST_ARGS ...]

  (no option)   the default suite: every test but those marked slow (about 10 minutes on 2 cores)
  --all         every test, the slow ones included
  --slow        only the tests marked slow (minute-long learning comparisons, pages as written)
  --serial      one process instead of one per core (pytest-xdist)
  PATH          test files or folders to run instead of tests/
  -- ARGS       anything after -- goes to pytest as it is (e.g. -- -k sac -x)
  -h, --help    this message
EOF
}

marker="not slow"
workers=2
paths=()
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --all) marker="" ;;
    --slow) marker="slow" ;;
    --serial) workers=0 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "test.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) paths+=("$1") ;;
  esac
  shift
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/bootstrap.sh"
cd "$root"
export JAX_PLATFORMS=cpu
.venv/bin/ruff check src tests benchmarks examples

parallel=()
if [ "$workers" -gt 0 ]; then
  # One file per worker keeps a module's shared programs (module-scoped fixtures) compiled once.
  parallel=(-n "$workers" --dist loadfile)
fi
exec .venv/bin/python -m pytest -q -m "$marker" --durations=15 --durations-min=1 "${parallel[@]}" \
  "${paths[@]}" "${extra[@]}"
