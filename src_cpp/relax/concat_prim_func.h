/*!
 * \file relax/concat_prim_func.h
 * \brief Whether a destination-passing PrimFunc is a concatenation whose inputs are contiguous
 *        slices of its output, and where each slice starts.
 *
 * \code
 *   for i, c, h, w: out[i, c, h, w] = if_then_else(8 <= c, b2[i, c - 8, h, w],
 *                                       if_then_else(4 <= c, b[i, c - 4, h, w], a[i, c, h, w]))
 *   // out (1, 12, 8, 8), inputs (1, 4, 8, 8): axis 1, slices at bytes 0, 1024, 2048
 * \endcode
 *
 * The proof, on the TIR and not on the PrimFunc's name: one single-store block writes the output
 * (the last parameter) once per element: its indices are its iteration variables, bound one to
 * one to loops over the whole output, under no predicate; the stored value is a chain of
 * `if_then_else` whose conditions read no buffer and whose leaves are loads of the inputs, each
 * input once; under the conditions leading to it, a leaf reads its input at the output's indices
 * with the index along one axis shifted by a constant, and only within the input. Those slices
 * then tile the axis, so the output is the inputs side by side (buffers row-major, of the
 * output's dtype). Each slice is one contiguous range of the output's bytes when every dimension
 * before the axis is 1.
 */
#ifndef TVM_MEMPLAN_RELAX_CONCAT_PRIM_FUNC_H_
#define TVM_MEMPLAN_RELAX_CONCAT_PRIM_FUNC_H_

#include <string>
#include <variant>
#include <vector>

#include "ir/tir.h"

namespace tvm_memplan {
namespace relax {

/*! \brief A proven concatenation: inputs are parameters 0..n-1, the output parameter n. */
struct ConcatLayout {
  int64_t axis = 0;
  /*! \brief Whether each input is one contiguous range of the output's bytes; if not, why. */
  bool contiguous = true;
  std::string not_contiguous;
  /*! \brief Per input, in parameter order: where its slice starts in the output, in bytes
   *         (when contiguous). */
  std::vector<int64_t> byte_offsets;
};

/*! \brief The layout of `prim_func`, or why it is not provably a concatenation. */
std::variant<ConcatLayout, std::string> AnalyzeConcatenation(const ir::PrimFunc& prim_func);

/*! \brief Per parameter of `prim_func`, whether the function may write it: it stores to the
 *         buffer, takes its address or declares a view of it. */
std::vector<bool> WrittenParams(const ir::PrimFunc& prim_func);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_CONCAT_PRIM_FUNC_H_
