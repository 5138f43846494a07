"""Speed benchmarks (run as scripts: python bench/NAME.py); shared helpers."""
