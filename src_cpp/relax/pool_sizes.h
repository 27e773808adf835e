/*!
 * \file relax/pool_sizes.h
 * \brief The sizes planned storages are allocated with, so that TVM's pooled allocator reuses
 *        one block across the functions of a module.
 *
 * TVM's VM, and MLC-LLM's engine, allocate each storage on every call through the
 * PooledAllocator: it reuses a freed block only for a request of the same size rounded up to
 * 4096 bytes, and gives nothing back, so a process holds, per size, the most blocks of it ever
 * live at once. Functions whose storages all differ in size leave one block per size behind.
 * Pool sizing raises the k-th largest constant storage of every function to the k-th largest of
 * the module (per device and scope), so that every function asks the pool for the same sizes
 * and the process holds about what its largest function needs:
 *
 * \code
 *   function   planned   allocated               the pool holds, once all have run:
 *   prefill    65536     65536                     planned sizes:    65536 + 32768 + 8192
 *   embed      32768     65536 (with prefill)      allocated sizes:  65536
 *   decode      8192     65536 (with prefill)
 * \endcode
 *
 * For MLC-LLM's engine (functions marked `relax.memory_plan_dynamic_func_output`, as MLC-LLM's
 * AttachMemoryPlanAttr marks them), a storage keeps its size where the larger one would take its
 * function's constant storages together past the module's largest function's: that sum is the
 * engine's "temporary buffer" estimate, which it reserves twice ahead of the KV cache, so pool
 * sizing never raises it there (the KV cache is what its users pay for). Elsewhere what the pool
 * holds is what the process pays, and storages take the module's sizes freely.
 * Left as planned: functions TVM's planner plans, storages of symbolic size, storages holding a
 * result (it outlives the call: at a larger size, the caller would hold that), and functions that
 * call or are called by another Relax function of the module (the caller's storages are live
 * while the callee runs: both would then hold the largest size). Calls that run at the same time
 * (threads, several VMs) each get blocks of their own, as before. The naive allocator allocates
 * what each call asks: there a small function allocates the module's largest size (one
 * allocation per storage as before, no more memory at once than the largest function needs).
 */
#ifndef TVM_MEMPLAN_RELAX_POOL_SIZES_H_
#define TVM_MEMPLAN_RELAX_POOL_SIZES_H_

#include <string>
#include <vector>

#include "ir/relax.h"
#include "relax/memory_plan_records.h"
#include "relax/planner_choice.h"

namespace tvm_memplan {
namespace relax {

/*! \brief The size one storage is allocated with, and whose storage set it. */
struct PooledSize {
  /*! \brief Bytes asked of the allocator: the planned bytes, or the module's storage of the same
   *         rank; -1 when the storage has a symbolic size. */
  int64_t bytes = -1;
  /*! \brief The function whose storage of the same rank sets `bytes`; "" when its own does. */
  std::string with;
};

/*!
 * \brief For MLC-LLM's engine, before PoolSizes: where a function cannot take the module's
 *        largest storage size because its other constant storages (its results, which keep
 *        their size) would take it past the largest function's bytes, every function whose
 *        largest storage is above the size it can take has that storage split in two, the
 *        function's bytes unchanged, so that both functions ask the pool for the same sizes:
 *
 * \code
 *   function                       storages (bytes)          the pool holds, once all have run:
 *   prefill                        229376                      not split: 229376 + 196608
 *   prefill_to_last_hidden_states  196608, result 32768                   + 32768
 *   after the split: prefill       196608 + 32768              split:     196608 + 32768
 * \endcode
 *
 * All such storages are split or none is (one left whole would still hold the largest block);
 * a split that the offset packer cannot place within the two sizes leaves the plans as they
 * are. Each split storage names the function it was split for (StorageAllocation.split_for).
 */
void SplitLargestStorages(const ir::IRModule& mod, const std::vector<FunctionMemoryPlanPtr>& plans,
                          const std::vector<PlannerChoice>& choices,
                          const MemoryPlanOptionsObj& options);

/*!
 * \brief Per plan, per storage, the size to allocate (option `pool_sizes`; without it, each
 *        storage's own bytes).
 */
std::vector<std::vector<PooledSize>> PoolSizes(const ir::IRModule& mod,
                                               const std::vector<FunctionMemoryPlanPtr>& plans,
                                               const std::vector<PlannerChoice>& choices,
                                               const MemoryPlanOptionsObj& options);

/*! \brief The records of `plans` with the sizes PoolSizes chose (StorageAllocation.pooled_*). */
void RecordPoolSizes(const std::vector<FunctionMemoryPlanPtr>& plans,
                     const std::vector<std::vector<PooledSize>>& sizes);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_POOL_SIZES_H_
