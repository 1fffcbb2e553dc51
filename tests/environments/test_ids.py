"""Environment ids: the lists against the installed packages, routing, unknown ids, missing packages."""

import importlib
import subprocess
import sys

import pytest

from ajax.environments import ids
from ajax.environments.create import EnvironmentAssetsMissingError, make_env, prepare_env


def test_id_lists_match_the_installed_packages():
    import brax.envs
    import target_gym
    from gymnax.environments import environment
    from mujoco_playground import registry

    assert set(ids.BRAX_IDS) == set(brax.envs._envs) - {"fast"}  # "fast" is Brax's own test stub
    assert set(ids.PLAYGROUND_SUITE_IDS) == set(registry.dm_control_suite.ALL_ENVS)
    assert set(ids.PLAYGROUND_IDS) == set(registry.ALL_ENVS)
    envs = {n for n in dir(target_gym) if isinstance(getattr(target_gym, n), type)}
    assert set(ids.TARGETGYM_IDS) == {n for n in envs if issubclass(getattr(target_gym, n), environment.Environment)}
    sets = [set(ids.gymnax_ids()), *map(set, ids.BACKEND_IDS.values())]
    assert sum(map(len, sets)) == len(set().union(*sets)), "an id names two backends"


def test_suite_id_lists_match_the_installed_packages():
    import jumanji
    import navix
    from craftax.craftax_env import make_craftax_env_from_name
    from jumanji import specs

    assert set(ids.NAVIX_IDS) == set(navix.registry())
    for env_id in ids.CRAFTAX_IDS:
        if "Pixels" not in env_id:  # the pixel ids: test_the_craftax_pixel_ids_build
            make_craftax_env_from_name(env_id, auto_reset=False)
    for env_id in ids.UNROUTED_SUITE_IDS["craftax"]:  # names Craftax builds only with its own auto-reset
        if "Pixels" not in env_id:
            make_craftax_env_from_name(env_id, auto_reset=True)
            with pytest.raises(ValueError, match="Unknown craftax environment"):
                make_craftax_env_from_name(env_id, auto_reset=False)
    listed = set(jumanji.registered_environments()) - set(ids.UNROUTED_SUITE_IDS["jumanji"])
    assert set(ids.JUMANJI_IDS) | set(ids.JUMANJI_UNSUPPORTED_IDS) == listed
    assert set(ids.UNROUTED_SUITE_IDS["jumanji"]) <= set(jumanji.registered_environments())
    for env_id in ids.JUMANJI_IDS:
        assert isinstance(jumanji.make(env_id).action_spec, specs.DiscreteArray), env_id


@pytest.mark.slow
def test_the_craftax_pixel_ids_build():
    """Slow on a fresh install: Craftax renders its textures (2-3 minutes on 2 cores) the first time."""
    from craftax.craftax_env import make_craftax_env_from_name

    for env_id in ids.CRAFTAX_IDS:
        if "Pixels" in env_id:
            make_craftax_env_from_name(env_id, auto_reset=False)


def test_ids_route_to_their_backend():
    assert ids.backend_of("Pendulum-v1") == "gymnax"
    assert ids.backend_of("halfcheetah") == "brax" and ids.backend_of("CheetahRun") == "playground"
    assert ids.backend_of("Plane") == "targetgym" and ids.backend_of("nope") is None
    assert ids.backend_of("Craftax-Classic-Symbolic-v1") == "craftax"
    assert ids.backend_of("Navix-DoorKey-5x5-v0") == "navix" and ids.backend_of("Snake-v1") == "jumanji"
    env, params = make_env("CSTR")
    assert type(env).__module__.startswith("target_gym") and params.max_steps_in_episode == 100


def test_an_unknown_id_names_the_closest_ones():
    with pytest.raises(ValueError, match="Closest ids: halfcheetah"):
        prepare_env("halfchetah")
    with pytest.raises(ValueError, match="CartpoleBalance"):
        prepare_env("CartpoleBalanse")
    with pytest.raises(ValueError, match="Closest ids: Pendulum-v1"):
        prepare_env("pendulum")


@pytest.mark.parametrize(
    ("env_id", "reason", "supported"),
    [
        ("Sokoban-v0", "it downloads its levels from the Hugging Face hub", "Jumanji ids: Snake-v1, Game2048-v1"),
        (
            "Craftax-Symbolic-AutoReset-v1",
            "Craftax resets its episodes inside the step.*Craftax-Symbolic-v1 is the same game",
            "Craftax ids: Craftax-Classic-Symbolic-v1",
        ),
    ],
)
def test_a_suites_id_that_ajax_leaves_out_is_refused_with_why(env_id, reason, supported):
    suite = supported.split()[0]
    with pytest.raises(ValueError, match=rf"'{env_id}' is a {suite} environment that Ajax does not support: {reason}"):
        prepare_env(env_id)
    with pytest.raises(ValueError, match=f"; supported {supported}"):
        prepare_env(env_id)


def test_an_id_a_newer_suite_registers_is_refused_as_that_suites(monkeypatch):
    """Read from the installed package's registry: an id Ajax's list lacks is not called unknown."""
    import jumanji
    import navix

    monkeypatch.setattr(jumanji, "registered_environments", lambda: {"Snake-v1", "Snake-v2"})
    with pytest.raises(ValueError, match="'Snake-v2' is a Jumanji environment that Ajax does not support: the "):
        prepare_env("Snake-v2")
    monkeypatch.setattr(navix, "registry", lambda: {"Navix-Empty-5x5-v0": None, "Navix-Empty-7x7-v0": None})
    with pytest.raises(ValueError, match=r"'Navix-Empty-7x7-v0' is a Navix environment .*unchecked; supported Navix"):
        prepare_env("Navix-Empty-7x7-v0")


def test_without_the_suite_installed_its_unlisted_id_gets_the_closest_ids(monkeypatch):
    monkeypatch.setitem(sys.modules, "jumanji", None)  # `import jumanji` raises ImportError
    with pytest.raises(ValueError, match="Unknown environment id 'Snake-v2'. Closest ids: Snake-v1"):
        prepare_env("Snake-v2")


def test_a_missing_backend_package_says_how_to_install_it(monkeypatch):
    real = importlib.import_module

    def without_brax(name, *args):
        if name == "brax":
            raise ModuleNotFoundError("No module named 'brax'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_brax)
    with pytest.raises(ImportError, match=r"'ant' is a brax environment.*pip install 'ajax\[brax\]'"):
        prepare_env("ant")


def test_a_menagerie_env_without_its_models_fails_with_what_is_missing(monkeypatch, tmp_path):
    from mujoco_playground._src import mjx_env

    def offline_clone(*args, **kwargs):
        raise subprocess.CalledProcessError(128, ["git", "clone"], stderr="Could not resolve host")

    monkeypatch.setattr(mjx_env, "MENAGERIE_PATH", tmp_path / "mujoco_menagerie")
    monkeypatch.setattr(mjx_env, "_clone_with_progress", offline_clone)
    with pytest.raises(EnvironmentAssetsMissingError, match="needs the MuJoCo Menagerie.*CartpoleBalance") as caught:
        prepare_env("Go1JoystickFlatTerrain")
    assert caught.value.__cause__ is None  # the message, not the subprocess's traceback
