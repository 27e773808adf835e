/*!
 * \file relax/inplace_prim_func.h
 * \brief Whether a destination-passing PrimFunc may write its output (its last parameter)
 *        into the memory of one of its inputs.
 *
 * \code
 *   for i, j: T_add[i, j] = x[i, j] + y[j]        -> may write into x (not into y)
 *   for i, j: T_t[i, j] = x[j, i]                 -> no: reads x at another element
 *   max[i] = reduce(x[i, :]);                     -> may write into x: the reduction reads x
 *   for i, j: out[i, j] = exp(x[i, j] - max[i])      before the output is written
 * \endcode
 *
 * The proof: one single-store block writes the output, once per element (its indices are
 * distinct iteration variables bound to distinct loops, and no other loop encloses it); that
 * block reads the input only at the element it writes; every other read of the input happens
 * before that block, outside its loops; nothing else writes the input, reads the output, views
 * either or takes their address. Then overwriting element e of the input when writing element e
 * of the output loses no value still to be read, in any order of the writing block's
 * iterations. The same tensor passed as several parameters is checked as one input.
 */
#ifndef TVM_MEMPLAN_RELAX_INPLACE_PRIM_FUNC_H_
#define TVM_MEMPLAN_RELAX_INPLACE_PRIM_FUNC_H_

#include <optional>
#include <string>
#include <vector>

#include "ir/tir.h"

namespace tvm_memplan {
namespace relax {

/*!
 * \brief Whether `prim_func` may write its output into parameters `inputs` (one tensor passed
 *        as each of them): nullopt when it may, else why not.
 */
std::optional<std::string> CheckInplacePrimFunc(const ir::PrimFunc& prim_func,
                                                const std::vector<int64_t>& inputs);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_INPLACE_PRIM_FUNC_H_
