/*!
 * \file tir/compact_buffers_analysis.cc
 * \brief Region analysis for CompactBufferAllocation, its collector: a ScopedVisitor that
 *        records every access, view, alias and write of every allocated buffer. Each access is
 *        relaxed as it arrives (region_relaxation.h) and merged per buffer and dimension, so a
 *        buffer read and written at the same index costs one entry; where the allocation's
 *        scope ends, it is finalized into its CompactedRegion (compact_buffers_finalize.h).
 */
#include "tir/compact_buffers_analysis.h"

#include <tvm/ffi/extra/structural_equal.h>
#include <tvm/ffi/reflection/registry.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "ir/analyzer.h"
#include "ir/scopes.h"
#include "ir/visitor.h"
#include "tir/affine_bounds.h"
#include "tir/compact_buffers_finalize.h"
#include "tir/compact_buffers_records.h"
#include "tir/region_relaxation.h"

namespace tvm_memplan {
namespace tir {

using namespace ir;
namespace attr = ir::schema::attr;
namespace op = ir::schema::op;

namespace {

// ---- storage scopes and threads ----------------------------------------------------------------

/*!
 * \brief Whether the threads of `thread_tag` share one copy of a buffer in `scope`, so its region
 *        must be relaxed over them (TVM's CanRelaxStorageUnderThread). Unknown tags and scopes are
 *        treated as shared: relaxing over more variables is always safe.
 */
bool SharedAcrossThreads(const std::string& scope, const std::string& thread_tag) {
  namespace tag = thread_tag;
  constexpr size_t kBlockIdx = Length(tag::kBlockIdx), kThreadIdx = Length(tag::kThreadIdx);
  int thread_rank = 0;
  int dim = 0;
  if (StartsWith(thread_tag, tag::kVThread) || thread_tag == tag::kCThread) {
    thread_rank = 1;
    dim = -1;
  } else if (StartsWith(thread_tag, tag::kBlockIdx) && thread_tag.size() > kBlockIdx) {
    dim = thread_tag[kBlockIdx] - 'x';
  } else if (StartsWith(thread_tag, tag::kThreadIdx) && thread_tag.size() > kThreadIdx) {
    thread_rank = 1;
    dim = thread_tag[kThreadIdx] - 'x';
  } else if (StartsWith(thread_tag, tag::kClusterCtaIdx)) {
    thread_rank = 2;
  } else if (StartsWith(thread_tag, tag::kPreferredClusterCtaIdx)) {
    thread_rank = 3;
  } else {
    return true;
  }
  int storage_rank;
  if (scope.empty() || StartsWith(scope, scope::kGlobal)) {
    storage_rank = 0;
  } else if (StartsWith(scope, scope::kShared)) {
    storage_rank = 1;
  } else if (StartsWith(scope, scope::kWarp)) {
    return thread_rank == 1 && dim == 0;  // warp memory is distributed over threadIdx.x only
  } else if (StartsWith(scope, scope::kLocal)) {
    storage_rank = 3;
  } else if (std::any_of(std::begin(scope::kFragmentPrefixes), std::end(scope::kFragmentPrefixes),
                         [&](const char* prefix) { return StartsWith(scope, prefix); })) {
    storage_rank = 4;  // per-thread fragments and special memories
  } else {
    return true;
  }
  return storage_rank <= thread_rank;
}

/*!
 * \brief Whether the iterations of `loop`, which encloses an allocation in `scope`, run together
 *        on one copy of the buffer, so its region must cover all of them; what to say of the
 *        loop then. Lanes of a vectorized loop run together whatever the scope: each needs its
 *        own element, as threads of one thread index do. Without this, a temporary produced and
 *        consumed in one vectorized iteration (split, compute_at, vectorize) shrinks to one
 *        element and VectorizeLoop stores every lane to it.
 */
std::optional<std::string> SharedByIterations(const std::string& scope, const LoopScope& loop) {
  std::string name = "`" + Var(loop.var).name() + "`";
  if (loop.kind == ForKind::kVectorized) return name + " (vectorized: one element per lane)";
  if (!loop.thread_tag.empty() && SharedAcrossThreads(scope, loop.thread_tag)) {
    return name + " (" + loop.thread_tag + ": threads share " +
           (scope.empty() ? std::string(scope::kGlobal) : scope) + " memory)";
  }
  return std::nullopt;
}

// ---- conditions --------------------------------------------------------------------------------

/*! \brief A condition split into conjuncts, with `likely` stripped and bindings substituted. */
struct ConditionInfo {
  ObjectRef keep_alive;
  std::vector<Atom> atoms;
};

// ---- the collector -----------------------------------------------------------------------------

class RegionCollector : public ScopedVisitor {
 public:
  RegionCollector(Analyzer* analyzer, const PrimFunc& func, const CompactionOptions& options)
      : ScopedVisitor(analyzer, Options{/*skip_unreachable=*/true,
                                        /*forget_finished_scopes=*/true}),
        options_(options) {
    for (const ObjectRef& param : func.params()) {
      function_vars_.insert(param.get());
      if (std::optional<Buffer> buffer = As<Buffer>(param)) {
        for (const ObjectRef& e : buffer->shape()) AddFunctionVars(e);
        for (const ObjectRef& e : buffer->strides()) AddFunctionVars(e);
        AddFunctionVars(buffer->elem_offset());
      }
    }
  }

