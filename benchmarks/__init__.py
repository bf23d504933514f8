"""Benchmark suites: the training-loop harness (``python -m benchmarks.train_loop``)
and its report (``python -m benchmarks.report``). See docs/benchmarking.md."""
