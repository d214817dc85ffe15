"""Studies: the spec and its search space, Optuna samplers, pruners and storages, and the workers that run trials."""