  std::vector<CompactedRegion> Results() {
    std::vector<CompactedRegion> out;
    for (TrackedAllocation& t : tracked_) {
      if (!t.result) Finalize(&t);
      out.push_back(std::move(t.result));
    }
    return out;
  }

 private:
  // ---- events ----

  void OnAllocation(const AllocationSite& site) override {
    if (site.kind == AllocationSite::Kind::kDeclBuffer) {
      DeclareView(site);
      return;
    }
    const Object* var = site.buffer.get();
    if (auto it = root_of_.find(var); it != root_of_.end()) {
      // One var, two allocations: its first scope may be finalized already; undo that.
      TrackedAllocation& first = tracked_[it->second];
      GiveUp(&first, "it is defined more than once");
      if (first.result) Finalize(&first);
      return;
    }
    TrackedAllocation t(site);
    t.dims.resize(site.buffer.shape().size());
    for (size_t k = 0; k < site.loop_depth; ++k) {
      std::optional<std::string> shared = SharedByIterations(site.buffer.scope(), loops()[k]);
      t.outer_relaxed.push_back(shared.has_value());
      if (shared) t.relaxed_over.push_back(*shared);
    }
    if (site.kind == AllocationSite::Kind::kAllocBuffer) {
      Map<String, Any> annotations = AllocBuffer(site.node).annotations();
      if (auto it = annotations.find(attr::BufferDimAlign); it != annotations.end()) {
        RecordDimAlign(&t, (*it).second, /*block=*/nullptr);
      }
    }
    t.writes_begin = written_.size();
    root_of_[var] = tracked_.size();
    tracked_.push_back(std::move(t));
  }

  void OnAllocationEnd(const AllocationSite& site) override {
    if (site.kind == AllocationSite::Kind::kDeclBuffer) return;
    auto it = root_of_.find(site.buffer.get());
    if (it == root_of_.end()) return;
    TrackedAllocation& t = tracked_[it->second];
    // Finalize while the analyzer still describes the allocation point.
    if (!t.result && t.site.node.same_as(site.node)) Finalize(&t);
  }

  void OnLoad(const BufferLoad& load) override { AccessPoint(load.buffer(), load.indices()); }
  void OnStore(const BufferStore& store) override {
    Written(store.buffer().ref());
    AccessPoint(store.buffer(), store.indices());
  }

  /*! \brief Log a buffer that may be written here (a store, an opaque use, a call argument). */
  void Written(const ObjectRef& buffer) { written_.push_back(AliasRoot(buffer.get())); }

  /*! \brief The buffer whose memory `buffer` names, through views and matched buffers. */
  const Object* AliasRoot(const Object* buffer) const {
    for (auto it = alias_of_.find(buffer); it != alias_of_.end(); it = alias_of_.find(buffer)) {
      buffer = it->second;
    }
    return buffer;
  }

