"""tvm-memplan: memory-planning passes for Apache TVM 0.27.

Importing the package imports TVM, loads the C++ core and checks it against the running TVM
(see ``_lib``); nothing else happens at import time.
"""

from . import analysis, transform
from ._lib import SUPPORTED_TVM_VERSION, SchemaQuery, check_schema

__version__ = "0.1.0"

__all__ = [
    "SUPPORTED_TVM_VERSION",
    "SchemaQuery",
    "__version__",
    "analysis",
    "check_schema",
    "transform",
]
