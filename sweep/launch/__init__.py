"""`sweep launch` and `sweep status`: start a full run where it should train, and see how launched runs are doing.

- `request.py`: the launch flags, checked per backend before anything is written.
- `record.py`: RUN_DIR/launch.json (how and where a run was launched) and what a run folder says about it.
- `local.py`, `slurm.py`, `ray.py`: one module per backend; each trains the RunConfig with resume, so
  launching again (or a requeued job) continues from the run's latest checkpoint.
- `command.py`: `sweep launch`; `status.py`: `sweep status`.
"""
