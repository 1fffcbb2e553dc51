"""benchmarks/world_models/chunks.py: a run in calls of an evaluation period steps as its one call does."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from tests.benchmark_scripts import load_benchmark

chunks = load_benchmark("world_models/chunks")

ROWS_A_STEP = 4  # a call runs whole env steps of this many rows, as an agent with 4 env copies


def state_at(timestep: int) -> SimpleNamespace:
    return SimpleNamespace(collector_state=SimpleNamespace(timestep=np.array([timestep, timestep])))


def fake_call(calls: list[int]):
    """`train` as the loop counts it: a call from t asked for n rows runs (t + n) // 4 - t // 4 steps."""

    def call(n_timesteps: int, initial_state: SimpleNamespace | None = None) -> chunks.Chunk:
        start = 0 if initial_state is None else int(initial_state.collector_state.timestep[0])
        calls.append(n_timesteps)
        assert len(calls) < 50, "the run keeps calling train"
        steps = (start + n_timesteps) // ROWS_A_STEP - start // ROWS_A_STEP
        return chunks.Chunk(state_at(start + steps * ROWS_A_STEP), {}, exec_s=0.0)

    return call


def no_record(progress, chunk) -> None:
    del progress, chunk


@pytest.fixture
def saved(monkeypatch):
    """States kept in a dict, their files empty (the engine imports ajax.checkpoint's functions at call time)."""
    import ajax.checkpoint

    store = {}

    def save(state, path, agent=None):
        store[path] = state
        path.touch()

    monkeypatch.setattr(ajax.checkpoint, "save_checkpoint", save)
    monkeypatch.setattr(ajax.checkpoint, "restore_into", lambda skeleton, path, agent=None: store[path])
    return store


def test_the_calls_end_where_the_one_call_ends_though_a_target_is_not_a_whole_step(tmp_path, saved, capsys):
    """Horizon 10 in periods of 3 with steps of 4 rows: the one call stops at 8; the chunked run asks
    for 3, 6, 5 and 2 rows (the first and last run no step) and stops there too, not asking forever."""
    horizon, every = 10, 3
    whole = fake_call([])(n_timesteps=horizon).state.collector_state.timestep[0]
    calls: list[int] = []
    checkpoint = chunks.Checkpoint(tmp_path / "run.ckpt", tmp_path / "run.json")
    progress = chunks.fresh_progress({"run": "test"})
    state = chunks.train_in_chunks(
        fake_call(calls), progress, horizon, every, chunks.Clock(None), checkpoint, None, no_record, "test"
    )
    assert state.collector_state.timestep[0] == whole == 8
    assert calls == [3, 6, 5, 2]
    assert progress["target"] == horizon and progress["timestep"] == 8 and progress["chunks"] == 4
    assert "chunk 4 to 8 rows" in capsys.readouterr().out


def test_a_stopped_run_resumes_from_its_checkpoint_and_refuses_a_mismatched_one(tmp_path, saved, capsys):
    checkpoint = chunks.Checkpoint(tmp_path / "run.ckpt", tmp_path / "run.json")
    identity = {"run": "test", "seeds": [0, 1]}
    progress = chunks.fresh_progress(identity)
    clock = chunks.Clock(0)  # one chunk a command
    calls: list[int] = []
    assert chunks.train_in_chunks(fake_call(calls), progress, 12, 4, clock, checkpoint, None, no_record, "t") is None
    assert calls == [4] and "stopped at 4 of 12 rows" in capsys.readouterr().out

    resumed = chunks.read_progress(checkpoint.progress, identity, {"run": "--run", "seeds": "--seeds"})
    assert resumed == progress
    state = chunks.train_in_chunks(
        fake_call(calls),
        resumed,
        12,
        4,
        chunks.Clock(None),
        checkpoint,
        None,
        no_record,
        "t",
        scale=2,
        unit="env steps",
    )
    assert state.collector_state.timestep[0] == 12 and calls == [4, 0, 4, 4]  # the skeleton's empty call, then two
    assert "resumed at 8 env steps" in capsys.readouterr().out

    with pytest.raises(chunks.CheckpointMismatchError, match="--seeds"):
        chunks.read_progress(
            checkpoint.progress, {"run": "test", "seeds": [0, 1, 2]}, {"run": "--run", "seeds": "--seeds"}
        )


