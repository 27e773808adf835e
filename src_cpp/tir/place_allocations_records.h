/*!
 * \file tir/place_allocations_records.h
 * \brief The record of the placement analysis (tir/place_allocations_analysis.h): where one
 *        allocation lives once lowered, and why. The analysis builds it; LowerTVMBuiltin and
 *        TagAllocationPlacement read the same objects; Python and the report read its reflected
 *        fields (`tvm_memplan.analysis.allocation_plan`).
 *
 * \code
 *   B = T.alloc_buffer((257,), "float32")   AllocationDecision: name "B", nbytes 1028,
 *                                              placement "workspace", stock_placement "stack",
 *                                              reason "1028 bytes > max_stack_alloca 1024 (...)"
 * \endcode
 *
 * Like every record of tvm-memplan, it is one reflected object: the fields reflection registers
 * are what every reader sees; the members after them hold the IR the rewrites need and are
 * C++'s only.
 */
#ifndef TVM_MEMPLAN_TIR_PLACE_ALLOCATIONS_RECORDS_H_
#define TVM_MEMPLAN_TIR_PLACE_ALLOCATIONS_RECORDS_H_

#include "ir/codes.h"
#include "ir/tir.h"

namespace tvm_memplan {
namespace tir {

/*! \brief Codes of AllocationDecision.placement and .stock_placement: where an allocation lives
 *         (one table, ir/codes.h, exported as the family "placement"). */
namespace placement {
inline constexpr const char* kStack = "stack";
inline constexpr const char* kWorkspace = "workspace";
inline constexpr const char* kUnlowered = "unlowered";
inline constexpr const char* kStock = "stock";
inline constexpr ir::Code kCodes[] = {
    {kStack, "a plain allocation that code generation puts on the stack", ""},
    {kWorkspace, "TVMBackendAllocWorkspace and TVMBackendFreeWorkspace", ""},
    {kUnlowered, "left as written (the annotation disable_lower_builtin)", ""},
    {kStock, "not host CPU memory: lowered by TVM's own rule, untouched by tvm-memplan", ""},
};
}  // namespace placement

/*! \brief Where one allocation lives, reflected as `tvm_memplan.tir.AllocationDecision`. */
class AllocationDecisionObj : public ffi::Object {
 public:
  // Reflected fields: each documented once, in RegisterReflection (place_allocations_records.cc).
  ffi::Optional<ffi::String> function;
  ffi::String name;
  ffi::String kind;
  ffi::String scope;
  ffi::String dtype;
  ffi::Array<ffi::Any> shape;
  ffi::Optional<int64_t> nbytes;
  ffi::Optional<ffi::ObjectRef> size;
  ffi::String placement = placement::kStock;
  ffi::String reason;
  ffi::String stock_placement = placement::kStock;

  // C++ only: what the rewrites need.
  /*! \brief The buffer (in TVM 0.27 a buffer is a variable of buffer type). Held as an
   *         ObjectRef, not an ir::Buffer, which has no empty value: reflection then gives the
   *         record a constructor from keywords, by which the report's tests build records. */
  ffi::ObjectRef buffer_node;
  ir::Buffer buffer() const { return ir::Buffer(buffer_node); }
  /*! \brief The defining AllocBuffer, or the SBlock whose alloc_buffers hold the buffer. */
  ffi::ObjectRef node;
  /*! \brief "global.stack": on the stack whatever the limits, never moved by the budget. */
  bool forced_stack = false;
  /*! \brief Whether a `device_id` attribute encloses the allocation. */
  bool has_device_id = false;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.tir.AllocationDecision", AllocationDecisionObj,
                                    ffi::Object);
};

using AllocationDecision = ffi::ObjectPtr<AllocationDecisionObj>;

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_PLACE_ALLOCATIONS_RECORDS_H_
