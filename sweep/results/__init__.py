"""Results: which studies a name or spec refers to, their trials as a table, and plots; the read-only SQL
views over trials, runs and curves (`sweep sql`), `sweep export` and `sweep compare`."""
