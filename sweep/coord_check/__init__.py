"""`sweep coord-check`: is a model in μP, per parameter and per activation (the measurement is `sweep.coords`)."""
