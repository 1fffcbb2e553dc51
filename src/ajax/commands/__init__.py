"""The `ajax` command's subcommands, one module each, over the modules they share.

`train`, `eval` and `sweep` each add their parser and hold their command; `arguments` (what the options
mean: counts, `--param`, the agent they build), `run_folder` (config.json, the evaluation files, the
checkpoint, the chunks a run is cut into) and `results` (the metric a run reports, its table and curve)
are what they share. `ajax.cli` only builds the parser from them and dispatches.
"""
