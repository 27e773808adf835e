/*!
 * \file ir/visitor.h
 * \brief A TIR visitor that keeps track of where it is: enclosing loops and thread scopes,
 *        live buffer allocations, enclosing conditions, with the analyzer kept in sync.
 *
 * Subclasses override the events they need; descent into children is automatic.
 *
 * \code
 *   class CountStores : public ScopedVisitor {
 *     void OnStore(const BufferStore& store) override {
 *       // loops(): outermost first; conditions(): predicates that guard this statement.
 *       depth_sum += loops().size();
 *     }
 *   };
 * \endcode
 *
 * Scoping follows TVM 0.27: a flat `AllocBuffer`/`DeclBuffer` lives until the end of the
 * sequence that holds it, a block's `alloc_buffers` live for the block. Block iteration vars
 * are recorded with their bound values (block_bindings()), loop vars and thread vars are bound
 * to their ranges in the analyzer, and conditions (`if`, `T.where`, `T.if_then_else`) enter
 * analyzer constraint scopes. `Select` does not: both of its operands are evaluated.
 */
#ifndef TVM_MEMPLAN_IR_VISITOR_H_
#define TVM_MEMPLAN_IR_VISITOR_H_

#include <tvm/ffi/extra/structural_visit.h>

#include <string>
#include <vector>

#include "ir/analyzer.h"
#include "ir/tir.h"

namespace tvm_memplan {
namespace ir {

/*! \brief A loop-like scope: a For loop, or a `thread_extent` / `virtual_thread` attribute. */
struct LoopScope {
  ObjectRef var;
  /*!
   * \brief The var takes values in [min, min + extent). For a loop with a step other than 1
   *        this is a range that covers every value (a negative step counts down).
   */
  ObjectRef min, extent;
  ForKind kind;
  /*! \brief "threadIdx.x", "blockIdx.y", "vthread", ... or "" for an ordinary loop. */
  std::string thread_tag;
  ObjectRef node;
};

/*! \brief Where a buffer is defined. */
struct AllocationSite {
  enum class Kind { kAllocBuffer, kBlockAllocBuffer, kDeclBuffer };
  Kind kind;
  Buffer buffer;
  /*! \brief The AllocBuffer, DeclBuffer, or the SBlock whose alloc_buffers hold the buffer. */
  ObjectRef node;
  /*! \brief Number of enclosing LoopScopes at the definition point. */
  size_t loop_depth;
  /*! \brief Number of enclosing conditions at the definition point. */
  size_t condition_depth;
};

/*! \brief "alloc_buffer", "block_alloc_buffer" or "decl_buffer", as records name the kinds. */
const char* AllocationKindName(AllocationSite::Kind kind);

struct ScopedVisitorOptions {
  /*! \brief Skip branches whose condition is provably false in context (dead code). */
  bool skip_unreachable = false;
  /*!
   * \brief Between top-level statements (no enclosing loop, condition or block binding),
   *        replace the analyzer by a fresh one that knows only the top-level `Bind`s. TVM's
   *        analyzer keeps every binding it was given and some of its provers scan them all,
   *        so on long functions each question costs more than the last. Off by default
   *        because it resets the analyzer the caller passed in.
   */
  bool forget_finished_scopes = false;
};

class ScopedVisitor {
 public:
  using Options = ScopedVisitorOptions;

  explicit ScopedVisitor(Analyzer* analyzer, Options options = Options());
  virtual ~ScopedVisitor() = default;

  /*! \brief Visit a PrimFunc (its body) or a statement. */
  void Run(const ObjectRef& func_or_stmt);