  void OnMatchBuffer(const MatchBufferRegion& match, const SBlock& /*block*/) override {
    BufferRegion source = match.source();
    alias_of_[match.buffer().get()] = source.buffer().get();
    TrackedAllocation* t = Find(source.buffer());
    if (!t) return;
    RequireVisibleOffsetHere(t);
    Access(t, source.region(), /*is_region=*/true, flat_views_.count(source.buffer().get()) > 0);
  }

  void OnCall(const Call& call) override {
    std::string op = call.op_name();
    Array<ObjectRef> args = call.args();
    if (op == op::BufferData) {
      if (args.size() == 1) {
        Written(args[0]);
        TrackedAllocation* t = Find(args[0]);
        if (t && !AccessAnnotatedRegions(t, args[0])) {
          GiveUp(t, "its data pointer `" + Var(args[0]).name() + ".data` is used opaquely");
        }
      }
      return;
    }
    if (op == op::AddressOf && args.size() == 1) {
      if (std::optional<BufferLoad> load = As<BufferLoad>(args[0])) {
        Written(load->buffer().ref());
        if (TrackedAllocation* t = Find(load->buffer())) {
          GiveUp(t, "its address is taken (`T.address_of`)");
        }
      }
    }
    for (const ObjectRef& arg : args) {
      if (IsVar(arg)) Written(arg);
      if (TrackedAllocation* t = Find(arg)) {
        std::string callee = op.empty() ? "a function" : "`" + op + "`";
        GiveUp(t, "it is passed to " + callee);
      }
    }
  }

  /*!
   * \brief TensorIR's contract for an opaque access (`B.data` in a call) inside a block that
   *        annotates `B` in its T.reads / T.writes: it touches only the annotated regions. Those
   *        become the accesses; false when there is no such block (lowered TIR) or annotation.
   */
  bool AccessAnnotatedRegions(TrackedAllocation* t, const ObjectRef& buffer) {
    if (blocks_.empty()) return false;
    SBlock block(blocks_.back().block);
    std::vector<BufferRegion> regions;
    for (const Array<ObjectRef>& annotated : {block.reads(), block.writes()}) {
      for (const ObjectRef& r : annotated) {
        BufferRegion region(r);
        if (Find(region.buffer()) == t && region.buffer().same_as(buffer)) {
          regions.push_back(region);
        }
      }
    }
    if (regions.empty()) return false;
    for (const BufferRegion& region : regions) {
      Access(t, region.region(), /*is_region=*/true, flat_views_.count(buffer.get()) > 0);
    }
    return true;
  }

  /*!
   * \brief Attributes that name a buffer (`T.attr(B.data, key, value)`): those about the
   *        allocation as a whole survive compaction; others might describe its layout.
   */
  void OnAttr(const AttrStmt& attr) override {
    Any node = attr.node();
    auto ref = node.try_cast<ObjectRef>();
    if (!ref) return;
    TrackedAllocation* t = Find(*ref);
    if (!t) {
      if (std::optional<Buffer> buffer = BufferOfDataPointer(*ref)) t = Find(*buffer);
    }
    if (!t) return;
    std::string key = attr.attr_key();
    if (key == attr::DoubleBufferScope || key == attr::StorageAlignment ||
        key == attr::VolatileScope || StartsWith(key, attr::PragmaPrefix)) {
      return;
    }
    GiveUp(t, "attribute `" + key + "` names it");
  }

  void OnBind(const Bind& bind) override {
    if (TrackedAllocation* t = Find(bind.value())) {
      GiveUp(t, "it is bound to `" + bind.var().name() + "`, an alias we do not follow");
    } else if (IsPrimExpr(bind.value())) {
      subst_[bind.var().get()] = bind.value();
    }
  }

