"""`sweep launch`: start a full run where it should train.

- `request.py`: the launch flags, checked per backend before anything is written.
- the backends' run entry points (`sweep.backends.local|slurm|ray`: one module per scheduler, beside its sweep
  workers' entry point) each train the RunConfig with resume, so launching again (or a requeued job) continues
  from the run's latest checkpoint.
- `command.py`: `sweep launch`. A run's launch.json is `sweep.runs.record`; `sweep status` is `sweep.status`.
"""
