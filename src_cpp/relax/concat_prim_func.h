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
 * Two proofs, on the TIR and not on the PrimFunc's name.
 *
 * A pure concatenation (the call can be dropped once its inputs sit at their slices): one
 * single-store block writes the output (the last parameter) once per element: its indices are
 * its iteration variables, bound one to one to loops over the whole output, under no predicate;
 * the stored value is a chain of `if_then_else` whose conditions read no buffer and whose leaves
 * are loads of the inputs, each input once; under the conditions leading to it, a leaf reads its
 * input at the output's indices with the index along one axis shifted by a constant, and only
 * within the input. Those slices then tile the axis, so the output is the inputs side by side
 * (buffers row-major, of the output's dtype).
 *
 * Otherwise, a kernel that writes some inputs unchanged into slices of its output (a
 * concatenation fused with an upsample or a cast of its other inputs, or scheduled for a GPU):
 *
 * \code
 *   for ...: up[i, c, h, w] = x[i, c, h // 2, w // 2]                 (a buffer of its own)
 *   for ...: out[i, c, h, w] = if_then_else(16 <= c, skip[i, c - 16, h, w], up[i, c, h, w])
 *   // skip is sliced: channels [16, 24) of out, 16 KiB in; x is only read
 * \endcode
 *
 * Only one statement stores to the output, at indices that are iteration variables over the
 * output's extents (or constants of unit dimensions), under any loops, threads and predicates;
 * no parameter but the output is written, no address is taken, no sub-buffer matched. The stored
 * value is a chain of `if_then_else` as above, whose leaves may compute. An input is *sliced*
 * when a leaf loads it at the output's indices shifted by a constant along one axis, within the
 * input, and, along that axis, no other leaf is selected within the input's slice. Then each
 * store into the slice writes back the element that the sliced input holds at that very byte
 * once it is placed there: the bytes never change, so every read of the input in the kernel,
 * in any thread and in any order, sees its value. The call stays (`computes`) unless every leaf
 * is a sliced input and the slices tile the axis.
 *
 * Each slice is one contiguous range of the output's bytes when every dimension before the
 * axis is 1.
 */
#ifndef TVM_MEMPLAN_RELAX_CONCAT_PRIM_FUNC_H_
#define TVM_MEMPLAN_RELAX_CONCAT_PRIM_FUNC_H_

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/tir.h"

namespace tvm_memplan {
namespace relax {

/*! \brief A proven concatenation: inputs are parameters 0..n-1, the output parameter n. */
struct ConcatLayout {
  /*! \brief ConcatLayout::byte_offsets of an input that is not sliced (the kernel computes
   *         from it). */
  static constexpr int64_t kNotSliced = -1;
  int64_t axis = 0;
  /*! \brief Whether each input is one contiguous range of the output's bytes; if not, why. */
  bool contiguous = true;
  std::string not_contiguous;
  /*! \brief Per input, in parameter order: where its slice starts in the output, in bytes
   *         (when contiguous), or kNotSliced. */
  std::vector<int64_t> byte_offsets;
  /*! \brief Whether the kernel also computes part of the output, so the call must run: it
   *         writes the sliced inputs back where they lie. False: a pure concatenation. */
  bool computes = false;
  bool Sliced(size_t input) const { return byte_offsets[input] != kNotSliced; }
};

/*! \brief What one plain walk of a PrimFunc's body tells of its parameters. */
struct ParamWrites {
  /*! \brief Per parameter, whether the function may write it: it stores to the buffer, takes
   *         its address or declares a view of it. */
  std::vector<bool> written;
  /*! \brief Its one store into its last parameter (the output, in destination-passing style);
   *         nullopt when it stores there never or more than once (a reduction's init is a
   *         second store). */
  std::optional<ir::BufferStore> output_store;
};

/*! \brief The walk, without scopes or an analyzer: any buffer named where it is written counts,
 *         wherever it is. */
ParamWrites WalkParamWrites(const ir::PrimFunc& prim_func);

/*! \brief A condition every concatenation meets, checked on `writes` (of `prim_func`) before the
 *         proofs below: inputs, and exactly one store into the output, whose value is an
 *         `if_then_else` selecting by a condition that reads no buffer. False:
 *         AnalyzeConcatenation finds no layout. */
bool MayBeConcatenation(const ir::PrimFunc& prim_func, const ParamWrites& writes);

/*! \brief The layout of `prim_func`, or why it provably writes no input unchanged into a slice
 *         of its output. */
std::variant<ConcatLayout, std::string> AnalyzeConcatenation(const ir::PrimFunc& prim_func);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_CONCAT_PRIM_FUNC_H_
