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

#include "ir/dump.h"
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

/*! \brief What step 4 needs for one function. */
struct Expectation {
  std::string function;
  PlacementPlan plan;
  /*! \brief From the target: only scope "global" for an allocation left to the code generator. */
  bool unlowered_needs_global_scope = false;
  /*!
   * \brief Whether step 2 changed anything. When it did not, TVM's rule places every buffer as
   *        decided and the IR is TVM's own output.
   */
  bool prepared = false;
  /*! \brief Whether step 2 added annotations, which step 4 removes. */
  bool marked = false;
  /*! \brief Buffer var as it appears in the output -> its decision. */
  std::unordered_map<const Object*, const AllocationDecisionObj*> decided;
  /*! \brief (stand-in in "global.workspace", the buffer it stands for). */
  std::vector<std::pair<Buffer, Buffer>> restore;
};

/*! \brief `disable_lower_builtin`, which TVM's pass honours, plus our mark for step 4. */
Map<String, Any> Marked(Map<String, Any> annotations, const String& placement) {
  // TVM reads the flag as an ir.IntImm.
  annotations.Set(schema::attr::DisableLowerTVMBuiltin, IntConst(DLDataType{kDLInt, 32, 1}, 1));
  annotations.Set(kPlacementMarker, placement);
  return annotations;
}

/*! \brief How step 2 changes one AllocBuffer (keyed by its buffer var in the rewritten IR). */
struct AllocationEdit {
  /*! \brief Mark it for TVM's pass to leave alone. */
  std::optional<String> mark;
  /*! \brief Define this stand-in instead of the buffer, for TVM's pass to lower. */
  std::optional<Buffer> stand_in;
};

