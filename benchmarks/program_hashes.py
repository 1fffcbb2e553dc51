"""Print a hash of each agent's compiled run program, to show a change left the defaults as they were.

Each named agent (all registered ones by default) is built tiny (`tests/kit.py`) and trained
for 256 steps on two seeds; the run program's StableHLO, printed without debug information
(so moved source lines do not count), is hashed. Two checkouts that print the same hash for an
agent run the same arithmetic for it, so its speed cannot have moved. Run from a checkout's
root, for example against an older commit cloned to OLD:

    PYTHONPATH=OLD/src:OLD python benchmarks/program_hashes.py PPO SAC
    PYTHONPATH=src:. python benchmarks/program_hashes.py PPO SAC
"""

from __future__ import annotations

import hashlib
import sys
from typing import Any

from tests.kit import tiny_agent

from ajax.agents import base
from ajax.agents.registry import AGENTS


def program_hashes(names: list[str]) -> dict[str, tuple[str, int]]:
    """Each agent's (hash, lines) of the program its tiny run compiles."""
    hashes: dict[str, tuple[str, int]] = {}
    built = base.ActorCritic._program

    def hashed(self: Any, one_seed: Any, placement: Any = base.ONE_DEVICE) -> Any:
        program = built(self, one_seed, placement)

        def call(*args: Any) -> Any:
            text = program.lower(*args).as_text(debug_info=False)
            hashes[self.name] = (hashlib.sha256(text.encode()).hexdigest()[:12], text.count("\n"))
            return program(*args)

        return call

    base.ActorCritic._program = hashed
    try:
        for name in names:
            tiny_agent(name).train(seed=[0, 1], n_timesteps=256)
    finally:
        base.ActorCritic._program = built
    return hashes


if __name__ == "__main__":
    for name, (digest, lines) in program_hashes(sys.argv[1:] or sorted(AGENTS)).items():
        print(f"{name:16} {digest}  ({lines} lines)")
