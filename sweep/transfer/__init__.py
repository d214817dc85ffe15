"""`sweep transfer`: the full-size RunConfig of a proxy trial, composed by `sweep.rules` and explained."""
