/*!
 * \file relax/memory_plan_model.h
 * \brief Models of the Relax memory planners: the bytes TVM's StaticPlanBlockMemory, or
 *        tvm-memplan's planner, allocates for a Relax function, given which candidate bindings
 *        run in place.
 *
 * \code
 *   a = R.add(x, y)       # kAllocate: token t0 (4 KB)
 *   b = R.exp(a)          # kAllocate, candidate 0: in place -> b shares t0; else token t1
 *   c = R.reshape(b, s)   # kView: c shares b's token
 *   return c              # kEscape: the return value's tokens are not planned
 *   MemoryPlanModel(steps).TotalBytes({true}) == 4096   // t0 alone, allocated for the output
 * \endcode
 *
 * Planning a memory reuse is greedy in TVM, so running a call in place (which never lengthens
 * the time any byte must be kept) can still make the planner pick a worse fit later. The
 * in-place pass asks this model before each rewrite, and tvm-memplan's planner asks it what the
 * stock planner would allocate for a function (there the steps describe Relax after
 * CallTIRRewrite: alloc_tensor steps that do not count as a use of their own output, and PrimFunc
 * calls that allocate nothing). TotalBytes follows static_plan_block_memory.cc:
 * one storage token per allocated tensor; tokens that reach the function result, an `if`, a
 * call the planner cannot see into, or a block other than their own are not planned (each is
 * then allocated on its own); the others are reference counted over PrimFunc call arguments
 * and, when a tensor is allocated, reuse the smallest free token of its storage scope and dtype
 * at least as big (within 16x), else grow the largest smaller one (within 16x), else take new
 * storage. MemplanBytes follows relax/memory_plan_analysis.h: every token that does not reach
 * the result or escape is live from its step to its last read and packed at offsets
 * (relax/offset_packing.h); the others are allocated on their own.
 */
#ifndef TVM_MEMPLAN_RELAX_MEMORY_PLAN_MODEL_H_
#define TVM_MEMPLAN_RELAX_MEMORY_PLAN_MODEL_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/relax.h"
#include "ir/scopes.h"
#include "relax/memory_effects.h"
#include "relax/offset_packing.h"
#include "relax/program_points.h"

