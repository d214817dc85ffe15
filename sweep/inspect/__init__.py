"""`sweep inspect`: the μP table of a model, per parameter."""
