/*!
 * \file ir/visitor.cc
 * \brief ScopedVisitor on the tvm-ffi structural visit engine.
 *
 * The engine calls back for every object; the callback handles the nodes that open scopes
 * or access buffers, and hands everything else to the engine's default descent (which runs
 * TVM's native visit hooks). Variables and types are never descended into: a buffer var's
 * type holds its shape, which is not an access.
 */
#include "ir/visitor.h"

#include <tvm/ffi/extra/structural_visit.h>

#include "ir/scopes.h"

namespace tvm_memplan {
namespace ir {

using namespace schema;

/*! \brief Bridges the engine's callback to the visitor (holds the engine's visitor object). */
class ScopedVisitor::Dispatch {
 public:
  static void Run(ScopedVisitor* self, const ObjectRef& root) {
    ffi::StructuralVisit(
        root,
        [self](const ObjectRef& node,
               ffi::StructuralVisitorObj* engine) -> Optional<ffi::VisitInterrupt> {
          ffi::StructuralVisitorObj* outer = self->engine_;
          self->engine_ = engine;
          self->VisitNode(node);
          self->engine_ = outer;
          return std::nullopt;
        });
  }
};

ScopedVisitor::ScopedVisitor(Analyzer* analyzer, Options options)
    : analyzer_(analyzer), options_(options) {}

void ScopedVisitor::Run(const ObjectRef& func_or_stmt) {
  ObjectRef root = func_or_stmt;
  if (std::optional<PrimFunc> func = As<PrimFunc>(func_or_stmt)) root = func->body();
  if (!type::Stmt.IsInstance(root)) {
    TVM_FFI_THROW(TypeError) << "expected a tirx.PrimFunc or a TIR statement, got `"
                             << TypeKeyOf(root) << "`";
  }
  size_t live = allocations_.size();
  Dispatch::Run(this, root);
  EndScopesAbove(live);
}

void ScopedVisitor::Visit(const Any& child) {
  if (child == nullptr) return;
  engine_->Visit(child);
}

void ScopedVisitor::VisitScoped(const ObjectRef& body) {
  size_t live = allocations_.size();
  Visit(body);
  EndScopesAbove(live);
}

void ScopedVisitor::VisitChildren(const ObjectRef& node) {
  engine_->DefaultVisitExpected(node).value();
}

void ScopedVisitor::VisitNode(const ObjectRef& node) {
  if (!node.defined()) return;
  int32_t t = node->type_index();
  // Leaves whose fields are not accesses.
  if (type::Var.IsInstance(t) || type::Type.IsInstance(t) || type::Op.IsInstance(t)) return;

  if (type::SeqStmt.IsInstance(t)) {
    size_t live = allocations_.size();
    for (const ObjectRef& stmt : SeqStmt(node).seq()) {
      Visit(stmt);
      ForgetFinishedScopes();
    }
    EndScopesAbove(live);
  } else if (type::For.IsInstance(t)) {
    For loop(node);
    Visit(loop.min());
    Visit(loop.extent());
    ObjectRef min = loop.min(), extent = loop.extent();
    if (ObjectRef step = loop.step(); step.defined()) {
      Visit(step);
      std::optional<int64_t> s = AsConstInt(step), e = AsConstInt(extent);
      if (s && e && *s != 0) {
        // range(a, a + e, s): values a + k * s for 0 <= k < ceil(e / s).
        int64_t count = (*s > 0) == (*e > 0) ? (*e + *s - (*s > 0 ? 1 : -1)) / *s : 0;
        int64_t last = count > 0 ? (count - 1) * *s : 0;
        if (count > 0) {
          min = Add(min, IntConst(extent, std::min<int64_t>(0, last)));
          extent = IntConst(extent, (last < 0 ? -last : last) + 1);
        } else {
          extent = IntConst(extent, 0);
        }
      } else if (!s || *s < 0) {
        // A negative step counts down from a to a + e + 1; cover both directions.
        ObjectRef one = IntConst(extent, 1), end = Add(min, extent);
        ObjectRef lo = Min(min, Add(end, one)), hi = Max(min, Sub(end, one));
        min = lo;
        extent = Add(Sub(hi, lo), one);
      }
    }
    VisitLoop(LoopScope{loop.loop_var().ref(), min, extent, loop.kind(), loop.thread_tag(), node},
              loop.body());
  } else if (type::AttrStmt.IsInstance(t)) {
    AttrStmt attr(node);
    Visit(attr.value());
    OnAttr(attr);
    std::string key = attr.attr_key();
    std::optional<IterVar> iter;
    if (key == attr::ThreadExtent || key == attr::VirtualThread) {
      iter = As<IterVar>(attr.node().cast<ObjectRef>());
    }
    if (iter) {
      std::string tag = iter->thread_tag();
      if (tag.empty()) tag = thread_tag::kVThread;
      VisitLoop(LoopScope{iter->var().ref(), IntConst(attr.value(), 0), attr.value(),
                          ForKind::kThreadBinding, tag, node},
                attr.body());
    } else {
      VisitScoped(attr.body());
    }
  } else if (type::IfThenElse.IsInstance(t)) {
    IfThenElse branch(node);
    ObjectRef cond = AsCondition(branch.condition());
    Visit(branch.condition());
    VisitUnderCondition(cond, branch.then_case());
    if (branch.else_case().defined()) VisitUnderCondition(Not(cond), branch.else_case());
  } else if (type::While.IsInstance(t)) {
    While loop(node);
    Visit(loop.condition());
    VisitUnderCondition(AsCondition(loop.condition()), loop.body());
  } else if (type::AllocBuffer.IsInstance(t)) {
    AllocBuffer alloc(node);
    Define(AllocationSite::Kind::kAllocBuffer, alloc.buffer(), node);
  } else if (type::DeclBuffer.IsInstance(t)) {
    DeclBuffer decl(node);
    // `data=B.data` is the declaration of a view, not an opaque use of B's pointer.
    if (!decl.viewed_buffer()) Visit(decl.data());
    Define(AllocationSite::Kind::kDeclBuffer, decl.buffer(), node);
  } else if (type::Bind.IsInstance(t)) {
    Bind bind(node);
    Visit(bind.value());
    // The analyzer knows scalars only; a handle (`T.let[T.handle] = f()`) is not one.
    if (IsPrimExpr(bind.value())) {
      BindLater(bind.var().ref(), bind.value(), ObjectRef());
      if (loops_.empty() && conditions_.empty() && block_bindings_.empty()) {
        top_level_binds_.push_back(pending_binds_.back());
      }
    }
    OnBind(bind);
  } else if (type::BufferStore.IsInstance(t)) {
    BufferStore store(node);
    OnStore(store);
    Visit(store.value());
    Visit(store.indices());
    OnStoreExit(store);
  } else if (type::TensorLoad.IsInstance(t)) {
    BufferLoad load(node);
    OnLoad(load);
    Visit(load.indices());
  } else if (type::Call.IsInstance(t)) {
    Call call(node);
    OnCall(call);
    Array<ObjectRef> args = call.args();
    if (call.IsOp(op::IfThenElseExpr) && args.size() == 3) {
      // Only the selected operand of if_then_else is evaluated (unlike Select).
      ObjectRef cond = AsCondition(args[0]);
      Visit(args[0]);
      VisitUnderCondition(cond, args[1]);
      VisitUnderCondition(Not(cond), args[2]);
    } else {
      Visit(args);
    }
  } else if (type::SBlockRealize.IsInstance(t)) {
    VisitBlockRealize(SBlockRealize(node));
  } else {
    VisitChildren(node);
  }
}

void ScopedVisitor::VisitLoop(LoopScope scope, const ObjectRef& body) {
  if (options_.skip_unreachable) {
    std::optional<int64_t> extent = AsConstInt(scope.extent);
    if (extent ? *extent <= 0 : analyzer()->CanProve(LE(scope.extent, IntConst(scope.extent, 0)))) {
      return;
    }
  }
  size_t pending = pending_binds_.size();
  BindLater(scope.var, scope.min, scope.extent);
  loops_.push_back(std::move(scope));
  VisitScoped(body);
  loops_.pop_back();
  DropBindingsAbove(pending);
}

void ScopedVisitor::VisitUnderCondition(const ObjectRef& condition, const ObjectRef& node) {
  if (!node.defined()) return;
  WithCondition(condition, [&]() { VisitScoped(node); });
}

template <typename F>
void ScopedVisitor::WithCondition(const ObjectRef& condition, F visit_body) {
  if (std::optional<int64_t> constant = AsConstInt(condition); constant && *constant != 0) {
    visit_body();
    return;
  }
  if (options_.skip_unreachable && analyzer()->CanProve(Not(condition))) return;
  Analyzer::ConstraintScope assume(analyzer(), condition);
  conditions_.push_back(condition);
  visit_body();
  conditions_.pop_back();
}

void ScopedVisitor::VisitBlockRealize(const SBlockRealize& realize) {
  SBlock block = realize.block();
  Array<ObjectRef> values = realize.iter_values();
  Array<ObjectRef> iter_vars = block.iter_vars();
  Visit(values);
  Visit(realize.predicate());
  size_t pending = pending_binds_.size();
  for (size_t i = 0; i < iter_vars.size() && i < values.size(); ++i) {
    ObjectRef var = IterVar(iter_vars[i]).var().ref();
    block_bindings_.Set(var, values[i]);
    BindLater(var, values[i], ObjectRef());
  }
  WithCondition(AsCondition(realize.predicate()), [&]() {
    OnBlockEnter(realize);
    size_t live = allocations_.size();
    for (const ObjectRef& buffer : block.alloc_buffers()) {
      Define(AllocationSite::Kind::kBlockAllocBuffer, Buffer(buffer, "SBlock.alloc_buffers"),
             block.ref());
    }
    for (const ObjectRef& match : block.match_buffers()) {
      MatchBufferRegion region(match);
      Visit(region.source().region());
      OnMatchBuffer(region, block);
    }
    Visit(block.init());
    Visit(block.body());
    EndScopesAbove(live);
    OnBlockExit(realize);
  });
  for (const ObjectRef& iter_var : iter_vars) block_bindings_.erase(IterVar(iter_var).var().ref());
  DropBindingsAbove(pending);
}

void ScopedVisitor::FlushBindings() const {
  for (const PendingBind& bind : pending_binds_) {
    if (bind.extent.defined()) {
      analyzer_->BindRange(bind.var, bind.min_or_value, bind.extent, /*allow_override=*/true);
    } else {
      analyzer_->BindExpr(bind.var, bind.min_or_value, /*allow_override=*/true);
    }
  }
  bound_since_reset_ += pending_binds_.size();
  pending_binds_.clear();
}

void ScopedVisitor::ForgetFinishedScopes() {
  // A fresh analyzer costs one FFI call; only worth it once enough bindings piled up.
  constexpr size_t kResetAfterBindings = 64;
  if (!options_.forget_finished_scopes || bound_since_reset_ < kResetAfterBindings ||
      !loops_.empty() || !conditions_.empty() || !block_bindings_.empty()) {
    return;
  }
  analyzer_->Reset();
  // Replayed now, so that no scope's pending bindings are mixed up with them.
  pending_binds_ = top_level_binds_;
  FlushBindings();
  bound_since_reset_ = 0;
}

const char* AllocationKindName(AllocationSite::Kind kind) {
  switch (kind) {
    case AllocationSite::Kind::kAllocBuffer:
      return "alloc_buffer";
    case AllocationSite::Kind::kBlockAllocBuffer:
      return "block_alloc_buffer";
    case AllocationSite::Kind::kDeclBuffer:
      return "decl_buffer";
  }
  return "";
}

void ScopedVisitor::Define(AllocationSite::Kind kind, const Buffer& buffer, const ObjectRef& node) {
  allocations_.push_back(AllocationSite{kind, buffer, node, loops_.size(), conditions_.size()});
  OnAllocation(allocations_.back());
}

void ScopedVisitor::EndScopesAbove(size_t live_count) {
  while (allocations_.size() > live_count) {
    AllocationSite site = allocations_.back();
    allocations_.pop_back();
    OnAllocationEnd(site);
  }
}

}  // namespace ir
}  // namespace tvm_memplan
