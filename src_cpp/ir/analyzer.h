/*!
 * \file ir/analyzer.h
 * \brief A C++ facade over TVM's arithmetic analyzer (`sym.Analyzer`); each call is one FFI call.
 *
 * \code
 *   Analyzer ana;
 *   ana.BindRange(i, IntConst(i, 0), IntConst(i, 16));      // 0 <= i < 16
 *   Interval span = ana.Relax(i * 4 + j, {{j, {0, 3}}});     // j relaxed, i kept symbolic
 *   {
 *     Analyzer::ConstraintScope guard(&ana, LT(i, IntConst(i, 8)));
 *     ana.CanProve(LT(i, IntConst(i, 10)));                  // true inside the scope
 *   }
 * \endcode
 */
#ifndef TVM_MEMPLAN_IR_ANALYZER_H_
#define TVM_MEMPLAN_IR_ANALYZER_H_

#include <optional>
#include <utility>
#include <vector>

#include "ir/reflection.h"

namespace tvm_memplan {
namespace ir {

/*! \brief A closed integer interval [min, max] of expressions; unbounded ends are nullopt. */
struct Interval {
  std::optional<ObjectRef> min, max;
  bool bounded() const { return min && max; }
};

class Analyzer {
 public:
  Analyzer();
  /*! \brief The underlying sym.Analyzer object (to hand to TVM functions that take one). */
  const ObjectRef& handle() const { return self_; }
  /*! \brief Forget every binding: a fresh sym.Analyzer. Not allowed inside a ConstraintScope. */
  void Reset();

  /*! \brief Bind `var` to `expr`: the analyzer substitutes it. */
  void BindExpr(const ObjectRef& var, const ObjectRef& expr, bool allow_override = false);
  /*! \brief Bind `var` to the range [min, min + extent). */
  void BindRange(const ObjectRef& var, const ObjectRef& min, const ObjectRef& extent,
                 bool allow_override = false);

  ObjectRef Simplify(const ObjectRef& expr) const;
  /*! \brief Whether `cond` holds for all values of the bound variables. */
  bool CanProve(const ObjectRef& cond) const;
  bool CanProveEqual(const ObjectRef& a, const ObjectRef& b) const;
  /*! \brief Constant lower and upper bounds of `expr` (int64 limits when unbounded). */
  std::pair<int64_t, int64_t> ConstBound(const ObjectRef& expr) const;

  /*!
   * \brief The values `expr` takes when each var in `relaxed` ranges over its interval; other
   *        vars stay symbolic (bound ranges still simplify the result).
   */
  Interval Relax(const ObjectRef& expr,
                 const std::vector<std::pair<ObjectRef, Interval>>& relaxed) const;

  /*!
   * \brief Affine iter-map detection (sym.DetectIterMap) of `indices` over `iters`
   *        (var -> ir.Range) under `predicate`.
   * \return The IterSumExprs, or nullopt when the indices are not an affine map of the iters.
   */
  std::optional<Array<ObjectRef>> DetectIterMap(const Array<ObjectRef>& indices,
                                                const Map<ObjectRef, ObjectRef>& iters,
                                                const ObjectRef& predicate,
                                                bool require_bijective = false) const;

  /*!
   * \brief The inverse of a bijective iter map (sym.InverseAffineIterMap): each iterator that
   *        `sums` (DetectIterMap's result) use, as an expression of `outputs` (one var per sum).
   *        Iterators the map does not use are missing.
   */
  Map<ObjectRef, ObjectRef> InverseIterMap(const Array<ObjectRef>& sums,
                                           const Array<ObjectRef>& outputs) const;

  /*! \brief How EstimateRegion may answer: exactly or not at all, or a safe over-approximation. */
  enum class RegionBound { kStrict, kUpper };

  /*!
   * \brief The bounding box of `region` (one ir.Range per dimension) when each var of `var_dom`
   *        (var -> ir.Range) ranges over its range and `predicate` holds; other vars stay
   *        symbolic. Affine iter-map analysis first (sym.EstimateRegion*Bound), so predicates
   *        such as `i * 4 + j < 10` tighten the box; kUpper falls back to interval arithmetic
   *        per dimension.
   * \return One interval per dimension; nullopt when a kStrict estimate is not possible.
   */
  std::optional<std::vector<Interval>> EstimateRegion(
      const Array<ObjectRef>& region, const Map<ObjectRef, ObjectRef>& var_dom,
      const ObjectRef& predicate, RegionBound bound = RegionBound::kUpper) const;

  /*! \brief While alive, the analyzer assumes `condition`. Scopes must nest. */
  class ConstraintScope {
   public:
    ConstraintScope(Analyzer* analyzer, const ObjectRef& condition);
    ~ConstraintScope();
    ConstraintScope(const ConstraintScope&) = delete;
    ConstraintScope& operator=(const ConstraintScope&) = delete;

   private:
    Function exit_;
  };

 private:
  ObjectRef self_;
};

}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_ANALYZER_H_
