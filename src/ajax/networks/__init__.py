"""Actor and critic networks, built from architecture strings."""
