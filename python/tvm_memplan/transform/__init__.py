"""Passes of the C++ core, as ordinary ``tvm.transform.Pass`` objects."""

from .compact_buffer_allocation import CompactBufferAllocation

__all__ = ["CompactBufferAllocation"]
