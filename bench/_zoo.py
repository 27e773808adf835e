"""The repository's shared workloads (``zoo/``, not shipped in the wheel) for the benchmark
scripts, which run as ``python bench/<name>.py`` with bench/ on their path, not the root."""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from zoo import llm, models, packings, schedules, workloads  # noqa: E402

__all__ = ["llm", "models", "packings", "schedules", "workloads"]
