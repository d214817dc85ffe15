"""Results: which studies a name or spec refers to, their trials as a table, and plots."""
