"""Shared settings: CPU only, and the persistent compile cache in a per-user directory."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