def test_a_calls_unfilled_evaluation_slots_are_left_out_of_each_seeds_values():
    evaluations = {
        "timestep": np.array([[100, 200, -1], [100, 200, -1]]),  # two seeds, the third slot unreached
        "return": np.array([[1.5, 2.5, 0.0], [3.5, 4.5, 0.0]]),
    }
    assert chunks.filled_per_seed(evaluations) == {
        "timestep": [[100, 200], [100, 200]],
        "return": [[1.5, 2.5], [3.5, 4.5]],
    }


def test_a_timed_chunk_keeps_the_calls_outputs_and_times_its_compile_apart():
    import jax
    import jax.numpy as jnp

    load_benchmark("perf_bench")  # the module timed_chunk imports, as the scripts find it
    program = jax.jit(lambda x: x * 3.0)

    def train():
        return program(jnp.arange(4.0)), {"timestep": np.array([[8]])}

    chunk, timing = chunks.timed_chunk(train)
    np.testing.assert_array_equal(chunk.state, [0.0, 3.0, 6.0, 9.0])
    assert chunk.evaluations["timestep"].tolist() == [[8]]
    assert chunk.compile_s == timing["compile_spans_s"] > 0 and chunk.exec_s == timing["exec_s"] > 0
    assert "out" not in timing and timing["exec_from"] == "first call less its compile spans"


def test_a_checkpoint_cadence_defers_saves_but_saves_where_the_command_stops_and_where_the_run_ends(
    tmp_path, saved, capsys, monkeypatch
):
    """With `save_minutes` the chunks between checkpoints are not written; the state where the clock
    stops the command is, with the progress that describes it, so the next command resumes there."""
    now = [0.0]
    monkeypatch.setattr(chunks.time, "perf_counter", lambda: now[0])

    def ticking_call(calls):
        inner = fake_call(calls)

        def call(n_timesteps, initial_state=None):
            now[0] += 60.0 if n_timesteps else 0.0  # each chunk a minute, a resumed run's skeleton nothing
            return inner(n_timesteps, initial_state)

        return call

    checkpoint = chunks.Checkpoint(tmp_path / "run.ckpt", tmp_path / "run.json")
    identity = {"run": "test"}
    progress = chunks.fresh_progress(identity)
    clock = chunks.Clock(2.5, save_minutes=10)  # a command stops after three one-minute chunks
    calls: list[int] = []
    assert chunks.train_in_chunks(ticking_call(calls), progress, 40, 4, clock, checkpoint, None, no_record, "t") is None
    out = capsys.readouterr().out
    assert calls == [4, 4, 4] and out.count("checkpoint deferred") == 3
    assert "checkpointed 12 rows" in out and "stopped at 12 of 40 rows" in out
    assert saved[checkpoint.state].collector_state.timestep[0] == 12

    resumed = chunks.read_progress(checkpoint.progress, identity, {"run": "--run"})
    assert resumed["timestep"] == 12 and resumed["chunks"] == 3
    clock = chunks.Clock(None, save_minutes=2)  # due every second chunk, and at the end
    state = chunks.train_in_chunks(ticking_call(calls), resumed, 28, 4, clock, checkpoint, None, no_record, "t")
    out = capsys.readouterr().out
    assert state.collector_state.timestep[0] == 28 and calls[3:] == [0, 4, 4, 4, 4]
    assert out.count("checkpoint deferred") == 2 and out.count("saved") == 2  # chunks 5 and 7 (the end)
    assert saved[checkpoint.state].collector_state.timestep[0] == 28


def test_open_checkpoint_reads_a_runs_progress_and_stops_the_script_on_a_mismatch(tmp_path):
    identity, flags = {"run": "test", "seeds": [0, 1]}, {"run": "--run", "seeds": "--seeds"}
    assert chunks.open_checkpoint(None, "run", identity, flags, "script.py") == (None, None)
    checkpoint, progress = chunks.open_checkpoint(tmp_path, "run", identity, flags, "script.py")
    assert checkpoint == chunks.Checkpoint(tmp_path / "run.ckpt", tmp_path / "run.json") and progress is None
    chunks.write_json(checkpoint.progress, chunks.fresh_progress(identity))
    assert chunks.open_checkpoint(tmp_path, "run", identity, flags, "script.py")[1]["identity"] == identity
    with pytest.raises(SystemExit, match=r"^script.py: .*--seeds"):
        chunks.open_checkpoint(tmp_path, "run", {**identity, "seeds": [0, 1, 2]}, flags, "script.py")
