/*!
 * \file relax/concat_placement.h
 * \brief Copy-free concatenation: the concatenations of a function that the planner makes free by
 *        placing each input at its slice of the output's memory, so that the producers write
 *        there and the concatenation, then a no-op, is dropped.
 *
 * \code
 *   a = alloc((1, 4, 8, 8)); cls.conv(x, a)            a: group 0, 0 bytes into it
 *   b = alloc((1, 4, 8, 8)); cls.relu(y, b)            b: group 0, 1024 bytes into it
 *   c = alloc((1, 8, 8, 8)); cls.concatenate(a, b, c)  c: group 0 at 0; the call is dropped
 * \endcode
 *
 * After fusion the kernel also computes part of the output (`cat(upsample(x), skip)` in one
 * PrimFunc); then only its sliced inputs are placed, the call runs, and it writes each of them
 * back where it already lies:
 *
 * \code
 *   s = alloc((1, 8, 32, 32)); cls.conv(e, s)                 s: group 0, 64 KiB into it
 *   c = alloc((1, 24, 32, 32)); cls.fused_resize_concat(x, s, c)   c: group 0 at 0; call stays
 * \endcode
 *
 * A concatenation (a call of a PrimFunc that relax/concat_prim_func.h proves one) is copy-free
 * when all of the following hold for its sliced inputs; otherwise it keeps its copy and its
 * decision says why:
 *  1. each is a contiguous slice of the output (every dimension before the axis is 1), at an
 *     offset that is a multiple of the alignment;
 *  2. they and the output are distinct tensors the planner places (allocated by this function,
 *     not returned, not escaping, of static size), on one device and storage scope; an input
 *     the kernel only computes from is not the output;
 *  3. the output is not used before the concatenation, and no sliced input is written after
 *     it;
 *  4. its placement agrees with every other copy-free concatenation sharing a tensor: a tensor
 *     has one place (DenseNet's prefix concatenations of one block all share one buffer);
 *  5. in each group of tensors placed together, the bytes kernels write share no byte (a
 *     dropped concatenation writes none; one whose kernel runs writes all of its output but its
 *     sliced inputs' bytes), and no call writes a tensor of the group, other than to produce it,
 *     while another tensor over the same bytes, defined before the write, is still read after it
 *     (the concatenation's snapshot would change).
 * A concatenation refused by rule 4 or 5 is refused alone, and the others are checked again.
 */
#ifndef TVM_MEMPLAN_RELAX_CONCAT_PLACEMENT_H_
#define TVM_MEMPLAN_RELAX_CONCAT_PLACEMENT_H_

#include <string>
#include <vector>

#include "relax/concat_prim_func.h"

namespace tvm_memplan {
namespace relax {

/*! \brief A tensor of the function, as the concatenation analysis needs it. */
struct ConcatTensor {
  std::string name;
  /*! \brief Static bytes; -1 when symbolic or unknown. */
  int64_t bytes = -1;
  /*! \brief Whether the planner places it (relax/memory_plan_analysis.h, rule 2). */
  bool placed = false;
  int64_t device = 0;
  std::string scope;
  /*! \brief Program point of its last read. */
  int64_t last = 0;
  /*! \brief Program points reading it (through any alias), and of the calls that may write it. */
  std::vector<int64_t> uses, writes;
};

/*! \brief A call of a PrimFunc proven to be a concatenation. */
struct ConcatCall {
  int64_t step = 0;
  std::string callee;
  ConcatLayout layout;
  /*! \brief Per PrimFunc parameter (inputs, then the output): the index of the tensor passed,
   *         or -1 when the argument is not exactly one tensor of the function. */
  std::vector<int64_t> args;
  /*! \brief Per PrimFunc parameter: the argument as written, for messages. */
  std::vector<std::string> arg_names;
};

/*! \brief What becomes of one ConcatCall. */
struct ConcatDecision {
  /*! \brief Whether its sliced inputs sit at their slices (the call is dropped unless its
   *         layout `computes`). */
  bool copy_free = false;
  /*! \brief A code of namespace `concat` (relax/memory_plan_records.h), and a sentence. */
  const char* code = "";
  std::string reason;
};

/*! \brief Where the copy-free concatenations put their tensors. */
struct ConcatPlacement {
  /*! \brief Per ConcatCall. */
  std::vector<ConcatDecision> decisions;
  /*! \brief Per tensor: its group (-1: none) and its byte offset in the group. */
  std::vector<int64_t> group, delta;
};

/*! \brief The Concatenation record (relax/memory_plan_records.h) of `call` decided so, its
 *         tensors named as PlannedTensor.binding names them. */
ObjectRef ConcatenationRecord(const std::vector<ConcatTensor>& tensors, const ConcatCall& call,
                              const ConcatDecision& decision);

/*! \brief Decide every concatenation of one function (rules of the file comment). */
ConcatPlacement PlaceConcatenations(const std::vector<ConcatTensor>& tensors,
                                    const std::vector<ConcatCall>& calls, int64_t alignment);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_CONCAT_PLACEMENT_H_