namespace tvm_memplan {
namespace relax {

/*! \brief One binding (or one read of a value) as the planner sees it after lowering. */
struct PlanStep {
  enum class Kind {
    /*! \brief A PrimFunc call: allocates its outputs, unless it runs in place. */
    kAllocate,
    /*! \brief A view of `value` (a var): shares its storage. */
    kView,
    /*! \brief `var = value` where value is a var, a tuple or a tuple item: shares storage. */
    kAlias,
    /*! \brief The merge of an `if`: var is `value` or `alternative` (the branch results). */
    kJoin,
    /*! \brief A call the planner does not see into: what it reads is not planned. */
    kOpaque,
    /*! \brief `reads` reach the function result or an `if`: they are not planned. */
    kEscape,
  };
  Kind kind = Kind::kOpaque;
  /*! \brief The binding block the planner sees the step in (one per SeqExpr after
   *         ToNonDataflow merges a SeqExpr's blocks). */
  int block = -1;
  /*! \brief The variable the step defines, or null. */
  const Object* var = nullptr;
  /*! \brief kAllocate: the result type (a tensor or a tuple of tensors). */
  ObjectRef type;
  /*! \brief kView: the viewed variable; kAlias: the bound expression; kJoin: the then branch's
   *         result. */
  ObjectRef value;
  /*! \brief kJoin: the else branch's result. */
  ObjectRef alternative;
  /*! \brief Variables the step reads: call arguments (kAllocate), what leaves planning
   *         (kOpaque, kEscape), or what a view or alias reads (which keeps it alive in our
   *         planner, but is no use in TVM's: only call arguments are). */
  std::vector<const Object*> reads;
  /*! \brief kAllocate: the in-place candidate this call is, or -1. */
  int candidate = -1;
  /*! \brief kAllocate: the variable the result reuses when in place (or always, when the call
   *         already is a call_tir_inplace: then candidate is -1). */
  const Object* inplace_source = nullptr;
  /*! \brief kAllocate: the storage scope of the outputs (the planner pools by scope). */
  std::string scope = ir::scope::kGlobal;
  /*! \brief kAllocate: whether the outputs count as arguments of the step itself (a call in
   *         destination-passing style; not an alloc_tensor, whose PrimFunc call comes later). */
  bool counts_own_output = true;
  /*! \brief kEscape: the reads are the function's result. */
  bool returns = false;
  /*! \brief kOpaque: the callee may keep what it reads. */
  bool escapes = false;
};

/*! \brief The binding blocks StaticPlanBlockMemory plans one at a time (PlanStep::block). */
enum class PlanBlocks {
  /*! \brief One per SeqExpr (Step::block): Relax before the build goes through ToNonDataflow,
   *         after which the normalizer merges the binding blocks of each SeqExpr. */
  kPerSeqExpr,
  /*! \brief As in the IR (Step::binding_block): Relax after CallTIRRewrite is planned as it is. */
  kPerBindingBlock,
};

/*!
 * \brief The function of `steps` as StaticPlanBlockMemory sees it, one PlanStep per program
 *        point. A call binding is what its effect `effects[i]` says the planner sees
 *        (MemoryEffect::planned); a copy becomes a view only for the bindings
 *        RewriteDataflowReshape rewrites (DataflowVars of dataflow blocks). Other bindings: a
 *        var, constant, tuple or tuple item shares its storage; a `match_cast` var gets none (the
 *        stock planner maps plain bindings only); a function is opaque, so what it captures is
 *        not planned; shapes and prim values hold no tensor. An `if` result gets no storage;
 *        conditions, branch results and the function result take what they read out of
 *        planning. No step is an in-place candidate yet (PlanStep::candidate).
 */
std::vector<PlanStep> PlanSteps(const std::vector<Step>& steps,
                                const std::vector<std::optional<MemoryEffect>>& effects,
                                PlanBlocks blocks);

/*!
 * \brief A tensor's storage token as StaticPlanBlockMemory sizes it: its shape at the upper
 *        bounds `tir_var_upper_bound` gives the function's signature variables (each dimension
 *        its constant bound, else its bound as an expression, else itself: GetUpperBoundShape).
 */
struct TokenSize {
  /*! \brief The token's bytes, or -1 where a dimension stays symbolic at the bounds. */
  int64_t bytes = -1;
  /*! \brief Where `bytes` is -1: tokens of one class have provably equal sizes (TVM reuses a
   *         storage of symbolic size only for a provably equal size). */
  int size_class = -1;
  /*! \brief Where `bytes` is -1, the token's bytes as an expression. */
  ObjectRef size;
  /*! \brief The tensor's own bytes where its shape is static (then `bytes` too), else -1: a
   *         tensor the planner leaves alone is allocated at its own shape. */
  int64_t static_bytes = -1;
  /*! \brief Where `static_bytes` is -1, the tensor's own bytes as an expression. */
  ObjectRef own_size;
};

/*! \brief The token of a tensor of `type` allocated at program point `step`, or nullopt where
 *         the planner's model cannot size it. */
using TokenSizer =
    std::function<std::optional<TokenSize>(int64_t step, const ir::relax::TensorType& type)>;

/*! \brief TVM's plan of a function, in the figures ReadStockPlan reads off its pass's output. */
struct StockPlanFigures {
  /*! \brief Storages and unplanned tensors of constant size. */
  int64_t bytes = 0;
  /*! \brief Storages and unplanned tensors of symbolic size. */
  int64_t symbolic = 0;
  /*! \brief All of them, as an expression. */
  ObjectRef size;
};

class MemoryPlanModel {
 public:
  /*! \brief The model of `steps`; `sizer` sizes the tokens (by default, static shapes alone:
   *         a symbolic one leaves every figure unknown). */
  explicit MemoryPlanModel(const std::vector<PlanStep>& steps, const TokenSizer& sizer = {});
  ~MemoryPlanModel();

