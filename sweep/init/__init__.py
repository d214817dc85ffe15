"""`sweep init`: copy one of the packaged example specs (`sweep/examples/`) out, to edit and run."""
