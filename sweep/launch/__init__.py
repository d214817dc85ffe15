"""`sweep launch`: start a full run where it should train.

- `request.py`: the launch flags, checked per backend before anything is written.
- `local.py`, `slurm.py`, `ray.py`: one module per backend; each trains the RunConfig with resume, so
  launching again (or a requeued job) continues from the run's latest checkpoint.
- `command.py`: `sweep launch`. A run's launch.json is `sweep.runs.record`; `sweep status` is `sweep.status`.
"""
