/*!
 * \file relax/program_points.h
 * \brief A Relax function as one sequence of program points, the order in which the VM can run
 *        them: bindings in order, and for each `if` its condition, the then branch, the else
 *        branch, and the merge that binds its variable.
 *
 * \code
 *   @R.function                           step  kind           uses
 *   def main(x, c):
 *       a = R.exp(x)                      0     kBinding       x
 *       if c:                             1     kIfCondition   c
 *           b = R.exp(a)                  2     kBinding       a      (branches {(0, then)})
 *           r = b                         3     kBranchResult  b
 *       else:
 *           r = a                         4     kBranchResult  a      (branches {(0, else)})
 *                                         5     kIfResult      -      (binds r)
 *       return r                          6     kReturn        r
 * \endcode
 *
 * The in-place analysis and the memory planner both read a function this way: a value is live
 * from the step that defines it to the last step that reads it, and CanFollow tells when two
 * steps are on exclusive branches.
 */
#ifndef TVM_MEMPLAN_RELAX_PROGRAM_POINTS_H_
#define TVM_MEMPLAN_RELAX_PROGRAM_POINTS_H_

#include <optional>
#include <utility>
#include <vector>

#include "ir/relax.h"

namespace tvm_memplan {
namespace relax {

/*! \brief One program point of a flattened function. */
struct Step {
  enum class Kind { kBinding, kIfCondition, kBranchResult, kIfResult, kReturn };
  Kind kind;
  /*! \brief The binding (kBinding, kIfResult) or the `if` binding (kIfCondition, kBranchResult). */
  std::optional<ir::relax::Binding> binding;
  /*! \brief The binding's variable (null without a binding), read once here. */
  ObjectRef var;
  /*! \brief The bound value, the condition, or the branch / function result. */
  ObjectRef expr;
  /*! \brief kIfResult: the two branch results. */
  ObjectRef true_result, false_result;
  bool dataflow = false;
  /*! \brief Variables the step reads (not descending into types). */
  std::vector<const Object*> uses;
  /*! \brief The `if` branches enclosing the step: (id of the `if`, 0 then / 1 else). */
  std::vector<std::pair<int, int>> branches;
  /*!
   * \brief The SeqExpr the step belongs to (-1: the function result): the function body and
   *        each `if` branch. After ToNonDataflow a SeqExpr's binding blocks are one block.
   */
  int block = -1;
  /*! \brief The BindingBlock the step is in, numbered over the function (-1: none). */
  int binding_block = -1;
};

/*! \brief The program points of `func`; a ValueError when its body is not normalized. */
std::vector<Step> FlattenFunction(const ir::relax::Function& func);

/*!
 * \brief Whether step `later` can run after step `earlier` (`earlier < later`): not when
 *        `earlier` is in the then branch and `later` in the else branch of the same `if`.
 */
bool CanFollow(const Step& earlier, const Step& later);

/*! \brief Variables occurring in `expr`, in first-occurrence order (types are not entered). */
std::vector<const Object*> UsedVars(const ObjectRef& expr);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_PROGRAM_POINTS_H_
