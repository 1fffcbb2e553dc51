"""Which backend an environment id belongs to.

The Brax, MuJoCo Playground, TargetGym, Craftax, Navix and Jumanji ids are listed here
rather than read from the packages, so routing an id, or telling a user their package is
missing, imports nothing heavy. `tests/environments/test_ids.py` checks these lists against
the installed packages. The sets are disjoint: an id names one environment. An id a suite
knows but Ajax does not route is refused as that suite's, with the reason: the ids left out
on purpose are declared, and an installed suite's registry is read only on the way to
refusing an id the lists lack.
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

CRAFTAX_IDS = ("Craftax-Classic-Symbolic-v1", "Craftax-Classic-Pixels-v1", "Craftax-Symbolic-v1", "Craftax-Pixels-v1")

NAVIX_IDS = (
    *(
        f"Navix-{world}-{size}-v0"
        for world in ("Empty", "Empty-Random", "DoorKey", "DoorKey-Random")
        for size in ("5x5", "6x6", "8x8", "16x16")
    ),
    "Navix-FourRooms-v0",
    *(f"Navix-KeyCorridor{size}-v0" for size in ("S3R1", "S3R2", "S3R3", "S4R3", "S5R3", "S6R3")),
    "Navix-LavaGapS5-v0",
    "Navix-LavaGapS6-v0",
    "Navix-LavaGapS7-v0",
    *(f"Navix-SimpleCrossing{size}-v0" for size in ("S9N1", "S9N2", "S9N3", "S11N5")),
    "Navix-Dynamic-Obstacles-5x5-v0",
    "Navix-Dynamic-Obstacles-5x5-Random-v0",
    "Navix-Dynamic-Obstacles-6x6-v0",
    "Navix-Dynamic-Obstacles-6x6-Random-v0",
    "Navix-Dynamic-Obstacles-8x8-v0",
    "Navix-Dynamic-Obstacles-16x16-v0",
    "Navix-DistShift1-v0",
    "Navix-DistShift2-v0",
    "Navix-GoToDoor-5x5-v0",
    "Navix-GoToDoor-6x6-v0",
    "Navix-GoToDoor-8x8-v0",
)

# Jumanji's ids with one discrete action. Those with several actions or agents follow: routed, then refused
# with the reason. Sokoban-v0 is left out (UNROUTED_SUITE_IDS).
JUMANJI_IDS = (
    "Snake-v1",
    "Game2048-v1",
    "Maze-v0",
    "PacMan-v1",
    "SlidingTilePuzzle-v0",
    "Knapsack-v1",
    "TSP-v1",
    "CVRP-v1",
    "GraphColoring-v1",
)
JUMANJI_UNSUPPORTED_IDS = (
    "BinPack-v2",
    "Cleaner-v0",
    "Connector-v3",
    "FlatPack-v0",
    "JobShop-v0",
    "LevelBasedForaging-v0",
    "MMST-v0",
    "MultiCVRP-v0",
    "Minesweeper-v0",
    "RobotWarehouse-v0",
    "RubiksCube-v0",
    "RubiksCube-partly-scrambled-v0",
    "SearchAndRescue-v0",
    "Sudoku-v0",
    "Sudoku-very-easy-v0",
    "Tetris-v0",
)

SUITE_NAMES = {"craftax": "Craftax", "navix": "Navix", "jumanji": "Jumanji"}
SUPPORTED_SUITE_IDS = {"craftax": CRAFTAX_IDS, "navix": NAVIX_IDS, "jumanji": JUMANJI_IDS}

# Ids a suite knows that Ajax leaves out, and why: refused as that suite's, not as unknown ids.
UNROUTED_SUITE_IDS: dict[str, dict[str, str]] = {
    "jumanji": {
        "Sokoban-v0": "it downloads its levels from the Hugging Face hub when it is built, which a run on a machine "
        "without network cannot do",
    },
    # Craftax builds these names only with its own auto-reset, whose step returns the next episode's first
    # observation in place of the last one, which Ajax bootstraps a truncation from.
    "craftax": {
        f"Craftax-{kind}-AutoReset-v1": f"Craftax resets its episodes inside the step, dropping the final "
        f"observation Ajax bootstraps a time limit from; Craftax-{kind}-v1 is the same game, reset by Ajax"
        for kind in ("Classic-Symbolic", "Classic-Pixels", "Symbolic", "Pixels")
    },
}

# backend -> (pip extra that installs it, its import name)
PACKAGES = {
    "brax": ("brax", "brax"),
    "playground": ("playground", "mujoco_playground"),
    "targetgym": ("targetgym", "target_gym"),
    "craftax": ("craftax", "craftax"),
    "navix": ("navix", "navix"),
    "jumanji": ("jumanji", "jumanji"),
    "gymnasium": ("gymnasium", "gymnasium"),
    "envpool": ("envpool", "envpool"),
}
GYMNASIUM_PREFIX = "gymnasium:"  # Gymnasium's own ids after it, stepped on the host (`host.py`)
ENVPOOL_PREFIX = "envpool:"  # EnvPool's task ids after it, stepped on the host in C++ (`envpool_envs.py`)
ENVPOOL_XLA_PREFIX = "envpool-xla:"  # the same, stepped through EnvPool's XLA interface (`envpool_xla.py`)
BACKEND_IDS = {
    "brax": BRAX_IDS,
    "playground": PLAYGROUND_IDS,
    "targetgym": TARGETGYM_IDS,
    "craftax": CRAFTAX_IDS,
    "navix": NAVIX_IDS,
    "jumanji": JUMANJI_IDS + JUMANJI_UNSUPPORTED_IDS,
}


def gymnax_ids() -> tuple[str, ...]:
    import gymnax

    return tuple(gymnax.registered_envs)


def backend_of(env_id: str) -> str | None:
    """'gymnax' or a key of `PACKAGES`; None for an unknown id."""
    if env_id in gymnax_ids():
        return "gymnax"
    if env_id.startswith(GYMNASIUM_PREFIX):
        return "gymnasium"
    if env_id.startswith((ENVPOOL_PREFIX, ENVPOOL_XLA_PREFIX)):
        return "envpool"
    return next((backend for backend, ids in BACKEND_IDS.items() if env_id in ids), None)


def known_env_ids() -> tuple[str, ...]:
    """Every id `prepare_env` can route, whichever packages are installed."""
    return gymnax_ids() + sum(BACKEND_IDS.values(), ())


def unknown_env_message(env_id: str) -> str:
    """Why `env_id` routes nowhere: a suite's id that Ajax leaves out, with the reason; else the closest ids."""
    unrouted = unrouted_suite_message(env_id)
    if unrouted is not None:
        return unrouted
    close = difflib.get_close_matches(env_id, known_env_ids(), n=5, cutoff=0.55)
    if not close:  # ids differ in case and separators more than in letters: "Halfcheetah" for "halfcheetah"
        lowered = {i.lower().replace("_", "").replace("-", ""): i for i in known_env_ids()}
        key = env_id.lower().replace("_", "").replace("-", "")
        close = [lowered[k] for k in difflib.get_close_matches(key, lowered, n=5, cutoff=0.5)]
    hint = f" Closest ids: {', '.join(close)}." if close else ""
    if _registered_in_gymnasium(env_id):
        hint += f" Gymnasium registers {env_id!r}: pass {GYMNASIUM_PREFIX + env_id!r} to step it on the host."
    return (
        f"Unknown environment id {env_id!r}.{hint} Ajax routes gymnax ids (CartPole-v1, Pendulum-v1, ...), "
        f"Brax ids ({', '.join(BRAX_IDS[:4])}, ...), MuJoCo Playground ids ({', '.join(PLAYGROUND_IDS[:3])}, ...) "
        f"TargetGym ids ({', '.join(TARGETGYM_IDS[:3])}, ...), Craftax ids ({CRAFTAX_IDS[0]}, ...), Navix ids "
        f"({NAVIX_IDS[8]}, ...) and Jumanji ids ({', '.join(JUMANJI_IDS[:3])}, ...), Gymnasium ids after "
        f"{GYMNASIUM_PREFIX!r} ({GYMNASIUM_PREFIX}Pendulum-v1, ...) and EnvPool ids after {ENVPOOL_PREFIX!r} "
        f"({ENVPOOL_PREFIX}Pong-v5, ...; {ENVPOOL_XLA_PREFIX!r} for its XLA interface); or pass a gymnax-style "
        "environment object with its params, or a Gymnasium env."
    )


