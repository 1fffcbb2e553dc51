#!/usr/bin/env bash
# Create .venv at the repository root from the committed lock file (once per lock change).
# AJAX_ACCELERATOR=cuda12, cuda13 or tpu also installs that JAX build at the locked JAX version;
# empty (the default) keeps the lock's CPU build.
set -euo pipefail
accelerator="${AJAX_ACCELERATOR:-}"
case "$accelerator" in
  "" | cuda12 | cuda13 | tpu) ;;
  *)
    echo "bootstrap.sh: AJAX_ACCELERATOR=$accelerator is not one of cuda12, cuda13 or tpu" \
      "(leave it empty for the CPU)." >&2
    exit 2
    ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
stamp=".venv/.lock-sha256"
built_for=".venv/.accelerator"  # the accelerator the environment was built for, empty for the CPU
want="$({ sha256sum requirements.lock pyproject.toml; echo "AJAX_ACCELERATOR=$accelerator"; } | sha256sum | cut -d' ' -f1)"
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "Setting up .venv from requirements.lock${accelerator:+ with JAX for $accelerator} ..." >&2
  clear=()
  if [ -x .venv/bin/python ] && [ "$(cat "$built_for" 2>/dev/null)" != "$accelerator" ]; then
    # Installing over another accelerator's environment would keep its plugin, which JAX would still load.
    clear=(--clear)
  fi
  "$python" -m venv "${clear[@]}" .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r requirements.lock
  if [ -n "$accelerator" ]; then
    jax_version="$(sed -n 's/^jax==//p' requirements.lock)"
    if [ -z "$jax_version" ]; then
      echo "bootstrap.sh: requirements.lock pins no jax version to install jax[$accelerator] at." >&2
      exit 1
    fi
    .venv/bin/python -m pip install --quiet "jax[$accelerator]==$jax_version"
  fi
  .venv/bin/python -m pip install --quiet --no-deps -e .
  echo "$accelerator" > "$built_for"
  echo "$want" > "$stamp"
fi
