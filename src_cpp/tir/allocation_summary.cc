/*!
 * \file tir/allocation_summary.cc
 * \brief Allocation summary: a ScopedVisitor that records each definition it sees.
 */
#include "tir/allocation_summary.h"

#include <tvm/ffi/reflection/registry.h>

#include <algorithm>
#include <utility>

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
    AllocationRecord record;
    record.function = function_;
    record.name = buffer.name();
    record.shape = buffer.shape();
    record.dtype = buffer.dtype();
    record.scope = buffer.scope().empty() ? "global" : buffer.scope();
    switch (site.kind) {
      case AllocationSite::Kind::kAllocBuffer:
        record.kind = "alloc_buffer";
        record.size_bytes = buffer.ConstSizeBytes();
        break;
      case AllocationSite::Kind::kBlockAllocBuffer:
        record.kind = "block_alloc_buffer";
        record.size_bytes = buffer.ConstSizeBytes();
        record.block = SBlock(site.node).name_hint();
        break;
      case AllocationSite::Kind::kDeclBuffer: {
        record.kind = "decl_buffer";
        record.size_bytes = buffer.ConstSizeBytes();
        if (std::optional<Buffer> base = DeclBuffer(site.node).viewed_buffer()) {
          record.view_of = base->name();
        }
        break;
      }
    }
    records.push_back(std::move(record));
  }

  std::string function_;
};

ffi::Map<ffi::String, ffi::Any> ToFFI(const AllocationRecord& r) {
  ffi::Map<ffi::String, ffi::Any> out;
  out.Set("function", ffi::String(r.function));
  out.Set("name", ffi::String(r.name));
  out.Set("kind", ffi::String(r.kind));
  out.Set("shape", r.shape);
  out.Set("dtype", ffi::String(DTypeToString(r.dtype)));
  out.Set("scope", ffi::String(r.scope));
  out.Set("size_bytes", r.size_bytes ? ffi::Any(*r.size_bytes) : ffi::Any(nullptr));
  out.Set("view_of", r.view_of ? ffi::Any(ffi::String(*r.view_of)) : ffi::Any(nullptr));
  out.Set("block", r.block ? ffi::Any(ffi::String(*r.block)) : ffi::Any(nullptr));
  return out;
}

ffi::Array<ffi::Map<ffi::String, ffi::Any>> AllocationSummaryFFI(ffi::Any func_or_mod) {
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
  ffi::Array<ffi::Map<ffi::String, ffi::Any>> out;
  for (const AllocationRecord& r : records) out.push_back(ToFFI(r));
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

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def("tvm_memplan.analysis.allocation_summary",
                                        AllocationSummaryFFI);
}

}  // namespace tir
}  // namespace tvm_memplan