 protected:
  virtual void OnAllocation(const AllocationSite& /*site*/) {}
  /*! \brief The scope of an allocation ends (innermost first). */
  virtual void OnAllocationEnd(const AllocationSite& /*site*/) {}
  virtual void OnLoad(const BufferLoad& /*load*/) {}
  virtual void OnStore(const BufferStore& /*store*/) {}
  /*! \brief After a store's value and indices (whose loads come between OnStore and this). */
  virtual void OnStoreExit(const BufferStore& /*store*/) {}
  /*! \brief An AttrStmt, before its body (its `node` is not visited: it is not an access). */
  virtual void OnAttr(const AttrStmt& /*attr*/) {}
  /*! \brief A `tirx.Bind` (`var = value` for the rest of the sequence), after its value. */
  virtual void OnBind(const Bind& /*bind*/) {}
  /*! \brief Any call expression, before its arguments are visited. */
  virtual void OnCall(const Call& /*call*/) {}
  /*! \brief A block's match_buffer, after the block's iter vars are bound. */
  virtual void OnMatchBuffer(const MatchBufferRegion& /*match*/, const SBlock& /*block*/) {}
  /*! \brief Entering a block (its iter vars are bound, its predicate is a condition). */
  virtual void OnBlockEnter(const SBlockRealize& /*realize*/) {}
  virtual void OnBlockExit(const SBlockRealize& /*realize*/) {}

  /*! \brief Enclosing loop scopes, outermost first. */
  const std::vector<LoopScope>& loops() const { return loops_; }
  /*! \brief Enclosing conditions (boolean expressions), outermost first. */
  const std::vector<ObjectRef>& conditions() const { return conditions_; }
  /*! \brief Buffers defined and still in scope, outermost first. */
  const std::vector<AllocationSite>& allocations() const { return allocations_; }
  /*! \brief Block iteration var -> bound value, for every enclosing block. */
  const Map<ObjectRef, ObjectRef>& block_bindings() const { return block_bindings_; }
  /*! \brief The analyzer, told about every enclosing loop, block binding and `Bind`. */
  Analyzer* analyzer() const {
    FlushBindings();
    return analyzer_;
  }

 private:
  class Dispatch;
  friend class Dispatch;

  /*! \brief Dispatch on one node (called back by the engine for every object). */
  void VisitNode(const ObjectRef& node);
  /*! \brief Visit a child value through the engine (no-op for None). */
  void Visit(const Any& child);
  /*! \brief Visit a statement body; allocations made directly in it end with it. */
  void VisitScoped(const ObjectRef& body);
  /*! \brief The engine's default descent into reflected fields, for nodes we do not handle. */
  void VisitChildren(const ObjectRef& node);
  void VisitLoop(LoopScope scope, const ObjectRef& body);
  void VisitUnderCondition(const ObjectRef& condition, const ObjectRef& node);
  /*! \brief Run `visit_body` assuming `condition` (skipped when provably false and asked to). */
  template <typename F>
  void WithCondition(const ObjectRef& condition, F visit_body);
  void VisitBlockRealize(const SBlockRealize& realize);
  void Define(AllocationSite::Kind kind, const Buffer& buffer, const ObjectRef& node);
  void EndScopesAbove(size_t live_count);
  /*! \brief Tell the analyzer about a var (a range, or a value when `extent` is null). */
  void BindLater(const ObjectRef& var, const ObjectRef& min_or_value, const ObjectRef& extent) {
    pending_binds_.push_back(PendingBind{var, min_or_value, extent});
  }
  /*! \brief Forget the bindings of a scope that ends before anyone asked the analyzer. */
  void DropBindingsAbove(size_t count) {
    if (pending_binds_.size() > count) pending_binds_.resize(count);
  }
  void FlushBindings() const;

  ffi::StructuralVisitorObj* engine_ = nullptr;
  Analyzer* analyzer_;
  /*!
   * \brief Bindings made in scope but not yet passed to the analyzer: each costs FFI calls, and
   *        many scopes end without a question to the analyzer. Loop vars are unique, so a
   *        binding passed late is still right; one never passed is never needed.
   */
  struct PendingBind {
    ObjectRef var, min_or_value, extent;
  };
  mutable std::vector<PendingBind> pending_binds_;
  /*! \brief Bindings passed to the analyzer since it was last reset. */
  mutable size_t bound_since_reset_ = 0;
  /*! \brief `Bind`s made at top level, replayed into a fresh analyzer. */
  std::vector<PendingBind> top_level_binds_;
  /*! \brief Reset the analyzer at a top-level statement boundary (forget_finished_scopes). */
  void ForgetFinishedScopes();
  Options options_;
  std::vector<LoopScope> loops_;
  std::vector<ObjectRef> conditions_;
  std::vector<AllocationSite> allocations_;
  Map<ObjectRef, ObjectRef> block_bindings_;
};

}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_VISITOR_H_
