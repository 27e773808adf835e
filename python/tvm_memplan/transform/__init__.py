"""tvm-memplan passes as ordinary ``tvm.transform.Pass`` objects."""

from .lower_tvm_builtin import LowerTVMBuiltin
from .tag_allocation_placement import TagAllocationPlacement

__all__ = ["LowerTVMBuiltin", "TagAllocationPlacement"]