  void OnBlockEnter(const SBlockRealize& realize) override {
    SBlock block = realize.block();
    Array<ObjectRef> iter_vars = block.iter_vars();
    Array<ObjectRef> values = realize.iter_values();
    for (size_t i = 0; i < iter_vars.size() && i < values.size(); ++i) {
      subst_[IterVar(iter_vars[i]).var().get()] = values[i];
    }
    blocks_.push_back(
        BlockFrame{loops().size(), !iter_vars.empty(), block.name_hint(), block.ref()});
    // The block's signature is rewritten with the offsets too, inside the block.
    for (const Array<ObjectRef>& regions : {block.reads(), block.writes()}) {
      for (const ObjectRef& region : regions) {
        if (TrackedAllocation* t = Find(BufferRegion(region).buffer())) RequireVisibleOffsetHere(t);
      }
    }
    Map<String, Any> annotations = block.annotations();
    if (auto it = annotations.find(attr::BufferDimAlign); it != annotations.end()) {
      RecordDimAlign(nullptr, (*it).second, &block);
    }
  }

  void OnBlockExit(const SBlockRealize& /*realize*/) override { blocks_.pop_back(); }

  // ---- buffers, views, alignment ----

  TrackedAllocation* Find(const ObjectRef& buffer_var) {
    if (!buffer_var.defined()) return nullptr;
    auto it = root_of_.find(buffer_var.get());
    return it == root_of_.end() ? nullptr : &tracked_[it->second];
  }

  static void GiveUp(TrackedAllocation* t, const std::string& reason) {
    if (t->give_up.empty()) t->give_up = reason;
  }

  void DeclareView(const AllocationSite& site) {
    std::optional<Buffer> base = DeclBuffer(site.node).viewed_buffer();
    if (!base) return;
    alias_of_[site.buffer.get()] = base->get();
    TrackedAllocation* t = Find(*base);
    if (!t) return;
    const Buffer& view = site.buffer;
    root_of_[view.get()] = root_of_[base->get()];
    if (view.same_as(t->site.buffer)) return;
    std::string mismatch = LayoutMismatch(t->site.buffer, view);
    if (mismatch.empty()) {
      t->views.push_back(view);
    } else if (std::optional<int64_t> row = FlatRowSize(t->site.buffer, view);
               row && mismatch == "another shape") {
      // A flat view reaches any element: only the outermost dimension can shrink.
      t->flat_views.push_back(view);
      t->row_size = *row;
      flat_views_.insert(view.get());
      for (size_t d = 1; d < t->dims.size(); ++d) {
        if (t->dims[d].unknown.empty()) {
          t->dims[d].unknown = "flat view `" + view.name() + "` addresses whole rows";
        }
      }
    } else {
      GiveUp(t, "view `" + view.name() + "` reinterprets it (" + mismatch + ")");
    }
  }

  /*!
   * \brief For a one-dimensional view of all of `buffer` (constant shapes), the number of
   *        elements in one index of the buffer's outermost dimension.
   */
  static std::optional<int64_t> FlatRowSize(const Buffer& buffer, const Buffer& view) {
    Array<ObjectRef> shape = buffer.shape(), flat = view.shape();
    std::optional<int64_t> total = buffer.ConstNumElements(), length = view.ConstNumElements();
    if (shape.size() < 2 || flat.size() != 1 || !total || !length || *total != *length) {
      return std::nullopt;
    }
    std::optional<int64_t> rows = AsConstInt(shape[0]);
    if (!rows || *rows <= 0) return std::nullopt;
    return *total / *rows;
  }

  /*! \brief How `view` lays out the memory differently from `buffer`; "" when it does not. */
  static std::string LayoutMismatch(const Buffer& buffer, const Buffer& view) {
    DLDataType a = buffer.dtype(), b = view.dtype();
    if (a.code != b.code || a.bits != b.bits || a.lanes != b.lanes) {
      return "dtype " + DTypeToString(b) + " over " + DTypeToString(a);
    }
    auto same = [](const ObjectRef& x, const ObjectRef& y) {
      return ffi::StructuralEqual::Equal(x, y);
    };
    if (!same(buffer.shape(), view.shape())) return "another shape";
    if (!same(buffer.strides(), view.strides())) return "other strides";
    if (!same(buffer.elem_offset(), view.elem_offset())) return "an element offset";
    if (buffer.scope() != view.scope()) return "another storage scope";
    return "";
  }

