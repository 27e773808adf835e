/*!
 * \file tir/compact_buffers.cc
 * \brief The rewrite of CompactBufferAllocation and its pass registration.
 */
#include "tir/compact_buffers.h"

#include <tvm/ffi/reflection/registry.h>

#include <unordered_map>
#include <utility>

#include "ir/dump.h"
#include "ir/pass.h"
#include "ir/rewriter.h"
#include "tir/compact_buffers_analysis.h"

namespace tvm_memplan {
namespace tir {

using namespace ir;

namespace {

/*! \brief Whether dimension `d` of `r` moves: an offset that is not a constant 0. */
bool Shifted(const BufferReplacement& r, size_t d) {
  if (d >= r.offset.size()) return false;
  std::optional<int64_t> c = AsConstInt(r.offset[d]);
  return !(c && *c == 0);
}

Array<ObjectRef> ShiftIndices(const Array<ObjectRef>& indices, const BufferReplacement& r) {
  Array<ObjectRef> out;
  for (size_t d = 0; d < indices.size(); ++d) {
    out.push_back(Shifted(r, d) ? Sub(indices[d], r.offset[d]) : indices[d]);
  }
  return out;
}

Array<ObjectRef> ShiftRegion(const Array<ObjectRef>& region, const BufferReplacement& r) {
  Array<ObjectRef> out;
  for (size_t d = 0; d < region.size(); ++d) {
    if (Shifted(r, d)) {
      Range range(region[d], "BufferRegion.region");
      out.push_back(MakeRange(Sub(range.min(), r.offset[d]), range.extent()));
    } else {
      out.push_back(region[d]);
    }
  }
  return out;
}

}  // namespace

PrimFunc CompactBufferAllocation(const PrimFunc& func, const CompactionOptions& options) {
  std::vector<CompactedRegion> regions = AnalyzeCompaction(func, options);
  // Keyed by the new buffer var: hooks see nodes after their vars were remapped.
  std::unordered_map<const Object*, const BufferReplacement*> by_new_buffer;
  Rewriter rewriter;
  for (const CompactedRegion& region : regions) {
    for (const BufferReplacement& replaced : region->replacements) {
      rewriter.RemapVar(replaced.original.ref(), replaced.compacted.ref());
      by_new_buffer.emplace(replaced.compacted.get(), &replaced);
    }
  }
  if (by_new_buffer.empty()) return func;
  auto find = [&](const Buffer& buffer) -> const BufferReplacement* {
    auto it = by_new_buffer.find(buffer.get());
    return it == by_new_buffer.end() ? nullptr : it->second;
  };
  rewriter.PostOrder<BufferStore>([&](const BufferStore& store) -> ObjectRef {
    const BufferReplacement* r = find(store.buffer());
    return r ? store.WithAccess(store.buffer(), ShiftIndices(store.indices(), *r)).ref()
             : store.ref();
  });
  rewriter.PostOrder<BufferLoad>([&](const BufferLoad& load) -> ObjectRef {
    const BufferReplacement* r = find(load.buffer());
    return r ? load.WithAccess(load.buffer(), ShiftIndices(load.indices(), *r)).ref() : load.ref();
  });
  // Block read/write regions and match_buffer sources.
  rewriter.PostOrder<BufferRegion>([&](const BufferRegion& region) -> ObjectRef {
    const BufferReplacement* r = find(region.buffer());
    return r ? region.WithRegion(ShiftRegion(region.region(), *r)).ref() : region.ref();
  });
  return PrimFunc(rewriter(func));
}

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def(
      "tvm_memplan.transform.CompactBufferAllocation", [](CompactionOptions options) {
        return MakePrimFuncPass(
            "tvm_memplan.CompactBufferAllocation", 0,
            [options](PrimFunc func, IRModule, ObjectRef) {
              PassDump dump("CompactBufferAllocation");
              if (dump.enabled()) {
                std::string name = func.global_symbol();
                dump.Write(name + "-input", func.ref());
                Array<ObjectRef> records;
                for (const CompactedRegion& r : AnalyzeCompaction(func, options)) {
                  records.push_back(ObjectRef(r));
                }
                dump.Write(name + "-regions", records);
              }
              PrimFunc out = CompactBufferAllocation(func, options);
              dump.Write(func.global_symbol() + "-output", out.ref());
              return out;
            });
      });
}

}  // namespace tir
}  // namespace tvm_memplan
