"""tvm-memplan: memory-planning passes for Apache TVM 0.27.

Importing the package imports TVM, loads the C++ core, checks it against the running TVM and
registers its PassContext options and target-kind attributes (see ``_lib``), and registers the
``"memplan"`` TIR and Relax pipelines (see ``pipeline``); nothing else happens at import time.
"""

from . import analysis, pipeline, target, transform
from ._lib import SUPPORTED_TVM_VERSION, SchemaQuery, check_schema
from .pipeline import (
    compile,  # noqa: A004  (tvm_memplan.compile mirrors tvm.compile)
    relax_pipeline,
)

__version__ = "0.1.0"

__all__ = [
    "SUPPORTED_TVM_VERSION",
    "SchemaQuery",
    "__version__",
    "analysis",
    "check_schema",
    "compile",
    "pipeline",
    "relax_pipeline",
    "target",
    "transform",
]
