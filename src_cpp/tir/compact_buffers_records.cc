/*!
 * \file tir/compact_buffers_records.cc
 * \brief Reflection of the compaction records.
 */
#include "tir/compact_buffers_records.h"

#include <tvm/ffi/reflection/registry.h>

#include "ir/options.h"

namespace tvm_memplan {
namespace tir {

void CompactionOptionsObj::RegisterReflection() {
  OptionsDef<CompactionOptionsObj>().Option(
      "is_strict", &CompactionOptionsObj::is_strict,
      "Never let a compacted extent exceed the original one (True), or size each dimension "
      "exactly to what the accesses cover, which may be larger (False).");
}

void CompactedRegionObj::RegisterReflection() {
  namespace refl = tvm::ffi::reflection;
  using R = CompactedRegionObj;
  refl::ObjectDef<R>()
      .def_ro("name", &R::name, "The allocated buffer.")
      .def_ro("kind", &R::kind, "\"alloc_buffer\" or \"block_alloc_buffer\".")
      .def_ro("dtype", &R::dtype, "The element type.")
      .def_ro("original_shape", &R::original_shape, "The shape as allocated.")
      .def_ro("shape", &R::shape, "The compacted shape (the original when kept whole).")
      .def_ro("offset", &R::offset, "What the rewrite subtracts from each index.")
      .def_ro("original_strides", &R::original_strides, "Strides as allocated (empty: row-major).")
      .def_ro("strides", &R::strides, "Strides after compaction (buffer_dim_align).")
      .def_ro("views", &R::views, "The decl_buffer views compacted with the buffer.")
      .def_ro("reason", &R::reason, "Why the buffer stays as it is; None when compacted.")
      .def_ro("notes", &R::notes, "Dimensions kept at their extent although others compact.")
      .def_ro("relaxed_over", &R::relaxed_over,
              "Loops around the allocation whose iterations share the buffer, so its region "
              "covers all of them: vectorized loops (lanes run together) and threads that share "
              "its storage scope.")
      .def_ro("original_bytes", &R::original_bytes,
              "Bytes as allocated (ir::AllocatedBytes); None when symbolic.")
      .def_ro("compacted_bytes", &R::compacted_bytes, "Bytes after compaction; None when symbolic.")
      .def_ro("original_size", &R::original_size,
              "Bytes as allocated, as an int64 expression of the shape variables.")
      .def_ro("compacted_size", &R::compacted_size,
              "Bytes after compaction, as an int64 expression of the shape variables.");
}

TVM_FFI_STATIC_INIT_BLOCK() {
  CompactionOptionsObj::RegisterReflection();
  CompactedRegionObj::RegisterReflection();
}

}  // namespace tir
}  // namespace tvm_memplan
