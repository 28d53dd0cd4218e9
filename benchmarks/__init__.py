"""Throughput benchmarks for MaxAtar against gymnax, pgx and the numpy references (scripts, never timed tests).

Run `python -m benchmarks.run --help`; see benchmarks/README.md for what each column means.
"""
