/*!
 * \file tir/allocation_summary.h
 * \brief Every buffer a PrimFunc defines: block allocations, flat allocations and views.
 *
 * \code
 *   @T.prim_func
 *   def main(A: T.Buffer((16, 16), "float32")):
 *       B = T.alloc_buffer((16, 16), "float32", scope="local")   -> B  alloc_buffer  1024 bytes
 *       V = T.decl_buffer((256,), "float32", data=B.data)        -> V  decl_buffer   view of B
 * \endcode
 *
 * The size is counted only when the shape is constant; views allocate nothing, so totals over
 * the summary count only the `*alloc_buffer` kinds.
 */
#ifndef TVM_MEMPLAN_TIR_ALLOCATION_SUMMARY_H_
#define TVM_MEMPLAN_TIR_ALLOCATION_SUMMARY_H_

#include <optional>
#include <string>
#include <vector>

#include "ir/tir.h"

namespace tvm_memplan {
namespace tir {

/*! \brief One buffer definition, reflected as `tvm_memplan.tir.Allocation`. */
class AllocationObj : public ffi::Object {
 public:
  // Reflected fields: each documented once, in RegisterReflection (allocation_summary.cc).
  ffi::Optional<ffi::String> function;
  ffi::String name;
  ffi::String kind;
  ffi::Array<ffi::Any> shape;
  ffi::String dtype;
  ffi::String scope;
  ffi::Optional<int64_t> size_bytes;
  ffi::Optional<ffi::ObjectRef> size;
  ffi::Optional<ffi::String> view_of;
  ffi::Optional<ffi::String> block;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.tir.Allocation", AllocationObj, ffi::Object);
};

using AllocationRecord = ffi::ObjectPtr<AllocationObj>;

/*! \brief The buffers defined by a PrimFunc, in definition order. */
std::vector<AllocationRecord> SummarizeAllocations(const ir::PrimFunc& func,
                                                   const std::string& function_name);

/*! \brief The buffers defined by every PrimFunc of a module, functions in name order. */
std::vector<AllocationRecord> SummarizeAllocations(const ir::IRModule& mod);

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_ALLOCATION_SUMMARY_H_
