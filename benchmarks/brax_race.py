"""Brax's own PPO and SAC trainers beside Ajax's at the same settings on a Brax env, on whatever device JAX sees.

One command runs, for each (agent, env) asked for, Brax's trainer (`brax.training.agents.ppo`
or `.sac`, `train`) and then Ajax's agent, each in a fresh process (Ajax's compile cache off,
so each pays its compilation as a new interpreter does), and writes one JSON row per library:
the device, the commit, the settings, the compilation by stage, the execution's steps per
second and the final evaluation's return. Brax is an extra of Ajax and already in its
virtual environment, so no environment of its own is built (`peers.py --brax-runs` runs this).

The settings are Brax's keywords, as its repository publishes them; Ajax's come from them
through `ajax.agents.brax_settings` (`ppo_from_brax`, `sac_from_brax`: docs/brax.md's tables in
code), so a row is the two libraries on one configuration. Where each comes from
(google/brax, `notebooks/training.ipynb`; the notebook's last change is 5294163, 2026-01-14):

    ppo ant       `train_fn['ant']`: 50M steps, 10 evaluations, reward scaling 10, unroll 5,
                  32 minibatches of 2,048 segments, 4 updates a batch, discount 0.97, learning
                  rate 3e-4, entropy 1e-2, 4,096 envs, seed 1; the rest at ppo.train's and
                  make_ppo_networks' defaults (4x32 policy, 5x256 value, swish).
    ppo humanoid  `train_fn['humanoid']`: 50M steps, 10 evaluations, reward scaling 0.1, unroll
                  10, 32 minibatches of 1,024 segments, 8 updates a batch, discount 0.97,
                  learning rate 3e-4, entropy 1e-3, 2,048 envs, seed 1.
    sac humanoid  the notebook's SAC row for humanoid as it stood at ea9e93d (2021-09-24, the
                  last version with one): 1,048,576 x 2.2 steps, reward scaling 100, discount
                  0.99, learning rate 4.5e-4, 128 envs, batches of 512, replay 8,192 to
                  1,048,576, `grad_updates_per_step=0.25`. That was Brax v1's `sac.train`,
                  which made `int(num_envs * grad_updates_per_step)` updates a step of all the
                  copies (brax/training/sac.py at ea9e93d): 32 here, today's
                  `grad_updates_per_step=32`. It evaluated every 131,012 steps (`log_frequency`):
                  18 evaluations over the run, today's `num_evals=19`. Brax's humanoid was v1's
                  then; today's is the `generalized` pipeline's.
    sac ant       Brax publishes no SAC settings for ant (the notebook's history and
                  `datasets/README.md`, whose SAC sweep is halfcheetah's, were read): the
                  notebook's current SAC row for hopper stands in, unchanged: 6,553,600 steps,
                  20 evaluations, reward scaling 30, discount 0.997, learning rate 6e-4, 128
                  envs, batches of 512, 64 updates a step, replay 8,192 to 1,048,576, seed 1.

Compilation and execution, kept apart the same way for both libraries where that can be done:

- Compilation is the union of the spans JAX reports for tracing, lowering and the backend
  compile over the whole `train` call (`compile_spans.py`, as `perf_bench.py` times Ajax), split
  by stage, and the backend compile's seconds by program name (`backend_compile_by_program`:
  Brax's evaluator is `jit(generate_eval_unroll)`, its pmapped programs `jit(_fun)`). For Ajax,
  the evaluation program (`agent.evaluate`, after the run) is timed apart (`eval_compile_s`).
- Ajax's execution is the `train` call less its compile spans (one call: a budget of tens of
  millions of steps is not run twice), the run holding no evaluation.
- Brax's execution is its own timing of each training epoch (`training/walltime`, taken around
  the pmapped epoch and blocked on its result, evaluations outside it), over the epochs after
  the first in whose window no compile span fell. Brax's first epoch always compiles the
  epoch program. The time to the first `progress_fn` call against the time between later calls
  does not separate them: on JAX 0.10 Brax's evaluator compiles again at its second call (the
  sharding of its input changes once), and with the state replicated onto a mesh axis named
  otherwise than Brax's pmaps name theirs the epoch program compiles twice too, so a leg
  between two calls can hold a compile. An epoch's window is read back from the call: it ends
  where the evaluation that follows it began (the call's time less `eval/epoch_eval_time`) and
  lasts Brax's epoch time. When no epoch after the first ran clean, the row falls back to those
  epochs less the compile inside their windows (`exec_from` says which).

Returns: Brax's last `eval/episode_reward` (`num_eval_envs` episodes, actions sampled, Brax's
default `deterministic_eval=False`); Ajax's `agent.evaluate` of the final state over as many
episodes, deterministic (`--ajax-evals in-run` evaluates inside Ajax's run at Brax's
`num_evals` instead, and its execution then includes them).

Resets: Ajax's Brax envs draw a fresh initial state at each episode's end (computed on the
steps where some copy's episode ended), Brax's training wrapper restores each copy's first
state. `--ajax-reset restart` gives Ajax Brax's restart (`make_env(id, fresh_reset=False)`),
so the physics of the two runs is the same work.

Brax 0.14.2's trainers call `jax.device_put_replicated`, which JAX 0.10.2 removed: the Brax
worker puts it back in its own process (`install_device_put_replicated`), never in Ajax.

    python benchmarks/brax_race.py --out                      # all four, published budgets
    python benchmarks/brax_race.py --agents ppo --envs ant --budget-scale 0.1 --out runs/race.jsonl
    JAX_PLATFORMS=cpu python benchmarks/brax_race.py --agents ppo --envs ant --budget 480 \\
        --set num_envs=4 batch_size=4 num_minibatches=2 num_updates_per_batch=1 num_evals=4 \\
        episode_length=50 num_eval_envs=2 "network_factory={'policy_hidden_layer_sizes': (8,), \\
        'value_hidden_layer_sizes': (8,)}"                   # a CPU-sized smoke run
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the sibling benchmark modules, imported where needed
ROOT = HERE.parent
OUT = HERE / "brax_race.jsonl"
AGENTS = ("ppo", "sac")
ENVS = ("ant", "humanoid")
# The axis name Brax's pmaps give their mesh (brax/training/agents/{ppo,sac}/train.py, _PMAP_AXIS_NAME).
BRAX_PMAP_AXIS = "i"


@dataclass(frozen=True)
class Race:
    """One of Brax's published configurations (its trainer's keywords) and where it comes from."""

    agent: str
    env: str
    settings: dict[str, Any]
    source: str


NOTEBOOK = "google/brax notebooks/training.ipynb"
RACES = {
    ("ppo", "ant"): Race(
        "ppo",
        "ant",
        {
            "num_timesteps": 50_000_000,
            "num_evals": 10,
            "reward_scaling": 10,
            "episode_length": 1000,
            "normalize_observations": True,
            "action_repeat": 1,
            "unroll_length": 5,
            "num_minibatches": 32,
            "num_updates_per_batch": 4,
            "discounting": 0.97,
            "learning_rate": 3e-4,
            "entropy_cost": 1e-2,
            "num_envs": 4096,
            "batch_size": 2048,
            "seed": 1,
        },
        f"{NOTEBOOK} train_fn['ant'] (at 5294163), brax 0.14.2's defaults for the rest",
    ),
    ("ppo", "humanoid"): Race(
        "ppo",
        "humanoid",
        {
            "num_timesteps": 50_000_000,
            "num_evals": 10,
            "reward_scaling": 0.1,
            "episode_length": 1000,
            "normalize_observations": True,
            "action_repeat": 1,
            "unroll_length": 10,
            "num_minibatches": 32,
            "num_updates_per_batch": 8,
            "discounting": 0.97,
            "learning_rate": 3e-4,
            "entropy_cost": 1e-3,
            "num_envs": 2048,
            "batch_size": 1024,
            "seed": 1,
        },
        f"{NOTEBOOK} train_fn['humanoid'] (at 5294163), brax 0.14.2's defaults for the rest",
    ),
    ("sac", "humanoid"): Race(
        "sac",
        "humanoid",
        {
            "num_timesteps": int(1048576 * 2.2),
            "num_evals": 19,  # v1's log_frequency=131,012: 18 evaluations over the run
            "reward_scaling": 100,
            "episode_length": 1000,
            "normalize_observations": True,
            "action_repeat": 1,
            "discounting": 0.99,
            "learning_rate": 4.5e-4,
            "num_envs": 128,
            "batch_size": 512,
            "min_replay_size": 8192,
            "max_replay_size": 1048576,
            "grad_updates_per_step": 32,  # v1's 0.25 per copy: int(128 * 0.25) updates a step
            "max_devices_per_host": 8,
        },
        f"{NOTEBOOK} train_fn['humanoid'] at ea9e93d (2021-09-24, Brax v1's sac.train), read in today's keys",
    ),
    ("sac", "ant"): Race(
        "sac",
        "ant",
        {
            "num_timesteps": 6_553_600,
            "num_evals": 20,
            "reward_scaling": 30,
            "episode_length": 1000,
            "normalize_observations": True,
            "action_repeat": 1,
            "discounting": 0.997,
            "learning_rate": 6e-4,
            "num_envs": 128,
            "batch_size": 512,
            "grad_updates_per_step": 64,
            "max_devices_per_host": 1,
            "max_replay_size": 1048576,
            "min_replay_size": 8192,
            "seed": 1,
        },
        f"none published for ant: {NOTEBOOK} train_fn['hopper'] (at 5294163), the newest SAC row, stands in",
    ),
}
# What `--set` may change besides a trainer's keywords: the network factory's layer sizes.
NETWORK_KEYS = {
    "ppo": ("policy_hidden_layer_sizes", "value_hidden_layer_sizes"),
    "sac": ("hidden_layer_sizes",),
}


# Settings -----------------------------------------------------------------------------------------
def parse_overrides(pairs: Iterable[str]) -> dict[str, Any]:
    """`key=value` pairs, each value a Python literal (a bare word stays a string)."""
    overrides = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--set takes key=value pairs, got {pair!r}.")
        try:
            overrides[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            overrides[key] = text
    return overrides


def resolve(
    race: Race, budget: int | None, scale: float, seed: int | None, overrides: dict[str, Any]
) -> dict[str, Any]:
    """The race's Brax keywords with the budget (`--budget`, times `--budget-scale`), the seed and
    the `--set` overrides applied: those naming the other trainer's keys, or its network's layer
    sizes inside `network_factory`, are left out."""
    settings = dict(race.settings)
    for key, value in overrides.items():
        if key == "network_factory":
            settings[key] = {name: size for name, size in value.items() if name in NETWORK_KEYS[race.agent]}
        elif key in TRAINER_KEYS[race.agent]:
            settings[key] = value
    steps = settings["num_timesteps"] if budget is None else budget
    settings["num_timesteps"] = max(1, round(steps * scale))
    if seed is not None:
        settings["seed"] = seed
    return settings


# The keys of brax 0.14.2's ppo.train and sac.train that --set may give (tests check them against brax).
TRAINER_KEYS = {
    "ppo": frozenset(
        "num_timesteps max_devices_per_host num_envs episode_length action_repeat learning_rate entropy_cost "
        "discounting unroll_length batch_size num_minibatches num_updates_per_batch normalize_observations "
        "reward_scaling clipping_epsilon gae_lambda max_grad_norm normalize_advantage vf_loss_coefficient "
        "bootstrap_on_timeout seed num_evals num_eval_envs deterministic_eval".split()
    ),
    "sac": frozenset(
        "num_timesteps episode_length action_repeat num_envs num_eval_envs learning_rate discounting seed "
        "batch_size num_evals normalize_observations max_devices_per_host reward_scaling tau min_replay_size "
        "max_replay_size grad_updates_per_step deterministic_eval".split()
    ),
}


def check_settings(agent: str, settings: dict[str, Any]) -> str | None:
    """Why these settings cannot race (None: they can)."""
    if settings.get("num_evals", 1) < 3:
        return "num_evals must be at least 3: Brax's first epoch compiles, execution is timed over the later ones"
    if agent == "sac" and settings.get("min_replay_size", 0) >= settings["num_timesteps"]:
        return "Brax's SAC trains nothing with min_replay_size >= num_timesteps: lower it with --set min_replay_size="
    return None


def brax_call(agent: str, settings: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the trainer's keywords, the network factory's) from a race's settings."""
    keywords = dict(settings)
    network = dict(keywords.pop("network_factory", None) or {})
    return keywords, network