def unsupported_env_message(env_id: str, backend: str, reason: str) -> str:
    """`env_id`, an id of the suite `backend`, refused with `reason` and the suite's ids Ajax takes."""
    name = SUITE_NAMES[backend]
    return (
        f"{env_id!r} is a {name} environment that Ajax does not support: {reason}; supported {name} ids: "
        f"{', '.join(SUPPORTED_SUITE_IDS[backend])}."
    )


def unrouted_suite_message(env_id: str) -> str | None:
    """The refusal of an id a suite knows but Ajax does not route; None for an id no suite knows.

    The ids Ajax leaves out on purpose are declared (`UNROUTED_SUITE_IDS`). Any other is an id the
    installed package registers that Ajax's lists, checked against another version of it, lack.
    """
    for backend, reasons in UNROUTED_SUITE_IDS.items():
        if env_id in reasons:
            return unsupported_env_message(env_id, backend, reasons[env_id])
    backend = _registering_suite(env_id)
    if backend is None:
        return None
    name = SUITE_NAMES[backend]
    reason = (
        f"the installed {name} registers it, but Ajax's list of {name} ids, checked against another version of "
        f"{name}, lacks it, so its observation and action structure are unchecked"
    )
    return unsupported_env_message(env_id, backend, reason)


def _registering_suite(env_id: str) -> str | None:
    """The suite whose installed package registers `env_id`; None where none does or the package is absent.

    Read only on the way to refusing an id, so routing a listed id imports no suite. Navix, slow to
    import, is asked only about an id named like its own; Craftax keeps no registry to read.
    """
    try:
        import jumanji
    except ImportError:
        pass
    else:
        if env_id in jumanji.registered_environments():
            return "jumanji"
    if not env_id.startswith("Navix-"):
        return None
    try:
        import navix
    except ImportError:
        return None
    return "navix" if env_id in navix.registry() else None


def _registered_in_gymnasium(env_id: str) -> bool:
    try:
        import gymnasium
    except ImportError:
        return False
    return env_id in gymnasium.registry


def missing_package_message(env_id: str, backend: str, error: ImportError) -> str:
    extra, module = PACKAGES[backend]
    return (
        f"{env_id!r} is a {backend} environment, but {module} cannot be imported ({error}). "
        f"Install it with `pip install 'ajax[{extra}]'` (the test set-up installs every backend)."
    )
