"""Performance benchmark (``make bench`` / ``make bench-quick``): latency, throughput, memory and cost of every
system at 10K to 1M vectors, as tidy rows written to ``results/perf/`` (see :mod:`.runner`).

Each case module exposes ``run(ctx) -> list[Row]``; :mod:`.timing` times repetitions and keeps every one.
"""
