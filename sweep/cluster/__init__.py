"""Scheduler plumbing shared by sweep workers (`sweep.backends`) and full runs (`sweep.launch`): SLURM, Ray,
and the identity and clean-up of processes."""
