"""`sweep coord-check` and `sweep inspect`: is a model in μP, per parameter and per activation."""
