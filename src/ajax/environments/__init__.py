"""Environments: creation by id, the agent/env action map, and experience collection."""