/*! \brief Step 2 for one function; fills `expect` for step 4. */
PrimFunc Prepare(const PrimFunc& func, Expectation* expect) {
  std::vector<ScopeChange> moves;  // buffers that live on the stack in scope "global"
  std::vector<std::pair<Buffer, String>> marks;
  std::unordered_map<const Object*, AllocationEdit> edits;
  bool needs_device_id = false;
  for (const AllocationDecision& record : expect->plan.decisions) {
    const AllocationDecisionObj& d = *record;
    if (!Is<AllocBuffer>(d.node)) continue;
    if (d.placement == placement::kStack) {
      if (d.buffer().scope() != scope::kGlobal) moves.emplace_back(d.buffer(), scope::kGlobal);
      // In "global", TVM's rule keeps the smaller ones on the stack by itself.
      if (!StockKeepsOnStack(d.nbytes, scope::kGlobal)) marks.emplace_back(d.buffer(), d.placement);
    } else if (d.placement == placement::kUnlowered) {
      // Carried through StorageRewrite in our scope: back in "global", with the annotation.
      // Annotated as written: left as TVM's pass leaves it, unless the code generator takes
      // it only in "global" (TVM's output would fail to compile there).
      if (d.buffer().scope() == scope::kMemplanUnlowered) {
        moves.emplace_back(d.buffer(), scope::kGlobal);
        marks.emplace_back(d.buffer(), d.placement);
      } else if (expect->unlowered_needs_global_scope && d.buffer().scope() != scope::kGlobal) {
        moves.emplace_back(d.buffer(), scope::kGlobal);
      }
    } else if (d.placement == placement::kWorkspace) {
      needs_device_id |= !d.has_device_id;
      if (StockKeepsOnStack(d.nbytes, d.buffer().scope())) {
        // Only the definition: TVM's pass lowers the allocation it sees and never looks at
        // the uses, which keep the buffer itself.
        Buffer stand_in = d.buffer().WithScope(scope::kGlobalWorkspace);
        edits[d.buffer().get()].stand_in = stand_in;
        expect->restore.emplace_back(stand_in, d.buffer());
      }
    }
  }
  ObjectRef body = func.body();
  if (!moves.empty() || !marks.empty() || !edits.empty()) {
    expect->prepared = true;
    expect->marked = !marks.empty();
    ScopeChanges scope_changes(body, moves);
    for (const auto& [buffer, placement] : marks) {
      edits[scope_changes.Moved(buffer).get()].mark = placement;
    }
    Rewriter rewriter;
    if (scope_changes.empty()) rewriter.SkipExpressions();
    scope_changes.AddTo(&rewriter);
    rewriter.PostOrder<AllocBuffer>([&](AllocBuffer alloc) -> ObjectRef {
      auto it = edits.find(alloc.buffer().get());
      if (it == edits.end()) return alloc;
      const AllocationEdit& edit = it->second;
      if (edit.stand_in) alloc = alloc.WithBuffer(*edit.stand_in);
      if (edit.mark) alloc = alloc.WithAnnotations(Marked(alloc.annotations(), *edit.mark));
      return alloc;
    });
    body = rewriter(body);
    for (const AllocationDecision& record : expect->plan.decisions) {
      const AllocationDecisionObj& d = *record;
      if (!Is<AllocBuffer>(d.node) || d.placement == placement::kStock) continue;
      // Stack buffers keep their new scope; step 4 puts back the buffers of the stand-ins.
      Buffer in_output =
          d.placement == placement::kWorkspace ? d.buffer() : scope_changes.Moved(d.buffer());
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

/*! \brief The buffers a lowered function allocates on the stack and in the workspace. */
struct Placed {
  std::unordered_set<const Object*> on_stack, in_workspace;

  void Record(const ObjectRef& stmt) {
    if (std::optional<AllocBuffer> alloc = As<AllocBuffer>(stmt)) {
      on_stack.insert(alloc->buffer().get());
    } else if (std::optional<DeclBuffer> decl = As<DeclBuffer>(stmt)) {
      if (WorkspaceAllocation(*decl)) in_workspace.insert(decl->buffer().get());
    }
  }
  void RecordAll(const ObjectRef& stmt) {
    Record(stmt);
    ForEachChildStmt(stmt, [this](const ObjectRef& child) { RecordAll(child); });
  }
};

/*!
 * \brief Step 4: remove the marks, put the buffers of the workspace stand-ins back (so the output
 *        is what TVM's pass makes of them), and check every decided buffer.
 */
PrimFunc Finish(const PrimFunc& func, const Expectation& expect) {
  if (!expect.prepared) return func;
  Placed placed;
  PrimFunc out = func;
  if (!expect.marked && expect.restore.empty()) {
    // Nothing to undo: only the check, which looks at statements.
    placed.RecordAll(func.body());
  } else {
    // TVM's pass refers to a stand-in only in what it makes of the allocation: the DeclBuffer,
    // and the data pointer in the conditions of the null check and of the free. Putting the
    // buffer back there is a walk over statements, not over every expression.
    Rewriter unstand;  // stand-in -> the buffer it stands for
    Rewriter retype;   // `B.data` typed by the scope of the restored buffer B
    std::unordered_set<const Object*> restored;
    std::unordered_map<const Object*, Buffer> originals;  // by stand-in
    for (const auto& [stand_in, original] : expect.restore) {
      unstand.RemapVar(stand_in.ref(), original.ref());
      restored.insert(original.get());
      originals.emplace(stand_in.get(), original);
    }
    retype.PostOrder<Call>([&](const Call& call) -> ObjectRef {
      std::optional<Buffer> buffer = BufferOfDataPointer(call);
      if (!buffer || !restored.count(buffer->get())) return call;
      return BufferDataPointer(*buffer);
    });
    size_t conditions = 0;  // conditions that used a stand-in
    Rewriter finish;
    finish.SkipExpressions();
    if (!expect.restore.empty()) {
      finish.PostOrder<IfThenElse>([&](const IfThenElse& branch) -> ObjectRef {
        ObjectRef condition = branch.condition();
        ObjectRef unstood = unstand(condition);
        if (unstood.same_as(condition)) return branch;
        ++conditions;
        return branch.WithCondition(retype(unstood));
      });
    }
    finish.PostOrder<DeclBuffer>([&](DeclBuffer decl) -> ObjectRef {
      auto original = originals.find(decl.buffer().get());
      std::optional<Call> allocation = WorkspaceAllocation(decl);
      if (allocation && original != originals.end()) {
        // The allocation returns a pointer in the buffer's scope.
        const Buffer& buffer = original->second;
        ObjectRef pointer = ExprType(BufferDataPointer(buffer));
        decl = decl.WithBufferAndData(buffer, allocation->WithType(pointer));
      }
      placed.Record(decl);
      return decl;
    });
    finish.PostOrder<AllocBuffer>([&](const AllocBuffer& alloc) -> ObjectRef {
      placed.Record(alloc);
      Map<String, Any> annotations = alloc.annotations();
      auto mark = annotations.find(String(kPlacementMarker));
      if (mark == annotations.end()) return alloc;
      if ((*mark).second.cast<String>() != placement::kUnlowered) {
        annotations.erase(String(schema::attr::DisableLowerTVMBuiltin));
      }
      annotations.erase(String(kPlacementMarker));
      return alloc.WithAnnotations(annotations);
    });
    out = func.WithBody(finish(func.body()));
    // One null check and one free each.
    if (conditions != 2 * expect.restore.size()) {
      TVM_FFI_THROW(InternalError) << "tvm_memplan.LowerTVMBuiltin: in " << expect.function
                                   << ", TVM's LowerTVMBuiltin tested the pointers of "
                                   << expect.restore.size() << " workspace allocations in "
                                   << conditions << " conditions, not 2 each (null check, free)";
    }
  }
  for (const auto& [buffer, decision] : expect.decided) {
    const auto& where =
        decision->placement == placement::kWorkspace ? placed.in_workspace : placed.on_stack;
    if (where.count(buffer)) continue;
    TVM_FFI_THROW(InternalError) << "tvm_memplan.LowerTVMBuiltin: in " << expect.function
                                 << ", TVM's LowerTVMBuiltin did not leave buffer `"
                                 << decision->buffer().name() << "` where it was placed ("
                                 << decision->placement << ": " << decision->reason << ")";
  }
  return out;
}

IRModule Run(const IRModule& mod, const ObjectRef& pass_context) {
  PassDump dump("LowerTVMBuiltin");
  dump.Write("input", mod.ref());
  std::unordered_map<const Object*, Expectation> expectations;  // by GlobalVar
  Map<ObjectRef, ObjectRef> prepared;
  Array<ObjectRef> plan_records;
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
    expect.unlowered_needs_global_scope = limits->unlowered_needs_global_scope;
    if (dump.enabled()) {
      for (const AllocationDecision& d : expect.plan.decisions) {
        plan_records.push_back(ObjectRef(d));
      }
    }
    prepared.Set(global_var, Prepare(*func, &expect).ref());
  }
  dump.Write("plan", plan_records);
  IRModule prepared_mod = mod.WithFunctions(prepared);
  dump.Write("prepared", prepared_mod.ref());
  ObjectRef stock_pass = schema::func::StockLowerTVMBuiltin().cast<ObjectRef>();
  IRModule lowered = ApplyPass(stock_pass, prepared_mod);
  dump.Write("lowered", lowered.ref());
  Map<ObjectRef, ObjectRef> finished;
  for (const auto& [global_var, base_func] : lowered.functions()) {
    auto it = expectations.find(global_var.get());
    finished.Set(global_var,
                 it == expectations.end() ? base_func : Finish(PrimFunc(base_func), it->second));
  }
  IRModule restored = lowered.WithFunctions(finished);
  dump.Write("restored", restored.ref());
  // Workspace allocations can now be in helpers that return nothing: let them report failures.
  IRModule out = ReturnErrorCodesFromHelpers(restored);
  dump.Write("output", out.ref());
  return out;
}

}  // namespace

ObjectRef LowerTVMBuiltin() { return MakeModulePass("tvm_memplan.LowerTVMBuiltin", 0, Run); }

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def("tvm_memplan.transform.LowerTVMBuiltin", LowerTVMBuiltin);
}

}  // namespace tir
}  // namespace tvm_memplan