  /*! \brief Record `buffer_dim_align` tuples; for a block, buffer i is the block's i-th write. */
  void RecordDimAlign(TrackedAllocation* alloc, const Any& value, const SBlock* block) {
    auto tuples = value.try_cast<Array<Array<int64_t>>>();
    if (!tuples) return;
    for (const Array<int64_t>& tuple : *tuples) {
      if (tuple.size() != 4) continue;
      TrackedAllocation* t = alloc;
      if (block) {
        Array<ObjectRef> writes = block->writes();
        int64_t index = tuple[0];
        if (index < 0 || index >= static_cast<int64_t>(writes.size())) continue;
        t = Find(BufferRegion(writes[index]).buffer());
      }
      if (!t) continue;
      int64_t dim = tuple[1];
      if (dim < 0 || dim >= static_cast<int64_t>(t->dims.size())) continue;
      t->dim_aligns.push_back({dim, tuple[2], tuple[3]});
    }
  }

  // ---- non-opaque blocks ----

  struct BlockFrame {
    size_t loop_count;
    bool non_opaque;
    std::string name;
    ObjectRef block;
  };

  /*! \brief Offsets used here may not name loops outside the innermost non-opaque block. */
  void RequireVisibleOffsetHere(TrackedAllocation* t) {
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
      if (!it->non_opaque) continue;
      if (it->loop_count > t->first_visible_loop) {
        t->first_visible_loop = it->loop_count;
        t->opaque_block = it->name;
      }
      return;
    }
  }

  // ---- accesses ----

  void AccessPoint(const Buffer& buffer, const Array<ObjectRef>& indices) {
    TrackedAllocation* t = Find(buffer);
    if (!t) return;
    RequireVisibleOffsetHere(t);
    Access(t, indices, /*is_region=*/false, flat_views_.count(buffer.get()) > 0);
  }

  /*!
   * \brief An access: point indices, or ranges (ir.Range per dimension) when `is_region`;
   *        through a flat view when `flat` (one index into the flattened buffer).
   */
  void Access(TrackedAllocation* t, const Array<ObjectRef>& items, bool is_region, bool flat) {
    if (!t->give_up.empty()) return;
    if (items.size() != (flat ? 1 : t->dims.size())) {
      GiveUp(t, "it is accessed with " + std::to_string(items.size()) + " indices");
      return;
    }
    t->accessed = true;
    std::vector<bool> relaxed(loops().size());
    for (size_t k = 0; k < relaxed.size(); ++k) {
      relaxed[k] = k >= t->site.loop_depth || t->outer_relaxed[k];
    }
    LoopRanges loop_ranges(loops(), std::move(relaxed));
    if (loop_ranges.HasSymbolicRelaxedRange()) loop_ranges.BoundSymbolicRanges(*analyzer());
    // Conditions: a bound on one relaxed variable tightens its constant range; conditions on
    // several relaxed variables go to iter-map analysis with the access.
    for (const ObjectRef& cond : conditions()) {
      for (const Atom& atom : Condition(cond).atoms) {
        if (std::none_of(atom.facts.vars.begin(), atom.facts.vars.end(),
                         [&](const ObjectRef& v) { return loop_ranges.IsRelaxed(v.get()); })) {
          continue;
        }
        switch (TightenRange(atom, &loop_ranges)) {
          case Tightened::kYes:
            break;
          case Tightened::kEmpty:
            return;  // the access cannot execute
          case Tightened::kNo:
            // Iter-map analysis cannot use a condition that reads memory; dropping a condition
            // only makes the region larger.
            if (atom.comparison && !atom.facts.reads_memory && !atom.facts.calls) {
              loop_ranges.pending.push_back(&atom);
            }
            break;
        }
      }
    }
    RelaxationScope scope{&subst_, &function_vars_, analyzer()};
    RelaxedAccess access =
        RelaxAccess(loop_ranges, scope, items, is_region, flat ? t->row_size : 0);
    for (const ObjectRef& buffer : access.loaded) {
      if (std::none_of(t->index_loads.begin(), t->index_loads.end(),
                       [&](const ObjectRef& b) { return b.same_as(buffer); })) {
        t->index_loads.push_back(buffer);
      }
    }
    for (size_t d = 0; d < items.size(); ++d) {
      if (!access.unknown[d].empty()) {
        if (t->dims[d].unknown.empty()) t->dims[d].unknown = access.unknown[d];
      } else {
        AddRange(&t->dims[d], std::move(access.ranges[d]));
      }
    }
    for (size_t d = 0; d < items.size(); ++d) {
      DimState& dim = t->dims[d];
      if (!dim.has_dtype) {
        ObjectRef index = is_region ? Range(items[d]).min() : items[d];
        if (IsPrimExpr(index)) {
          DLDataType dtype = DTypeOf(index);
          dtype.lanes = 1;
          dim.index_dtype = dtype;
          dim.has_dtype = true;
        }
      }
    }
  }

