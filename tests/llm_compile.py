"""A stand-in for ``mlc_llm compile`` followed by a chat: a command-line module that builds the
zoo's Llama (``zoo/llm.py``) as MLC-LLM's compile command does, then runs the result.

- Its pipeline is MLC-LLM's order (``llm.mlc_llm_pipeline``: a module pass that builds its passes
  while it runs), registered by name as MLC-LLM registers ``"mlc_llm"``, fetched with
  ``relax.get_pipeline`` and given to ``relax.build``; the bounds of ``seq_len``,
  ``total_seq_len`` and ``batch_size`` are attached by the pipeline, as MLC-LLM attaches them.
- It prints MLC-LLM's estimate of the memory a function needs (its "temporary buffer", the
  largest function's planned bytes), as MLC-LLM's compile log does.
- It runs the executable three times (three generations, each prefill, decode, a two-sequence
  batch and the hidden-state forms: ``llm.run_llm``) and saves every output to ``--out``.

    python -m llm_compile --out stock.npz                      # TVM's passes
    tvm-memplan run -m llm_compile --out memplan.npz           # the same tool, ours inside

Built at LLVM opt-level 0 and small sizes, as tests/test_mlc_llm.py builds it, to stay cheap.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import tvm
from tvm import relax

from zoo import llm

CONFIG = llm.TEST
TARGET = {"kind": "llvm", "opt-level": 0}
PIPELINE = "llm_compile_standin"
#: One generation per prompt: a short one, a longer one, one exactly at the prefill chunk.
PROMPT_LENGTHS = (5, 23, CONFIG.prefill_chunk_size)
DECODE_STEPS = 3


def _register_pipeline() -> None:
    if PIPELINE in relax.pipeline.PIPELINE_MAP:  # a second run in one process
        return

    @relax.register_pipeline(PIPELINE)
    def _pipeline(variable_bounds=None, metadata=None):
        return llm.mlc_llm_pipeline(variable_bounds=variable_bounds, metadata=metadata)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="llm_compile", description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="where to save every output (.npz)")
    args = parser.parse_args(argv)
    _register_pipeline()
    target = tvm.target.Target(TARGET)
    mod, _ = llm.llm_module(CONFIG, target)
    metadata: dict = {}
    pipeline = relax.get_pipeline(
        PIPELINE, variable_bounds=CONFIG.variable_bounds, metadata=metadata
    )
    executable = relax.build(mod, target, relax_pipeline=pipeline)
    usage = metadata["memory_usage"]
    largest = max(usage, key=usage.get)
    print(f"temporary buffer: {usage[largest]} bytes ({largest})")
    vm = relax.VirtualMachine(executable, tvm.cpu())
    weights = llm.llm_weights(CONFIG, seed=0)
    saved = {f"memory_usage/{name}": np.int64(value) for name, value in usage.items()}
    for generation, length in enumerate(PROMPT_LENGTHS):
        prompt = np.random.default_rng(generation).integers(0, CONFIG.vocab_size, size=length)
        outputs = llm.run_llm(vm, CONFIG, weights, prompt, DECODE_STEPS, seed=generation)
        for name, arrays in outputs.items():
            for i, array in enumerate(arrays):
                saved[f"{generation}/{name}/{i}"] = array
    np.savez(args.out, **saved)
    print(f"ran {len(PROMPT_LENGTHS)} generations: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
