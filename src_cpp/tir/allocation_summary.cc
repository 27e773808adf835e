/*!
 * \file tir/allocation_summary.cc
 * \brief Allocation summary: a ScopedVisitor that records each definition it sees.
 */
#include "tir/allocation_summary.h"

#include <tvm/ffi/reflection/registry.h>

#include <algorithm>
#include <utility>

#include "ir/scopes.h"
#include "ir/visitor.h"

namespace tvm_memplan {
namespace tir {

using namespace ir;

namespace {

class AllocationCollector : public ScopedVisitor {
 public:
  AllocationCollector(Analyzer* analyzer, std::string function)
      : ScopedVisitor(analyzer), function_(std::move(function)) {}

  std::vector<AllocationRecord> records;

 private:
  void OnAllocation(const AllocationSite& site) override {
    const Buffer& buffer = site.buffer;
    AllocationRecord record = ffi::make_object<AllocationObj>();
    if (!function_.empty()) record->function = ffi::String(function_);
    record->name = buffer.name();
    record->shape = IntsWhereConstant(buffer.shape());
    record->dtype = DTypeToString(buffer.dtype());
    record->scope = buffer.scope().empty() ? std::string(scope::kGlobal) : buffer.scope();
    if (std::optional<int64_t> bytes = buffer.ConstSizeBytes()) record->size_bytes = *bytes;
    record->size = AllocatedBytesExpr(buffer.shape(), buffer.strides(), buffer.dtype());
    record->kind = AllocationKindName(site.kind);
    switch (site.kind) {
      case AllocationSite::Kind::kAllocBuffer:
        break;
      case AllocationSite::Kind::kBlockAllocBuffer:
        record->block = ffi::String(SBlock(site.node).name_hint());
        break;
      case AllocationSite::Kind::kDeclBuffer: {
        if (std::optional<Buffer> base = DeclBuffer(site.node).viewed_buffer()) {
          record->view_of = ffi::String(base->name());
        }
        break;
      }
    }
    records.push_back(std::move(record));
  }

  std::string function_;
};

ffi::Array<ffi::ObjectRef> AllocationSummaryFFI(ffi::Any func_or_mod) {
  std::vector<AllocationRecord> records;
  auto obj = func_or_mod.try_cast<ffi::ObjectRef>();
  if (obj && Is<PrimFunc>(*obj)) {
    PrimFunc func(*obj);
    records = SummarizeAllocations(func, func.global_symbol());
  } else if (obj && Is<IRModule>(*obj)) {
    records = SummarizeAllocations(IRModule(*obj));
  } else {
    TVM_FFI_THROW(TypeError) << "allocation_summary expects a tvm.tirx.PrimFunc or a tvm.IRModule, "
                             << "got `" << func_or_mod.GetTypeKey() << "`";
  }
  ffi::Array<ffi::ObjectRef> out;
  for (const AllocationRecord& r : records) out.push_back(ffi::ObjectRef(r));
  return out;
}

}  // namespace

std::vector<AllocationRecord> SummarizeAllocations(const PrimFunc& func,
                                                   const std::string& function_name) {
  Analyzer analyzer;
  AllocationCollector collector(&analyzer, function_name);
  collector.Run(func);
  return std::move(collector.records);
}

std::vector<AllocationRecord> SummarizeAllocations(const IRModule& mod) {
  std::vector<std::pair<std::string, PrimFunc>> funcs;
  for (const auto& [global_var, func] : mod.functions()) {
    if (Is<PrimFunc>(func)) funcs.emplace_back(GlobalVarName(global_var), PrimFunc(func));
  }
  std::sort(funcs.begin(), funcs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<AllocationRecord> records;
  for (const auto& [name, func] : funcs) {
    std::vector<AllocationRecord> part = SummarizeAllocations(func, name);
    records.insert(records.end(), part.begin(), part.end());
  }
  return records;
}

void AllocationObj::RegisterReflection() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<AllocationObj>()
      .def_ro("function", &AllocationObj::function,
              "The function's name in its module (or its global_symbol); None without one.")
      .def_ro("name", &AllocationObj::name, "The buffer.")
      .def_ro("kind", &AllocationObj::kind,
              "\"alloc_buffer\" (flat), \"block_alloc_buffer\" (an SBlock's) or \"decl_buffer\" "
              "(a declaration, maybe a view).")
      .def_ro("shape", &AllocationObj::shape, "Extents: ints, or expressions where symbolic.")
      .def_ro("dtype", &AllocationObj::dtype, "The element type.")
      .def_ro("scope", &AllocationObj::scope, "The storage scope (\"global\" for TVM's \"\").")
      .def_ro("size_bytes", &AllocationObj::size_bytes,
              "Bytes the allocation takes (strides counted); None when symbolic.")
      .def_ro("size", &AllocationObj::size,
              "Bytes as an int64 expression of the shape variables (an IntImm when static).")
      .def_ro("view_of", &AllocationObj::view_of,
              "For a declaration over another buffer's data: that buffer.")
      .def_ro("block", &AllocationObj::block, "For a block allocation: the block.");
}

TVM_FFI_STATIC_INIT_BLOCK() {
  AllocationObj::RegisterReflection();
  tvm::ffi::reflection::GlobalDef().def("tvm_memplan.analysis.allocation_summary",
                                        AllocationSummaryFFI);
}

}  // namespace tir
}  // namespace tvm_memplan
