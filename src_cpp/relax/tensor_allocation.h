/*!
 * \file relax/tensor_allocation.h
 * \brief What the planner's analysis keeps of each `R.builtin.alloc_tensor` while it works
 *        (relax/memory_plan_analysis.h): filled by its steps 1 to 5 in turn (the allocation, its
 *        size, its lifetime, its concatenation group, its storage and offset), then written
 *        into the function's PlannedTensor records.
 *
 * \code
 *   a = R.builtin.alloc_tensor(R.shape([n]), "float32", 0, "global")   # bound n <= 32
 *   // step 1: binding, call and program point;  step 2: bytes 128 (at n's bound), symbolic,
 *   // bounded_vars {n};  step 3: first 3, last 7;  step 5: storage 0, offset 256
 * \endcode
 */
#ifndef TVM_MEMPLAN_RELAX_TENSOR_ALLOCATION_H_
#define TVM_MEMPLAN_RELAX_TENSOR_ALLOCATION_H_

#include <string>
#include <utility>
#include <vector>

#include "ir/relax.h"
#include "relax/storage_flow.h"

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
  /*! \brief Not of a constant bound, and its storage can be sized at the function's start:
   *         only parameters' shape variables occur in `bound_size`, or in `size`. */
  bool sized_on_entry = false;
  /*!
   * \brief Where `bytes` is -1: the bytes at the bounds of its bounded variables, an expression
   *        of parameters' shape variables (`256 * vocab_size * 4`); undefined when there is none.
   */
  ObjectRef bound_size;
  /*! \brief The bounded shape variables in its shape (`bytes` or `bound_size` takes their
   *         bounds). */
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
  /*! \brief Planned after all (a function result given storage of its own). */
  void MarkPlanned() { Unplanned("", ""); }
  int64_t storage = -1, offset = 0;
  bool known_type = false;
  /*! \brief Placed with others by copy-free concatenations: the group, and its offset there. */
  int64_t group = -1, group_offset = 0;
};

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_TENSOR_ALLOCATION_H_
