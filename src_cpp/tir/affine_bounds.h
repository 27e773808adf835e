/*!
 * \file tir/affine_bounds.h
 * \brief Integer affine forms over TIR index expressions, for the region analysis of
 *        CompactBufferAllocation: exact bounds of affine indices without a call into TVM,
 *        constant bounds of differences of min/max expressions, and conditions read as affine
 *        relations.
 *
 * \code
 *   AffineParser parser(&bindings);               // looks through block and Bind vars
 *   parser.Parse(io * 4 + ii);                    // 4 * io + 1 * ii + 0
 *   ConstDifferenceBound(BoundTermsOf(min(io * 4 + 3, 13)), BoundTermsOf(io * 4));   // 3
 *   ParseConditionAtoms(io * 4 + ii < 62 && T.likely(j != 0), bindings);
 *       // [4 * io + ii - 61 <= 0, j != 0]
 * \endcode
 */
#ifndef TVM_MEMPLAN_TIR_AFFINE_BOUNDS_H_
#define TVM_MEMPLAN_TIR_AFFINE_BOUNDS_H_

#include <limits>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/expr.h"

namespace tvm_memplan {
namespace tir {

using ffi::Object;
using ffi::ObjectRef;

/*! \brief "No constant bound" for ConstDifferenceBound. */
inline constexpr int64_t kNoBound = std::numeric_limits<int64_t>::max();

/*!
 * \brief Whether two terms of an affine form are the same: vars by identity; other terms
 *        (opaque sub-expressions such as `bx % 16 // 4`, see BoundTermsOf) structurally.
 */
bool SameTerm(const ObjectRef& a, const ObjectRef& b);

/*! \brief sum(coefficient * term) + constant; terms in order of first appearance, none zero. */
struct Affine {
  std::vector<std::pair<ObjectRef, int64_t>> terms;
  int64_t constant = 0;

  bool IsConstant() const { return terms.empty(); }
  int64_t CoefficientOf(const ObjectRef& term) const {
    for (const auto& [v, c] : terms) {
      if (SameTerm(v, term)) return c;
    }
    return 0;
  }
  bool SameTerms(const Affine& other) const {
    if (terms.size() != other.terms.size()) return false;
    for (const auto& [v, c] : terms) {
      if (other.CoefficientOf(v) != c) return false;
    }
    return true;
  }
  /*! \brief Add `scale * var`; false on overflow. */
  bool AddTerm(const ObjectRef& var, int64_t scale) {
    for (size_t i = 0; i < terms.size(); ++i) {
      if (SameTerm(terms[i].first, var)) {
        int64_t sum;
        if (__builtin_add_overflow(terms[i].second, scale, &sum)) return false;
        if (sum == 0) {
          terms.erase(terms.begin() + i);
        } else {
          terms[i].second = sum;
        }
        return true;
      }
    }
    if (scale != 0) terms.emplace_back(var, scale);
    return true;
  }
  bool AddConstant(int64_t value) { return !__builtin_add_overflow(constant, value, &constant); }
};

/*! \brief `a - b`, or nullopt on overflow. */
std::optional<Affine> Difference(const Affine& a, const Affine& b);

/*! \brief Block iteration vars and `Bind` vars, resolved to their values while parsing. */
using Substitution = std::unordered_map<const Object*, ObjectRef>;

/*! \brief Parses affine expressions, looking through substituted variables. */
class AffineParser {
 public:
  explicit AffineParser(const Substitution* subst) : subst_(subst) {}
  /*! \brief `expr` as an affine form; nullopt when it is not one (a load, a division, ...). */
  std::optional<Affine> Parse(const ObjectRef& expr) const;

 private:
  bool Accumulate(const ObjectRef& e, int64_t scale, Affine* out, int depth) const;
  const Substitution* subst_;
};

/*! \brief The expression of an affine form, built with TVM's folding operators. */
ObjectRef ToExpr(const Affine& form, DLDataType dtype);

/*! \brief The variables an expression uses, and whether it reads memory or calls anything. */
struct ExprFacts {
  std::vector<ObjectRef> vars;
  bool reads_memory = false;
  /*! \brief The buffers loaded (their buffer vars, first occurrence first). */
  std::vector<ObjectRef> loaded;
  bool calls = false;

  bool Uses(const Object* var) const {
    return std::any_of(vars.begin(), vars.end(),
                       [&](const ObjectRef& v) { return v.get() == var; });
  }
};

/*! \brief The variables of `expr` (not descending into them) and what it reads or calls. */
ExprFacts ScanExpr(const ObjectRef& expr);

/*!
 * \brief `expr` with the substituted vars replaced by their values, repeatedly (a value may use
 *        vars of outer blocks).
 */
ObjectRef Resolve(const ObjectRef& expr, const Substitution& subst);

/*!
 * \brief Affine forms known to bound an expression: every `upper` form is >= it and every
 *        `lower` form <= it, whatever the values of its variables. For min(a, b) + c the upper
 *        forms are a + c and b + c; that is how a loop-dependent extent gets a constant bound.
 */
struct BoundTerms {
  std::vector<Affine> upper, lower;
};

BoundTerms BoundTermsOf(const ObjectRef& e);

/*!
 * \brief A constant bound of `hi - lo` from their bound terms: the least constant x - y over
 *        x in hi.upper and y in lo.lower; kNoBound when no pair differs by a constant.
 */
int64_t ConstDifferenceBound(const BoundTerms& hi, const BoundTerms& lo);

/*! \brief Integer division rounding down (up). */
int64_t FloorDivInt(int64_t a, int64_t b);
int64_t CeilDivInt(int64_t a, int64_t b);

/*!
 * \brief `coeff * v` for v in [lo, hi], added to [*min, *max]; false on overflow (then the
 *        outputs are unspecified).
 */
bool AddScaledRange(int64_t coeff, int64_t lo, int64_t hi, int64_t* min, int64_t* max);

/*! \brief One conjunct of a condition. */
struct Atom {
  ObjectRef expr;
  ExprFacts facts;
  /*! \brief The atom as `form <relation> 0`, when both sides are affine. */
  enum class Relation { kNone, kLE, kGE, kEQ, kNE } relation = Relation::kNone;
  std::optional<Affine> form;
  /*! \brief A comparison iter-map analysis can use as a predicate. */
  bool comparison = false;
};

/*!
 * \brief The conjuncts of a condition (`a && b`, `!(a || b)`, `likely(a)`) with the
 *        substituted vars resolved, each read as an affine relation when it is one.
 */
std::vector<Atom> ParseConditionAtoms(const ObjectRef& cond, const Substitution& subst);

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_AFFINE_BOUNDS_H_
