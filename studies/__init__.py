"""study.py's parts: the config and its runs (plan.py), the data (data.py),
running the grid (runner.py), the archive of finished runs in the
repository (archive.py) and RESULTS.md (report.py)."""