  /*! \brief Whether every size is static; when not, every figure below but StockPlan is
   *         nullopt. */
  bool HasStaticSizes() const { return valid_; }

  /*!
   * \brief Bytes allocated (planned storage plus tensors left unplanned) when exactly the
   *        candidates marked in `in_place` run in place; nullopt when a size is symbolic.
   */
  std::optional<int64_t> TotalBytes(const std::vector<bool>& in_place) const;

  /*!
   * \brief TVM's plan when exactly the candidates in `in_place` run in place, symbolic sizes
   *        included (their storages reused only for a provably equal size); nullopt where the
   *        sizer could not size a token. With `plan_dynamic_output`
   *        (`relax.memory_plan_dynamic_func_output`), a tensor of symbolic shape left unplanned
   *        is allocated at its bounds, as TVM's rewriter does.
   */
  std::optional<StockPlanFigures> StockPlan(const std::vector<bool>& in_place,
                                            bool plan_dynamic_output) const;

  /*! \brief The same for tvm-memplan's planner, whose offsets are multiples of `alignment`,
   *         its exact search given `search_ms` (relax/offset_packing.h; 0: greedy orders only). */
  std::optional<int64_t> MemplanBytes(const std::vector<bool>& in_place, int64_t alignment,
                                      int64_t search_ms = 0) const;

  /*!
   * \brief A lower bound of MemplanBytes: the tensors left unplanned plus the most bytes of
   *        planned tensors live at one program point. Running one more candidate in place never
   *        raises it (the output takes the storage of an input of its size that is read at that
   *        step, so their lifetimes join without overlapping), so when MemplanBytes reaches it
   *        with every candidate in place, no choice of candidates plans fewer bytes. nullopt
   *        when a size is symbolic, or when a candidate reuses a tensor that may be either of
   *        several (an `if` result): its output keeps them all alive, which may raise the bound.
   */
  std::optional<int64_t> MemplanLowerBound(const std::vector<bool>& in_place) const;

  /*!
   * \brief The candidates among `in_place` that make the storage they write into the
   *        function's result, and that `refusable` allows to refuse: without them the storage
   *        would stay planned, with them it leaves planning from its allocation on. Latest
   *        first: each one returned is refused for the decisions on earlier ones. Sizes need not
   *        be static: this asks only which storage each value holds.
   */
  std::vector<int> WritesIntoResult(const std::vector<bool>& in_place,
                                    const std::function<bool(int)>& refusable) const;

 private:
  struct Token;
  struct Event;
  /*! \brief What tvm-memplan's planner packs, and the bytes it leaves unplanned. */
  struct MemplanItems {
    std::vector<PackItem> items;
    int64_t unplanned = 0;
  };
  MemplanItems MemplanInput(const std::vector<bool>& in_place) const;
  /*! \brief Per token, what it is after the in-place steps chosen by `in_place`. */
  struct Representatives {
    /*! \brief A token, -1 (storage the planner does not manage) or -2 - k (the tokens of
     *         sets[k]: an in-place output whose input may be either of several). */
    std::vector<int> rep;
    std::vector<std::vector<int>> sets;
    template <typename F>
    void ForEach(int token, const F& f) const {
      int r = rep[token];
      if (r >= 0) {
        f(r);
      } else if (r <= -2) {
        for (int t : sets[-2 - r]) f(t);
      }
    }
  };
  Representatives Represent(const std::vector<bool>& in_place) const;
  /*! \brief StockPlan's figures, the size expression only `with_size`. */
  StockPlanFigures Plan(const std::vector<bool>& in_place, bool plan_dynamic_output,
                        bool with_size) const;
  bool IsInPlace(const Event& event, const std::vector<bool>& in_place) const;
  std::vector<Token> tokens_;
  std::vector<Event> events_;
  int num_pools_ = 0;
  /*! \brief Whether every token's shape is static. */
  bool valid_ = true;
  /*! \brief Whether the sizer sized every token. */
  bool sized_ = true;
  /*! \brief Whether running a candidate in place never raises MemplanLowerBound. */
  bool bound_monotone_ = true;
};

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_MEMORY_PLAN_MODEL_H_
