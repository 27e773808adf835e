/*!
 * \file tir/region_relaxation.h
 * \brief One access of an allocated buffer, relaxed over the loops entered after the
 *        allocation: per dimension an inclusive range [lo, hi] in terms visible at the
 *        allocation, or the reason there is none.
 *
 * \code
 *   for io in range(16):              // not relaxed: io stays in the bounds
 *       B = T.alloc_buffer((64,))
 *       for ii in range(4):           // relaxed: ii in [0, 3]
 *           if ii < 3:                // tightens ii to [0, 2]
 *               B[io * 4 + ii] = ...  // RelaxAccess: [io * 4, io * 4 + 2]
 * \endcode
 *
 * Affine indices over loops with constant ranges are bounded here, in C++ (AffineRanges);
 * conditions over several relaxed loops, non-affine indices and symbolic ranges go to TVM's
 * iter-map region estimate.
 */
#ifndef TVM_MEMPLAN_TIR_REGION_RELAXATION_H_
#define TVM_MEMPLAN_TIR_REGION_RELAXATION_H_

#include <string>
#include <unordered_set>
#include <vector>

#include "ir/analyzer.h"
#include "ir/visitor.h"
#include "tir/affine_bounds.h"
#include "tir/compact_buffers_records.h"

namespace tvm_memplan {
namespace tir {

/*! \brief The loops enclosing one access, and what the relaxation knows of each. */
struct LoopRanges {
  /*!
   * \brief Per loop of `loops` (outermost first): `relaxed` for the buffer (entered after its
   *        allocation, or a thread that shares it); constant range [lo, hi] when `constant`.
   */
  LoopRanges(const std::vector<ir::LoopScope>& loops, std::vector<bool> relaxed);

  /*! \brief Whether a relaxed loop has a symbolic range (then BoundSymbolicRanges helps). */
  bool HasSymbolicRelaxedRange() const;
  /*!
   * \brief Constant bounds of symbolic relaxed ranges (a tail tile `range(min(4, n - i * 4))`),
   *        from the analyzer; separate because asking the analyzer first tells it every pending
   *        binding, which most accesses never need.
   */
  void BoundSymbolicRanges(const ir::Analyzer& analyzer);

  /*! \brief The loop whose variable is `var` (innermost first); -1 when none. */
  int IndexOf(const Object* var) const;
  bool IsRelaxed(const Object* var) const {
    int k = IndexOf(var);
    return k >= 0 && relaxed[k];
  }

  const std::vector<ir::LoopScope>* loops;
  std::vector<bool> relaxed, constant;
  std::vector<int64_t> lo, hi;
  /*! \brief Conditions on several relaxed loops, for TVM's region estimate. */
  std::vector<const Atom*> pending;
};

enum class Tightened { kYes, kNo, kEmpty };

/*!
 * \brief Use the condition `atom` to tighten the constant range of the one relaxed loop it
 *        bounds (`c * v + rest <relation> 0`, `rest` with constant bounds). kEmpty when the
 *        range becomes empty: the code under the condition cannot run.
 */
Tightened TightenRange(const Atom& atom, LoopRanges* ranges);

/*! \brief What the relaxation reads of the function besides the loops. */
struct RelaxationScope {
  /*! \brief Block iteration vars and Bind vars, resolved while parsing. */
  const Substitution* subst;
  /*! \brief Parameters and the variables of their shapes: visible everywhere. */
  const std::unordered_set<const Object*>* function_vars;
  ir::Analyzer* analyzer;
};

/*! \brief One access, relaxed. */
struct RelaxedAccess {
  /*! \brief Per dimension, the range covered; meaningful where `unknown` is empty. */
  std::vector<DimRange> ranges;
  /*! \brief Per dimension, why it has no range ("index depends on a call", ...). */
  std::vector<std::string> unknown;
  /*! \brief Buffers its indices load, repeats included (their values must not change while
   *         the buffer lives). */
  std::vector<ObjectRef> loaded;
};

/*!
 * \brief Relax an access: point indices, or ranges (ir.Range per dimension) when `is_region`;
 *        `row_size` > 0 for an access through a flat view (one index into the flattened
 *        buffer, turned into a range of rows).
 */
RelaxedAccess RelaxAccess(const LoopRanges& loops, const RelaxationScope& scope,
                          const ffi::Array<ObjectRef>& items, bool is_region, int64_t row_size);

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_REGION_RELAXATION_H_