  /*! \brief Merge a range into a dimension: same-shaped affine bounds collapse into one. */
  static void AddRange(DimState* dim, DimRange range) {
    if (range.lo.affine && range.hi.affine) {
      for (DimRange& r : dim->ranges) {
        if (r.lo.affine && r.hi.affine && r.lo.affine->SameTerms(*range.lo.affine) &&
            r.hi.affine->SameTerms(*range.hi.affine)) {
          r.lo.affine->constant = std::min(r.lo.affine->constant, range.lo.affine->constant);
          r.hi.affine->constant = std::max(r.hi.affine->constant, range.hi.affine->constant);
          return;
        }
      }
    }
    dim->ranges.push_back(std::move(range));
  }

  const ConditionInfo& Condition(const ObjectRef& cond) {
    auto it = conditions_.find(cond.get());
    if (it != conditions_.end()) return it->second;
    ConditionInfo info{cond, ParseConditionAtoms(cond, subst_)};
    return conditions_.emplace(cond.get(), std::move(info)).first->second;
  }

  /*! \brief Decide `t` where its scope ends, while the loops are those of the allocation. */
  void Finalize(TrackedAllocation* t) {
    // An offset computed from loaded memory moves when that memory is written.
    for (size_t w = t->writes_begin; w < written_.size() && t->give_up.empty(); ++w) {
      for (const ObjectRef& loaded : t->index_loads) {
        if (written_[w] == AliasRoot(loaded.get())) {
          GiveUp(t, "its index reads `" + Var(loaded).name() +
                        "`, which is written while it is allocated");
          break;
        }
      }
    }
    LoopRanges enclosing(loops(), /*relaxed_loops=*/{});
    t->result =
        FinalizeRegion(*t, FinalizeScope{options_, &enclosing, &function_vars_, analyzer()});
  }

  void AddFunctionVars(const ObjectRef& expr) {
    if (!expr.defined()) return;
    for (const ObjectRef& v : ScanExpr(expr).vars) function_vars_.insert(v.get());
  }

  CompactionOptions options_;
  std::vector<TrackedAllocation> tracked_;
  std::unordered_map<const Object*, size_t> root_of_;
  Substitution subst_;
  std::unordered_set<const Object*> function_vars_;
  std::vector<BlockFrame> blocks_;
  /*! \brief Buffers written (or possibly written) so far, in visit order, as alias roots. */
  std::vector<const Object*> written_;
  /*! \brief decl_buffer view or matched buffer -> the buffer whose memory it names. */
  std::unordered_map<const Object*, const Object*> alias_of_;
  std::unordered_map<const Object*, ConditionInfo> conditions_;
  /*! \brief Flat views (buffer vars) of tracked allocations. */
  std::unordered_set<const Object*> flat_views_;
};

// ---- FFI ---------------------------------------------------------------------------------------

}  // namespace

std::vector<CompactedRegion> AnalyzeCompaction(const PrimFunc& func,
                                               const CompactionOptions& options) {
  Analyzer analyzer;
  RegionCollector collector(&analyzer, func, options);
  collector.Run(func);
  return collector.Results();
}

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def(
      "tvm_memplan.analysis.compacted_regions", [](ObjectRef func, CompactionOptions options) {
        Array<ObjectRef> out;
        for (CompactedRegion& r : AnalyzeCompaction(PrimFunc(func, "compacted_regions"), options)) {
          out.push_back(ObjectRef(std::move(r)));
        }
        return out;
      });
}

}  // namespace tir
}  // namespace tvm_memplan
