"""FFI functions registered by the C++ core under ``tvm_memplan.transform``."""

import tvm_ffi

from .. import _lib  # noqa: F401  (the library must be loaded before its functions are bound)

tvm_ffi.init_ffi_api("tvm_memplan.transform", __name__)
