"""The names tvm-memplan's passes run under (``PassInfo.name``), for pass instruments and
traces (``instrument.trace``), the report and the benchmarks. A C++ pass's name is read off the
pass itself, so it is written once, where the pass is made; the pipelines' own wrappers are
named here.

    trace(run, [pass_names.PLANNER]).before[pass_names.PLANNER]
"""

from __future__ import annotations

import tvm

from . import transform

#: tvm-memplan's StaticPlanBlockMemory.
PLANNER = transform.StaticPlanBlockMemory().info.name
#: TVM's StaticPlanBlockMemory, the pass ours replaces (and the report and benchmarks compare).
STOCK_PLANNER = tvm.relax.transform.StaticPlanBlockMemory().info.name
#: DataflowUseInplaceCalls, as it runs inside the pipelines (before legalization, after the
#: schedules).
INPLACE = transform.DataflowUseInplaceCalls().info.name
#: CompactBufferAllocation v2, VectorizeInplaceLoops (before VectorizeLoop),
#: TagAllocationPlacement (before StorageRewrite) and the scope-aware LowerTVMBuiltin, the
#: memplan TIR pipeline's passes.
COMPACTION = transform.CompactBufferAllocation().info.name
VECTORIZE = transform.VectorizeInplaceLoops().info.name
PLACEMENT = transform.TagAllocationPlacement().info.name
LOWER_BUILTIN = transform.LowerTVMBuiltin().info.name
#: The stock TIR passes that ours replace in the memplan TIR pipeline.
STOCK_COMPACTION = tvm.s_tir.transform.CompactBufferAllocation().info.name
STOCK_LOWER_BUILTIN = tvm.tirx.transform.LowerTVMBuiltin().info.name
#: TVM's DataflowUseInplaceCalls, which ours replaces where a pipeline runs it (MLC-LLM's does
#: not; ours runs there all the same).
STOCK_INPLACE = tvm.relax.transform.DataflowUseInplaceCalls().info.name
#: What a "memplan" build runs in place of stock's: our passes (VectorizeInplaceLoops and
#: TagAllocationPlacement have no stock counterpart), and the stock passes they replace.
#: Compile-time splits (tools/mlc_llm_cuda_graphs.py --pass-split) read both from here.
OURS_IN_PLACE_OF_STOCK = (PLANNER, INPLACE, COMPACTION, VECTORIZE, PLACEMENT, LOWER_BUILTIN)
STOCK_REPLACED = (STOCK_PLANNER, STOCK_INPLACE, STOCK_COMPACTION, STOCK_LOWER_BUILTIN)
#: The in-place pass then LegalizeOps (CPUs), as a pass and as the pipelines' wrapper.
LEGALIZE = transform.LegalizeOpsAfterInplaceCalls().info.name
#: The pipelines' wrappers: the in-place pass then RewriteDataflowReshape,
#: VectorizeInplaceLoops then VectorizeLoop, TagAllocationPlacement then StorageRewrite.
REWRITE_DATAFLOW_RESHAPE = "tvm_memplan.RewriteDataflowReshape"
VECTORIZE_LOOP = "tvm_memplan.VectorizeLoop"
STORAGE_REWRITE = "tvm_memplan.StorageRewrite"
