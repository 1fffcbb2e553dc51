"""Which backend an environment id belongs to.

The Brax, MuJoCo Playground and TargetGym ids are listed here rather than read from the
packages, so routing an id, or telling a user their package is missing, imports nothing
heavy. `tests/environments/test_ids.py` checks these lists against the installed packages.
The four sets are disjoint: an id names one environment.
"""

from __future__ import annotations

import difflib

BRAX_IDS = (
    "ant",
    "halfcheetah",
    "hopper",
    "humanoid",
    "humanoidstandup",
    "inverted_double_pendulum",
    "inverted_pendulum",
    "pusher",
    "reacher",
    "swimmer",
    "walker2d",
)

# The dm_control suite tasks ship their models; the others fetch the MuJoCo Menagerie at first use.
PLAYGROUND_SUITE_IDS = (
    "AcrobotSwingup",
    "AcrobotSwingupSparse",
    "BallInCup",
    "CartpoleBalance",
    "CartpoleBalanceSparse",
    "CartpoleSwingup",
    "CartpoleSwingupSparse",
    "CheetahRun",
    "FingerSpin",
    "FingerTurnEasy",
    "FingerTurnHard",
    "FishSwim",
    "HopperHop",
    "HopperStand",
    "HumanoidStand",
    "HumanoidWalk",
    "HumanoidRun",
    "PendulumSwingup",
    "PointMass",
    "ReacherEasy",
    "ReacherHard",
    "SwimmerSwimmer6",
    "WalkerRun",
    "WalkerStand",
    "WalkerWalk",
)
PLAYGROUND_MENAGERIE_IDS = (
    "ApolloJoystickFlatTerrain",
    "BarkourJoystick",
    "BerkeleyHumanoidJoystickFlatTerrain",
    "BerkeleyHumanoidJoystickRoughTerrain",
    "G1JoystickFlatTerrain",
    "G1JoystickRoughTerrain",
    "Go1JoystickFlatTerrain",
    "Go1JoystickRoughTerrain",
    "Go1Getup",
    "Go1Handstand",
    "Go1Footstand",
    "H1InplaceGaitTracking",
    "H1JoystickGaitTracking",
    "Op3Joystick",
    "SpotFlatTerrainJoystick",
    "SpotGetup",
    "SpotJoystickGaitTracking",
    "T1JoystickFlatTerrain",
    "T1JoystickRoughTerrain",
    "AlohaHandOver",
    "AlohaSinglePegInsertion",
    "PandaPickCube",
    "PandaPickCubeOrientation",
    "PandaPickCubeCartesian",
    "PandaOpenCabinet",
    "PandaRobotiqPushCube",
    "LeapCubeReorient",
    "LeapCubeRotateZAxis",
    "AeroCubeRotateZAxis",
)
PLAYGROUND_IDS = PLAYGROUND_SUITE_IDS + PLAYGROUND_MENAGERIE_IDS

# TargetGym's single-agent environments: aircraft, and process and energy control.
TARGETGYM_IDS = (
    "Airplane2D",
    "BoilerDrum",
    "BuildingHVAC",
    "CSTR",
    "CementKiln",
    "DistillationColumn",
    "FirstOrderSystem",
    "FourTank",
    "GlassFurnace",
    "GridBattery",
    "PHNeutralization",
    "Plane",
    "Plane3D",
    "Plane3DCircle",
    "Plane3DFigureEight",
    "Plane3DHeading",
    "Plane3DRacetrack",
    "PlanePatrol",
    "PlanePatrolBearingOnly",
    "Reactor",
    "WindTurbine",
)

# backend -> (pip extra that installs it, its import name)
PACKAGES = {
    "brax": ("brax", "brax"),
    "playground": ("playground", "mujoco_playground"),
    "targetgym": ("targetgym", "target_gym"),
}


def gymnax_ids() -> tuple[str, ...]:
    import gymnax

    return tuple(gymnax.registered_envs)


def backend_of(env_id: str) -> str | None:
    """'gymnax', 'brax', 'playground', 'targetgym', or None for an unknown id."""
    if env_id in gymnax_ids():
        return "gymnax"
    for backend, ids in (("brax", BRAX_IDS), ("playground", PLAYGROUND_IDS), ("targetgym", TARGETGYM_IDS)):
        if env_id in ids:
            return backend
    return None


def known_env_ids() -> tuple[str, ...]:
    """Every id `prepare_env` can route, whichever packages are installed."""
    return gymnax_ids() + BRAX_IDS + PLAYGROUND_IDS + TARGETGYM_IDS


def unknown_env_message(env_id: str) -> str:
    close = difflib.get_close_matches(env_id, known_env_ids(), n=5, cutoff=0.5)
    if not close:  # ids differ in case and separators more than in letters: "Halfcheetah" for "halfcheetah"
        lowered = {i.lower().replace("_", "").replace("-", ""): i for i in known_env_ids()}
        key = env_id.lower().replace("_", "").replace("-", "")
        close = [lowered[k] for k in difflib.get_close_matches(key, lowered, n=5, cutoff=0.5)]
    hint = f" Closest ids: {', '.join(close)}." if close else ""
    return (
        f"Unknown environment id {env_id!r}.{hint} Ajax routes gymnax ids (CartPole-v1, Pendulum-v1, ...), "
        f"Brax ids ({', '.join(BRAX_IDS[:4])}, ...), MuJoCo Playground ids ({', '.join(PLAYGROUND_IDS[:3])}, ...) "
        f"and TargetGym ids ({', '.join(TARGETGYM_IDS[:3])}, ...); or pass a gymnax-style environment object "
        "with its params."
    )


def missing_package_message(env_id: str, backend: str, error: ImportError) -> str:
    extra, module = PACKAGES[backend]
    return (
        f"{env_id!r} is a {backend} environment, but {module} cannot be imported ({error}). "
        f"Install it with `pip install 'ajax[{extra}]'` (the test set-up installs every backend)."
    )
