"""Example workloads bundled with tvm-memplan (used by ``tvm-memplan report``)."""

from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parent
DEFAULT_EXAMPLE = EXAMPLES_DIR / "tiled_model.py"
