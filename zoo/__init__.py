"""The workloads the tests and the benchmarks share, kept out of the wheel: ``models`` (a zoo of
``relax.frontend.nn`` networks), ``llm`` (an MLC-LLM-style LLM), ``workloads`` (scheduled TIR)
and ``packings`` (offset-packing instances of known optimum). The tests reach it through
pytest's ``pythonpath``, the benchmark scripts through ``bench/_zoo.py``."""
