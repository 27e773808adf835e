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
#include <utility>
#include <vector>

#include "ir/relax.h"
#include "relax/memory_plan_records.h"
#include "relax/storage_flow.h"
#include "target/planning_devices.h"

namespace tvm_memplan {
namespace relax {

/*! \brief One `R.builtin.alloc_tensor` and what the planner decides for it. */
struct TensorAllocation {
  TensorAllocation(ir::relax::Binding binding, ir::Call call, int64_t step, RootId root)
      : binding(std::move(binding)), call(std::move(call)), step(step), root(root) {}
  ir::relax::Binding binding;
  ir::Call call;
  int64_t step;
  RootId root;
  Array<ObjectRef> shape;
  DLDataType dtype{kDLFloat, 32, 1};
  int64_t device = 0;
  std::string scope;
  /*! \brief Bytes (upper bound when symbolic and bounded); -1 unbounded. */
  int64_t bytes = -1;
  bool symbolic = false;
  /*! \brief The bytes as an expression of the shape variables (when the type is known). */
  ObjectRef size;
  /*! \brief Unbounded, and only parameters' shape variables occur in `size`: it can size a
   *         storage at the function's start. */
  bool sized_on_entry = false;
  /*! \brief The bounded shape variables in its shape (`bytes` takes their bounds). */
  std::vector<const Object*> bounded_vars;
  std::string op;
  int64_t first = 0, last = 0;
  /*! \brief Why it is not planned: a code of namespace `unplanned`, and a sentence. */
  const char* unplanned = "";
  std::string reason;
  bool plannable() const { return *unplanned == '\0'; }
  void Unplanned(const char* code, std::string why) {
    unplanned = code;
    reason = std::move(why);
  }
  int64_t storage = -1, offset = 0;
  bool known_type = false;
  /*! \brief Placed with others by copy-free concatenations: the group, and its offset there. */
  int64_t group = -1, group_offset = 0;
};

/*!
 * \brief Storages (StorageAllocation records, appended to `storages`) for the plannable tensors
 *        of `func`, setting their `storage` and `offset`; returns why the function must be
 *        planned by the stock planner instead ("" when it need not): a storage scope other than
 *        "global", or a device where a tensor at an offset would be copied. With the function
 *        attribute `relax.memory_plan_dynamic_func_output`, unplanned tensors of bounded symbolic
 *        size get storage of their own, as TVM's planner does. Offsets are multiples of
 *        `options.alignment`; the storages of the function share one exact-search budget of
 *        `options.exact_search_ms`, and each record says how close to its bound it is.
 */
std::string PackStorages(const ir::relax::Function& func, std::vector<TensorAllocation>* tensors,
                         const target::PlanningDevices& devices,
                         const MemoryPlanOptionsObj& options, std::vector<ObjectRef>* storages);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_MEMORY_PLAN_STORAGES_H_
