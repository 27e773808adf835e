"""The workloads the tests and the benchmarks share, kept out of the wheel: ``models`` (a zoo of
``relax.frontend.nn`` networks) and ``workloads`` (scheduled TIR). The tests reach it through
pytest's ``pythonpath``, the benchmark scripts through ``bench/_zoo.py``."""
