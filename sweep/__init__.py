"""The orchestrator and the `sweep` command."""
