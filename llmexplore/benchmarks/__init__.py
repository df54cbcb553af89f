"""The benchmark harness, grouped by what it does.

- ``run/``: one run — its spec and resolution, the cell that trains or resumes it, its record,
  lock, budget rule, progress line and TensorBoard scalars.
- ``grids/``: grid files and the backends that run their cells (local, Ray, SLURM).
- ``evaluation/``: playing a trained checkpoint on fresh seeds, and the evaluation record.
- ``results/``: from records to tables — aggregation, statistics, comparisons, leaderboards, plots
  and the published reference rows.
- ``cli.py``: the ``grid`` and ``leaderboard`` commands.
"""
