/*!
 * \file tir/place_allocations.cc
 * \brief LowerTVMBuiltin with placement: decide, prepare, run TVM's pass, finish and check.
 */
#include "tir/place_allocations.h"

#include <tvm/ffi/reflection/registry.h>

#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/pass.h"
#include "ir/rewriter.h"
#include "tir/buffer_scope.h"
#include "tir/helper_error_codes.h"
#include "tir/place_allocations_analysis.h"

namespace tvm_memplan {
namespace tir {

using namespace ir;

namespace {

/*! \brief Annotation marking the allocations step 2 annotated, so step 4 can find them. */
constexpr const char* kPlacementMarker = "tvm_memplan.placement";
constexpr const char* kGlobalScope = "global";
constexpr const char* kWorkspaceScope = "global.workspace";

/*! \brief What step 4 needs for one function. */
struct Expectation {
  std::string function;
  PlacementPlan plan;
  /*!
   * \brief Whether step 2 marked buffers or made stand-ins, which step 4 then removes. When it did
   *        neither, TVM's rule places every buffer as decided and the IR is TVM's own output.
   */
  bool prepared = false;
  /*! \brief Buffer var as it appears in the output -> its decision. */
  std::unordered_map<const Object*, const AllocationDecision*> decided;
  /*! \brief (stand-in in "global.workspace", the buffer it stands for). */
  std::vector<std::pair<Buffer, Buffer>> restore;
};

/*! \brief `disable_lower_builtin`, which TVM's pass honours, plus our mark for step 4. */
Map<String, Any> Marked(Map<String, Any> annotations, Placement placement) {
  // TVM reads the flag as an ir.IntImm.
  annotations.Set(schema::attr::DisableLowerTVMBuiltin, IntConst(DLDataType{kDLInt, 32, 1}, 1));
  annotations.Set(kPlacementMarker, String(PlacementName(placement)));
  return annotations;
}

bool HasDisableAnnotation(const AllocBuffer& alloc) {
  return alloc.annotations().count(String(schema::attr::DisableLowerTVMBuiltin)) != 0;
}

/*! \brief Step 2 for one function; fills `expect` for step 4. */
PrimFunc Prepare(const PrimFunc& func, Expectation* expect) {
  std::vector<ScopeChange> changes;
  std::vector<std::pair<Buffer, Placement>> marks;  // AllocBuffers that need an annotation
  bool needs_device_id = false;
  for (const AllocationDecision& d : expect->plan.decisions) {
    std::optional<AllocBuffer> alloc = As<AllocBuffer>(d.node);
    if (!alloc) continue;
    switch (d.placement) {
      case Placement::kStack:
        if (d.buffer.scope() != kGlobalScope) changes.emplace_back(d.buffer, kGlobalScope);
        // Smaller "global" allocations TVM's rule keeps on the stack by itself.
        if (*d.bytes >= kStockMaxStackAlloca) marks.emplace_back(d.buffer, d.placement);
        break;
      case Placement::kUnlowered:
        if (d.buffer.scope() != kGlobalScope) changes.emplace_back(d.buffer, kGlobalScope);
        // Carried through StorageRewrite in its scope: the annotation comes back.
        if (!HasDisableAnnotation(*alloc)) marks.emplace_back(d.buffer, d.placement);
        break;
      case Placement::kWorkspace:
        needs_device_id |= !d.has_device_id;
        if (d.buffer.scope() == kGlobalScope && d.bytes.value_or(0) > 0 &&
            *d.bytes < kStockMaxStackAlloca) {
          changes.emplace_back(d.buffer, kWorkspaceScope);
        }
        break;
      case Placement::kStock:
        break;
    }
  }
  ObjectRef body = func.body();
  if (!changes.empty() || !marks.empty()) {
    expect->prepared = true;
    ScopeChanges scope_changes(body, changes);
    std::unordered_map<const Object*, Placement> marked;  // by the var in the rewritten IR
    for (const auto& [buffer, placement] : marks) {
      marked.emplace(scope_changes.Moved(buffer).get(), placement);
    }
    Rewriter rewriter;
    if (scope_changes.empty()) rewriter.SkipExpressions();
    scope_changes.AddTo(&rewriter);
    rewriter.PostOrder<AllocBuffer>([&](const AllocBuffer& alloc) -> ObjectRef {
      auto it = marked.find(alloc.buffer().get());
      if (it == marked.end()) return alloc;
      return alloc.WithAnnotations(Marked(alloc.annotations(), it->second));
    });
    body = rewriter(body);
    // Stack buffers keep their new scope; workspace stand-ins are only there for TVM's pass, and
    // step 4 puts the buffers they stand for back.
    for (const auto& [original, replacement] : scope_changes.replacements()) {
      if (replacement.scope() == kWorkspaceScope)
        expect->restore.emplace_back(replacement, original);
    }
    for (const AllocationDecision& d : expect->plan.decisions) {
      if (!Is<AllocBuffer>(d.node) || d.placement == Placement::kStock) continue;
      Buffer in_output =
          d.placement == Placement::kWorkspace ? d.buffer : scope_changes.Moved(d.buffer);
      expect->decided[in_output.get()] = &d;
    }
  }
  if (needs_device_id) {
    // TVM's pass reads the device id from this attribute and drops the attribute.
    body = AttrStmt(StringConst("default"), schema::attr::DeviceId,
                    IntConst(DLDataType{kDLInt, 32, 1}, 0), body);
  }
  return func.WithBody(body);
}

std::optional<Call> WorkspaceAllocation(const DeclBuffer& decl) {
  std::optional<Call> call = As<Call>(decl.data());
  if (!call || !call->IsOp(schema::op::AllocWorkspace)) return std::nullopt;
  return call;
}

/*!
 * \brief Step 4: remove the marks, put the buffers of the workspace stand-ins back (so the output
 *        is what TVM's pass makes of them), and check every decided buffer.
 */
PrimFunc Finish(const PrimFunc& func, const Expectation& expect) {
  if (!expect.prepared) return func;
  std::unordered_set<const Object*> restored, on_stack, in_workspace;
  Rewriter finish;
  if (expect.restore.empty()) finish.SkipExpressions();
  for (const auto& [stand_in, original] : expect.restore) {
    finish.RemapVar(stand_in.ref(), original.ref());
    restored.insert(original.get());
  }
  finish.PostOrder<Call>([&](const Call& call) -> ObjectRef {
    std::optional<Buffer> buffer = BufferOfDataPointer(call);
    if (!buffer || !restored.count(buffer->get())) return call;
    return BufferDataPointer(*buffer);
  });
  finish.PostOrder<DeclBuffer>([&](const DeclBuffer& decl) -> ObjectRef {
    std::optional<Call> allocation = WorkspaceAllocation(decl);
    if (!allocation) return decl;
    in_workspace.insert(decl.buffer().get());
    if (!restored.count(decl.buffer().get())) return decl;
    // The allocation returns a pointer in the buffer's scope.
    ObjectRef pointer = schema::field::Expr_ty.Get<ObjectRef>(BufferDataPointer(decl.buffer()));
    return decl.WithData(allocation->WithType(pointer));
  });
  finish.PostOrder<AllocBuffer>([&](const AllocBuffer& alloc) -> ObjectRef {
    on_stack.insert(alloc.buffer().get());
    Map<String, Any> annotations = alloc.annotations();
    auto mark = annotations.find(String(kPlacementMarker));
    if (mark == annotations.end()) return alloc;
    if ((*mark).second.cast<String>() != PlacementName(Placement::kUnlowered)) {
      annotations.erase(String(schema::attr::DisableLowerTVMBuiltin));
    }
    annotations.erase(String(kPlacementMarker));
    return alloc.WithAnnotations(annotations);
  });
  PrimFunc out = func.WithBody(finish(func.body()));
  for (const auto& [buffer, decision] : expect.decided) {
    const auto& where = decision->placement == Placement::kWorkspace ? in_workspace : on_stack;
    if (where.count(buffer)) continue;
    TVM_FFI_THROW(InternalError) << "tvm_memplan.LowerTVMBuiltin: in " << expect.function
                                 << ", TVM's LowerTVMBuiltin did not leave buffer `"
                                 << decision->buffer.name() << "` where it was placed ("
                                 << PlacementName(decision->placement) << ": " << decision->reason
                                 << ")";
  }
  return out;
}

IRModule Run(const IRModule& mod, const ObjectRef& pass_context) {
  std::unordered_map<const Object*, Expectation> expectations;  // by GlobalVar
  Map<ObjectRef, ObjectRef> prepared;
  for (const auto& [global_var, base_func] : mod.functions()) {
    std::optional<PrimFunc> func = As<PrimFunc>(base_func);
    std::optional<target::StackLimits> limits =
        func ? HostFunctionLimits(*func, pass_context) : std::nullopt;
    if (!limits) {
      prepared.Set(global_var, base_func);
      continue;
    }
    Expectation& expect = expectations[global_var.get()];
    expect.function = GlobalVarName(global_var);
    expect.plan = PlanAllocationPlacement(*func, expect.function, *limits);
    prepared.Set(global_var, Prepare(*func, &expect).ref());
  }
  ObjectRef stock_pass = schema::func::StockLowerTVMBuiltin().cast<ObjectRef>();
  IRModule lowered = ApplyPass(stock_pass, mod.WithFunctions(prepared));
  Map<ObjectRef, ObjectRef> finished;
  for (const auto& [global_var, base_func] : lowered.functions()) {
    auto it = expectations.find(global_var.get());
    finished.Set(global_var,
                 it == expectations.end() ? base_func : Finish(PrimFunc(base_func), it->second));
  }
  // Workspace allocations can now be in helpers that return nothing: let them report failures.
  return ReturnErrorCodesFromHelpers(lowered.WithFunctions(finished));
}

}  // namespace

ObjectRef LowerTVMBuiltin() { return MakeModulePass("tvm_memplan.LowerTVMBuiltin", 0, Run); }

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def("tvm_memplan.transform.LowerTVMBuiltin", LowerTVMBuiltin);
}

}  // namespace tir
}  // namespace tvm_memplan
