"""study.py's parts: the config and its runs (plan.py), the data (data.py),
running the grid (runner.py) and RESULTS.md (report.py)."""
