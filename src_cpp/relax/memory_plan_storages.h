/*!
 * \file relax/memory_plan_storages.h
 * \brief Step 5 of the planner's analysis (relax/memory_plan_analysis.h): the storages of one
 *        function and each planned tensor's place in them. Per (device, storage scope), tensors
 *        of static or bounded size are packed at offsets of one storage
 *        (relax/offset_packing.h), a copy-free concatenation's group whole; tensors of one
 *        unbounded symbolic size share storages whose lifetimes do not overlap.
 *
 * \code
 *   a (256 B, live [0, 2]), b (128 B, [1, 3]), c (256 B, [3, 4]), all global on device 0
 *   std::string refusal = PackStorages(func, &tensors, devices, options, &storages);
 *   // refusal == "": one storage of 384 bytes (at_bound); a at 0, b at 256, c at 0
 * \endcode
 */
#ifndef TVM_MEMPLAN_RELAX_MEMORY_PLAN_STORAGES_H_
#define TVM_MEMPLAN_RELAX_MEMORY_PLAN_STORAGES_H_

#include <string>
#include <vector>

#include "ir/relax.h"
#include "relax/memory_plan_records.h"
#include "relax/tensor_allocation.h"
#include "target/planning_devices.h"

namespace tvm_memplan {
namespace relax {

/*!
 * \brief Storages (StorageAllocation records, appended to `storages`) for the plannable tensors
 *        of `func`, setting their `storage` and `offset`; returns why the function must be
 *        planned by the stock planner instead ("" when it need not): a storage scope other than
 *        "global", or a device where a tensor at an offset would be copied. With the function
 *        attribute `relax.memory_plan_dynamic_func_output`, unplanned tensors of bounded symbolic
 *        size get storage of their own, as TVM's planner does. Offsets are multiples of
 *        `options.alignment`; the storages of the function share one exact-search budget of
 *        `options.exact_search_ms`: every storage is placed by the greedy orders first, then
 *        the exact search runs where a storage lies the most bytes above its bound first. Each
 *        record says how close to its bound it is.
 */
std::string PackStorages(const ir::relax::Function& func, std::vector<TensorAllocation>* tensors,
                         const target::PlanningDevices& devices,
                         const MemoryPlanOptionsObj& options, std::vector<ObjectRef>* storages);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_MEMORY_PLAN_STORAGES_H_
