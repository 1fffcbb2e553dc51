#!/usr/bin/env bash
# Set up, then train the default PPO on CartPole-v1 over three seeds and show the result.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/bootstrap.sh"
cd "$root"
exec .venv/bin/ajax train PPO CartPole-v1 --seeds 3 --timesteps 100000 --out runs/demo "$@"
