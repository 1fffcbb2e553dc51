"""The persistent compile cache: where it lives, how it is switched off, how it is pruned."""

import os
import subprocess
import sys
import time

import jax
import jaxlib

from ajax import _compile_cache
from tests.conftest import USERS_XLA_FLAGS

# The suite compiles with XLA's optimisations off (conftest.py); what the cache stores
# depends on how long a compile takes (at least 0.5 s), so these processes compile as users'
# do. With optimisations off, a small program's compile lands near that bar, and a second
# process stored one the first had not (a clean-clone run of 5308dab).
AS_USERS_COMPILE = {"JAX_PLATFORMS": "cpu", "JAX_DISABLE_MOST_OPTIMIZATIONS": "0", "XLA_FLAGS": USERS_XLA_FLAGS}


def run_python(code: str, **env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **AS_USERS_COMPILE, **env},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_import_points_jax_at_a_per_version_subdirectory(tmp_path):
    out = run_python(
        "import ajax, jax; print(jax.config.jax_compilation_cache_dir)",
        AJAX_JAX_COMPILE_CACHE_DIR=str(tmp_path),
        AJAX_NO_COMPILE_CACHE="",
    )
    assert out.startswith(str(tmp_path))
    name = os.path.basename(out)
    assert f"jax{jax.__version__}" in name and f"jaxlib{jaxlib.__version__}" in name
    assert "py{}.{}".format(*sys.version_info[:2]) in name
    assert name == _compile_cache.cache_subdirectory()


def test_the_cache_can_be_switched_off(tmp_path):
    out = run_python(
        "import ajax, jax; print(jax.config.jax_compilation_cache_dir)",
        AJAX_JAX_COMPILE_CACHE_DIR=str(tmp_path),
        AJAX_NO_COMPILE_CACHE="1",
    )
    assert out == "None"
    assert not any(tmp_path.iterdir())


def test_the_tally_counts_only_while_open():
    from jax import monitoring

    with _compile_cache.CompileTally() as tally:
        monitoring.record_event_duration_secs(_compile_cache.BACKEND_COMPILE, 2.0)
        monitoring.record_event_duration_secs(_compile_cache.BACKEND_COMPILE, 0.5)
        monitoring.record_event(_compile_cache.CACHE_HIT)
        monitoring.record_event_duration_secs(_compile_cache.TIME_SAVED, 3.0)
        monitoring.record_event_duration_secs(_compile_cache.CACHE_READ, 0.25)
        monitoring.record_event(_compile_cache.CACHE_WRITE)
    monitoring.record_event(_compile_cache.CACHE_HIT)  # after the context: not counted
    assert (tally.programs, tally.loaded, tally.stored) == (2, 1, 1)
    assert tally.summary() == (
        "XLA programs: 1 compiled in 2.2 s, 1 loaded from the compile cache (3.0 s of compiling saved); "
        "1 stored for the next run."
    )


def test_prune_deletes_least_recently_used_first(tmp_path):
    now = time.time()
    for index in range(4):
        path = tmp_path / f"entry{index}"
        path.write_bytes(b"x" * 100)
        os.utime(path, (now - 100 * (4 - index), now - 100 * (4 - index)))  # entry0 is the oldest
    removed = _compile_cache.prune(tmp_path, max_bytes=250)
    assert sorted(p.name for p in removed) == ["entry0", "entry1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry2", "entry3"]


def test_a_second_process_loads_an_unlogged_run_and_never_caches_a_logged_one(tmp_path):
    """The same agent, evaluated without a backend and then with TensorBoard, in a fresh process;
    a second process then trains the unlogged run alone."""
    code = (
        "import collections, sys, jax, ajax\n"
        "jax.config.update('jax_explain_cache_misses', True)\n"
        "events = collections.Counter()\n"
        "jax.monitoring.register_event_listener(lambda name, **kw: events.update([name]))\n"
        "from ajax import DQN\n"
        "from ajax.logging.wandb_logging import LoggingConfig\n"
        "agent = DQN('CartPole-v1', architecture=('8', 'relu'), learning_starts=10, batch_size=8, buffer_size=100)\n"
        "for backend in (False, True)[: int(sys.argv[1])]:\n"
        f"    config = LoggingConfig(log_frequency=25, folder={str(tmp_path / 'logs')!r}, use_tensorboard=backend)\n"
        "    events.clear()\n"
        "    with ajax._compile_cache.CompileTally() as tally:\n"
        "        agent.train(seed=0, n_timesteps=50, num_episode_test=1, logging_config=config)\n"
        "    print(*(events[f'/jax/compilation_cache/{name}'] for name in ('compile_requests_use_cache', "
        "'cache_hits', 'cache_misses')))\n"
        "    print(tally.loaded, tally.stored, tally.summary(), file=sys.stderr)\n"
    )
    env = {
        **os.environ,
        **AS_USERS_COMPILE,
        "AJAX_JAX_COMPILE_CACHE_DIR": str(tmp_path / "cache"),
        "AJAX_NO_COMPILE_CACHE": "",
    }
    runs = [
        subprocess.run([sys.executable, "-c", code, programs], capture_output=True, text=True, timeout=300, env=env)
        for programs in ("2", "1")
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert "Not writing persistent cache entry for 'jit_resume' because it uses host callbacks" in runs[0].stderr
    (plain_first, logged), (plain_second,) = (
        [tuple(map(int, line.split())) for line in run.stdout.split("\n") if line] for run in runs
    )
    # (programs looked up, loaded, stored)
    assert plain_first[1] == 0 and plain_first[2] >= 1  # compiled and stored
    assert logged[0] >= 1 and logged[1:] == (0, 0)  # looked up, not found, not stored: compiled every time
    assert plain_second[1] >= 1 and plain_second[2] == 0  # a second process loads it
    # What `ajax train` prints of it counts the same events.
    (first_tally, logged_tally), (second_tally,) = (
        [line for line in run.stderr.splitlines() if "XLA programs:" in line] for run in runs
    )
    assert first_tally.startswith(f"0 {plain_first[2]} ") and "stored for the next run" in first_tally
    assert "loaded" not in logged_tally and "stored" not in logged_tally
    assert second_tally.startswith(f"{plain_second[1]} 0 ") and "loaded from the compile cache" in second_tally
