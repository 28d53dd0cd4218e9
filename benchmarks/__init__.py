"""Throughput benchmarks for MaxAtar against gymnax, pgx and the numpy references (scripts, never timed tests).

Run `python -m benchmarks.run --help`; see benchmarks/README.md for what each column means.
"""

import os

# Compile times are measured beside peers that have no persistent compilation cache: MaxAtar's is off here
# (and in the processes benchmarks start) unless MAXATAR_CACHE_DIR is set (`maxatar.compilation_cache`).
os.environ.setdefault("MAXATAR_CACHE_DIR", "off")