# Brax's epochs -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Progress:
    """One `progress_fn` call: when (time.time()), the step, Brax's cumulative epoch time, the
    evaluation's time and return."""

    at: float
    step: int
    walltime: float | None
    eval_s: float
    episode_reward: float


def overlap(window: tuple[float, float], spans: Iterable[tuple[float, float]]) -> float:
    """Seconds of `window` covered by the union of `spans`."""
    from compile_spans import union_length

    start, end = window
    return union_length((max(s, start), min(e, end)) for s, e in spans if e > start and s < end)


def brax_epochs(calls: Sequence[Progress], spans: Sequence[tuple[float, float]]) -> list[dict[str, Any]]:
    """Each training epoch after the first: its steps, Brax's time for it and the compile inside it."""
    trained = [call for call in calls if call.step > 0 and call.walltime is not None]
    epochs = []
    for previous, current in zip(trained, trained[1:], strict=False):
        seconds = current.walltime - previous.walltime
        end = current.at - current.eval_s
        compiled = overlap((end - seconds, end), spans)
        epochs.append({"steps": current.step - previous.step, "s": round(seconds, 4), "compile_s": round(compiled, 4)})
    return epochs


def brax_execution(epochs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Execution over the epochs after the first that held no compile, or failing any, all of them
    less their compile."""
    clean = [epoch for epoch in epochs if epoch["compile_s"] == 0]
    if clean:
        steps, seconds = sum(e["steps"] for e in clean), sum(e["s"] for e in clean)
        exec_from = f"{len(clean)} of {len(epochs)} epochs after the first, no compile in them"
    elif epochs:
        steps, seconds = sum(e["steps"] for e in epochs), sum(e["s"] - e["compile_s"] for e in epochs)
        exec_from = f"{len(epochs)} epochs after the first less the compile inside them"
    else:
        return {"exec_s": None, "exec_steps": 0, "exec_steps_per_s": None, "exec_from": "no epoch after the first"}
    seconds = max(seconds, 1e-9)
    return {
        "exec_s": round(seconds, 4),
        "exec_steps": steps,
        "exec_steps_per_s": round(steps / seconds, 1),
        "exec_from": exec_from,
    }


# Workers (each in its own process) --------------------------------------------------------------
def install_device_put_replicated() -> None:
    """Put back `jax.device_put_replicated` (removed in JAX 0.10), which brax 0.14.2's trainers call,
    in this process only.

    The copies are stacked on a leading axis and laid over the devices on a mesh whose axis is
    named as Brax's pmaps name theirs, so the state comes in sharded as the epoch program's
    outputs are: under another name JAX sees a new input type after the first epoch and compiles
    the epoch, and the evaluator, once more.
    """
    import jax
    import numpy as np

    if hasattr(jax, "device_put_replicated"):
        return

    def device_put_replicated(tree: Any, devices: Sequence[Any]) -> Any:
        mesh = jax.sharding.Mesh(np.array(devices), (BRAX_PMAP_AXIS,))
        sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(BRAX_PMAP_AXIS))
        stacked = jax.tree.map(lambda leaf: np.stack([np.asarray(leaf)] * len(devices)), tree)
        return jax.device_put(stacked, sharding)

    jax.device_put_replicated = device_put_replicated


def brax_trainer(agent: str) -> tuple[Any, Callable[..., Any]]:
    """Brax's training module for `agent` ("ppo" or "sac") and its networks' factory, with the
    shim its `train` needs on this JAX in place."""
    install_device_put_replicated()
    if agent == "ppo":
        from brax.training.agents.ppo import networks
        from brax.training.agents.ppo import train as trainer

        return trainer, networks.make_ppo_networks
    from brax.training.agents.sac import networks
    from brax.training.agents.sac import train as trainer

    return trainer, networks.make_sac_networks


def brax_worker(agent: str, env_id: str, settings: dict[str, Any], suite: str = "brax") -> dict[str, Any]:
    """Brax's own trainer on `env_id`, timed: a Brax env, or with `suite="playground"` a Playground
    task wrapped as Playground's own training script wraps it (`wrap_for_brax_training`), on the
    physics Ajax picks for it (`ajax.environments.brax_like.load_playground`)."""
    import functools

    import brax
    from brax import envs

    from compile_spans import STAGES, CompileSpans

    trainer, make_networks = brax_trainer(agent)
    keywords, network = brax_call(agent, settings)
    calls: list[Progress] = []

    def progress(step: int, metrics: dict[str, Any]) -> None:
        walltime = metrics.get("training/walltime")
        calls.append(
            Progress(
                at=time.time(),
                step=int(step),
                walltime=None if walltime is None else float(walltime),
                eval_s=float(metrics.get("eval/epoch_eval_time", 0.0)),
                episode_reward=float(metrics.get("eval/episode_reward", math.nan)),
            )
        )

    if suite == "playground":
        from mujoco_playground import wrapper

        from ajax.environments.brax_like import load_playground

        environment = load_playground(env_id)
        keywords["wrap_env_fn"] = wrapper.wrap_for_brax_training
    else:
        environment = envs.get_environment(env_id)
    with CompileSpans() as spans:
        started_at, start = time.time(), time.perf_counter()
        trainer.train(
            environment=environment,
            progress_fn=progress,
            network_factory=functools.partial(make_networks, **network),
            **keywords,
        )
        whole_s = time.perf_counter() - start
    epochs = brax_epochs(calls, spans.spans)
    steps = calls[-1].step
    return {
        "steps": steps,
        "compile_s": round(min(spans.total(), whole_s), 3),
        **{name: round(spans.total(event), 3) for name, event in STAGES.items()},
        "backend_compile_by_program": spans.slowest_programs(),
        **brax_execution(epochs),
        "epochs": epochs,
        "whole_s": round(whole_s, 3),
        "whole_steps_per_s": round(steps / whole_s, 1),
        "first_progress_s": round(calls[0].at - started_at, 3),
        "final_return": round(calls[-1].episode_reward, 3),
        "returns": [[call.step, round(call.episode_reward, 3)] for call in calls],
        "eval_episodes": int(keywords.get("num_eval_envs", 128)),
        "eval_actions": "deterministic" if keywords.get("deterministic_eval") else "sampled",
        "brax": brax.__version__,
    }


def jsonable(keywords: dict[str, Any]) -> dict[str, Any]:
    """Keywords a row can hold: an initialiser by its name."""
    out = {}
    for key, value in keywords.items():
        if callable(value):
            value = getattr(value, "__qualname__", repr(value)).split(".")[0]
        out[key] = list(value) if isinstance(value, tuple) else value
    return out


def ajax_agent(agent: str, env_id: str, settings: dict[str, Any], reset: str = "fresh") -> tuple[Any, Any]:
    """Ajax's agent at `settings` (through `ajax.agents.brax_settings`), and the run it describes;
    with `reset="restart"` its env restarts each copy's episodes from the copy's first state, as
    Brax's training wrapper does (`make_env(..., fresh_reset=False)`), instead of a fresh draw."""
    from ajax.agents.brax_settings import ppo_from_brax, sac_from_brax
    from ajax.agents.registry import AGENTS as AJAX_AGENTS

    if agent == "ppo":
        run = ppo_from_brax(settings)
    else:
        from brax import envs

        run = sac_from_brax(settings, envs.get_environment(env_id).action_size)
    if reset == "fresh":
        return AJAX_AGENTS[agent.upper()](env_id, **run.keywords), run
    from ajax.environments.create import make_env

    keywords = dict(run.keywords)
    env, params = make_env(env_id, keywords.pop("episode_length", None), fresh_reset=False)
    return AJAX_AGENTS[agent.upper()](env, env_params=params, **keywords), run


def ajax_worker(agent: str, env_id: str, settings: dict[str, Any], evals: str, reset: str = "fresh") -> dict[str, Any]:
    """Ajax's agent on `env_id` at the same settings, timed."""
    import brax
    import numpy as np

    from compile_spans import CompileSpans
    from perf_bench import steps_run, timed

    model, run = ajax_agent(agent, env_id, settings, reset)
    logging = None
    if evals == "in-run":
        from ajax.logging.wandb_logging import LoggingConfig

        logging = LoggingConfig(log_frequency=max(run.log_frequency, 1))
    train = {"n_timesteps": run.n_timesteps, "seed": [run.seed], "num_episode_test": run.num_episode_test}
    outputs = {}

    def call() -> Any:
        outputs["state"], outputs["evaluations"] = model.train(**train, logging_config=logging)
        return outputs["state"]

    with CompileSpans() as programs:
        result = timed(call, repeats=0)
    result.pop("out")
    state, evaluations = outputs["state"], outputs["evaluations"]
    steps = steps_run(state)
    returns = None
    if evaluations is not None:
        timesteps, values = np.asarray(evaluations["timestep"])[0], np.asarray(evaluations[RETURN])[0]
        returns = [[int(t), round(float(r), 3)] for t, r in zip(timesteps, values, strict=True) if t >= 0]
    with CompileSpans() as eval_spans:
        start = time.perf_counter()
        final = model.evaluate(state, num_episode_test=run.num_episode_test, seed=run.seed)
        eval_s = time.perf_counter() - start
    exec_s = result["exec_s"]
    return {
        "steps": steps,
        "compile_s": result["compile_spans_s"],
        "trace_s": result["trace_s"],
        "lower_s": result["lower_s"],
        "backend_compile_s": result["backend_compile_s"],
        "backend_compile_by_program": programs.slowest_programs(),
        "exec_s": exec_s,
        "exec_steps": steps,
        "exec_steps_per_s": round(steps / exec_s, 1),
        "exec_from": "the train call less its compile spans, " + ("evaluations in it" if logging else "no evaluation"),
        "whole_s": round(result["first_call_s"] + eval_s, 3),
        "whole_steps_per_s": round(steps / (result["first_call_s"] + eval_s), 1),
        "eval_compile_s": round(min(eval_spans.total(), eval_s), 3),
        "eval_s": round(eval_s, 3),
        "final_return": round(float(np.mean(final[RETURN])), 3),
        "returns": returns,
        "eval_episodes": run.num_episode_test,
        "eval_actions": "deterministic",
        "ajax_evals": evals,
        "ajax_reset": reset,
        "ajax_keywords": jsonable(run.keywords),
        "brax": brax.__version__,
    }


RETURN = "Eval/episodic mean reward"


def worker(job: dict[str, Any]) -> dict[str, Any]:
    """One library's run of one race, in this process: its row (less the stamp the parent adds)."""
    from perf_bench import device_fields, peak_bytes

    library, agent, env_id, settings = job["library"], job["agent"], job["env"], job["settings"]
    row = {"library": library, "agent": agent.upper(), "env": env_id, "settings": settings}
    row.update(source=job["source"], n_timesteps=settings["num_timesteps"], **device_fields())
    if library == "brax":
        row.update(brax_worker(agent, env_id, settings, job.get("suite", "brax")))
    else:
        row.update(ajax_worker(agent, env_id, settings, job["ajax_evals"], job["ajax_reset"]))
    row["peak_bytes"] = peak_bytes()
    return row


# Orchestration -----------------------------------------------------------------------------------
def in_fresh_process(job: dict[str, Any], timeout: float | None) -> dict[str, Any]:
    """One job in a new interpreter, Ajax's source first on the path and its compile cache off; a
    failure comes back as a row with its error."""
    from workers import SOURCE, json_rows, worker_env

    env = worker_env([HERE, SOURCE])
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(job, file)
    command = [sys.executable, __file__, "--worker", file.name]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {**job_fields(job), "error": f"timed out after {timeout:.0f} s (--minutes)"}
    finally:
        os.unlink(file.name)
    rows = json_rows(done.stdout)
    if done.returncode != 0 or not rows:
        return {**job_fields(job), "error": done.stderr.strip()[-2000:] or f"exit status {done.returncode}"}
    return rows[-1]


def job_fields(job: dict[str, Any]) -> dict[str, Any]:
    return {
        "library": job["library"],
        "agent": job["agent"].upper(),
        "env": job["env"],
        "settings": job["settings"],
        "source": job["source"],
        "n_timesteps": job["settings"]["num_timesteps"],
    }


def summary(row: dict[str, Any]) -> str:
    """One line: the row's speed, compile and return."""
    head = f"{row['library']:5s} {row['agent']} {row['env']}"
    if "error" in row:
        return f"{head}: error: {row['error'].splitlines()[-1][:200]}"
    rate = "-" if row["exec_steps_per_s"] is None else f"{row['exec_steps_per_s']:,.0f}"
    line = f"{head}: {row['steps']:,} steps, exec {rate} steps/s ({row['exec_from']}), compile {row['compile_s']:.1f} s"
    line += f" (trace {row['trace_s']:.1f} / lower {row['lower_s']:.1f} / backend {row['backend_compile_s']:.1f})"
    if "eval_compile_s" in row:
        line += f" + evaluation {row['eval_compile_s']:.1f} s"
    return f"{line}, whole {row['whole_s']:.1f} s, return {row['final_return']:.2f} on {row['device_kind']}"


def ratios(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ajax against Brax for each race both ran: execution speed (above 1: Ajax faster) and compile."""
    by_key = {(row["library"], row["agent"], row["env"]): row for row in rows if "error" not in row}
    out = []
    for (library, agent, env), row in by_key.items():
        peer = by_key.get(("brax", agent, env))
        if library != "ajax" or peer is None or not row["exec_steps_per_s"] or not peer["exec_steps_per_s"]:
            continue
        out.append(
            {
                "agent": agent,
                "env": env,
                "execution_ratio": round(row["exec_steps_per_s"] / peer["exec_steps_per_s"], 3),
                "ajax_compile_s": round(row["compile_s"] + row.get("eval_compile_s", 0.0), 3),
                "brax_compile_s": peer["compile_s"],
                "ajax_return": row["final_return"],
                "brax_return": peer["final_return"],
            }
        )
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", nargs="+", choices=AGENTS, default=list(AGENTS), help="default: both")
    parser.add_argument("--envs", nargs="+", choices=ENVS, default=list(ENVS), help="default: both")
    parser.add_argument("--budget", type=int, help="steps a run (default: the published budget)")
    parser.add_argument("--budget-scale", type=float, default=1.0, help="the budget times this")
    parser.add_argument("--seed", type=int, help="default: the published seed")
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="override Brax keywords for both libraries (each trainer takes its own), e.g. num_envs=4 or "
        "network_factory={...}",
    )
    parser.add_argument(
        "--ajax-reset",
        choices=("fresh", "restart"),
        default="fresh",
        help="Ajax's auto-reset: a fresh initial state (default, Ajax's own) or each copy's first state (Brax's)",
    )
    parser.add_argument(
        "--ajax-evals",
        choices=("after", "in-run"),
        default="after",
        help="evaluate Ajax after its run (default; its execution holds none) or inside it at Brax's num_evals",
    )
    parser.add_argument(
        "--out", type=Path, nargs="?", const=OUT, help=f"append the rows here (bare --out: {OUT.relative_to(ROOT)})"
    )
    parser.add_argument("--minutes", type=float, help="start no run after this many minutes, and stop one at it")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        return args
    if (args.budget is not None and args.budget < 1) or args.budget_scale <= 0:
        parser.error("--budget and --budget-scale must be positive.")
    try:
        args.overrides = parse_overrides(args.set)
    except ValueError as error:
        parser.error(str(error))
    nested = sorted(set(args.overrides) & set().union(*NETWORK_KEYS.values()))
    if nested:
        parser.error(f"--set {', '.join(nested)}: give layer sizes inside network_factory={{...}}.")
    layer_keys = set().union(*NETWORK_KEYS.values())
    factory = args.overrides.get("network_factory", {})
    if not isinstance(factory, dict) or set(factory) - layer_keys:
        parser.error(f"--set network_factory= takes a dict of {', '.join(sorted(layer_keys))}.")
    unknown = sorted(set(args.overrides) - set().union(*TRAINER_KEYS.values()) - {"network_factory"})
    if unknown:
        parser.error(f"--set {', '.join(unknown)}: not a keyword of Brax's ppo.train or sac.train.")
    for agent in args.agents:
        for env in args.envs:
            settings = resolve(RACES[agent, env], args.budget, args.budget_scale, args.seed, args.overrides)
            problem = check_settings(agent, settings)
            if problem:
                parser.error(f"{agent} {env}: {problem}.")
    return args


def jobs(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Brax's run then Ajax's, for each race asked for."""
    out = []
    for agent in args.agents:
        for env in args.envs:
            race = RACES[agent, env]
            settings = resolve(race, args.budget, args.budget_scale, args.seed, args.overrides)
            for library in ("brax", "ajax"):
                job = {"library": library, "agent": agent, "env": env, "settings": settings, "source": race.source}
                out.append({**job, "ajax_evals": args.ajax_evals, "ajax_reset": args.ajax_reset})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker is not None:
        job = json.loads(Path(args.worker).read_text())
        print(json.dumps(worker(job)), flush=True)
        return 0
    from perf_bench import stamp
    from provenance import append_row

    until = math.inf if args.minutes is None else time.time() + 60 * args.minutes
    rows = []
    for job in jobs(args):
        left = until - time.time()
        if left <= 0:
            print(f"--minutes {args.minutes} passed: {job['library']} {job['agent']} {job['env']} not run", flush=True)
            continue
        row = stamp(in_fresh_process(job, None if math.isinf(left) else left))
        rows.append(row)
        if args.out is not None:
            append_row(args.out, row)
        print(summary(row), flush=True)
    for line in ratios(rows):
        print(json.dumps(line), flush=True)
    return 0 if rows and all("error" not in row for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
