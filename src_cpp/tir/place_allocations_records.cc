/*!
 * \file tir/place_allocations_records.cc
 * \brief Reflection of the placement record.
 */
#include "tir/place_allocations_records.h"

#include <tvm/ffi/reflection/registry.h>

namespace tvm_memplan {
namespace tir {

void AllocationDecisionObj::RegisterReflection() {
  namespace refl = tvm::ffi::reflection;
  using R = AllocationDecisionObj;
  refl::ObjectDef<R>()
      .def_ro("function", &R::function, "The PrimFunc; None when it has no name.")
      .def_ro("name", &R::name, "The buffer.")
      .def_ro("kind", &R::kind, "\"alloc_buffer\" or \"block_alloc_buffer\".")
      .def_ro("scope", &R::scope, "The storage scope as written (\"global\" for TVM's \"\").")
      .def_ro("dtype", &R::dtype, "The element type.")
      .def_ro("shape", &R::shape, "Extents: ints, or expressions where symbolic.")
      .def_ro("nbytes", &R::nbytes, "Bytes (ir::AllocatedBytes); None when not constant.")
      .def_ro("size", &R::size,
              "Bytes as an int64 expression of the shape variables (an IntImm when static).")
      .def_ro("placement", &R::placement,
              ir::CodeFieldDoc("Where the allocation lives", placement::kCodes))
      .def_ro("reason", &R::reason, "The rule and the limit that decided it.")
      .def_ro("stock_placement", &R::stock_placement,
              "Where TVM's own LowerTVMBuiltin would put the allocation as written (a code of "
              "placement).");
}

TVM_FFI_STATIC_INIT_BLOCK() {
  AllocationDecisionObj::RegisterReflection();
  ir::RegisterCodeFamily("placement", placement::kCodes);
}

}  // namespace tir
}  // namespace tvm_memplan
