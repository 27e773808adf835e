"""CompactBufferAllocation v2 (C++: src_cpp/tir/compact_buffers.{h,cc})."""

from __future__ import annotations

import tvm
import tvm_ffi

from .. import _lib  # noqa: F401  (registers the options type before it is bound below)
from .._options import takes_options
from . import _ffi_api


@tvm_ffi.register_object("tvm_memplan.tir.CompactionOptions")
class CompactionOptions(tvm_ffi.Object):
    """Options of CompactBufferAllocation; fields, docs and defaults come from the C++ core
    (``src_cpp/tir/compact_buffers_records.h``)."""


@takes_options(CompactionOptions, positional=True)
def CompactBufferAllocation(options) -> tvm.transform.Pass:
    """Shrink every buffer a PrimFunc allocates to the box its accesses cover.

    A drop-in replacement for ``tvm.s_tir.transform.CompactBufferAllocation`` that works on
    block TIR and on lowered TIR, compacts views declared with ``T.decl_buffer(data=B.data)``
    together with their buffer, ignores accesses under provably false conditions, and bounds
    loop-dependent extents by the tightest constant it can prove. Buffers whose memory escapes
    (``B.data`` used opaquely, reinterpreting views) stay as they are;
    ``tvm_memplan.analysis.compacted_regions`` tells why.
    """
    return _ffi_api.CompactBufferAllocation(options)
