"""Passes of the C++ core, as ordinary ``tvm.transform.Pass`` objects."""

from .dataflow_use_inplace_calls import (
    DataflowUseInplaceCalls,
    InplaceOptions,
    InplaceStats,
    use_inplace_calls,
)

__all__ = ["DataflowUseInplaceCalls", "InplaceOptions", "InplaceStats", "use_inplace_calls"]
