/*!
 * \file relax/offset_packing.h
 * \brief Placing tensors at offsets of one storage so that tensors live at the same program
 *        point never overlap, in as few bytes as possible (a dynamic storage allocation
 *        problem: NP-hard in general, close to the peak-live bound in practice).
 *
 * \code
 *   //            bytes  live over points
 *   //   a        256    [0, 2]
 *   //   b        128    [1, 3]
 *   //   c        256    [3, 4]
 *   Packing p = PackOffsets({{256, 0, 2}, {128, 1, 3}, {256, 3, 4}}, 64);
 *   // p.offsets == {0, 256, 0}: c reuses a's bytes; p.bytes == 384 == PeakLiveBytes(...)
 * \endcode
 *
 * Several greedy orders are tried and the smallest result is kept (TFLite's arena planner and
 * ExecuTorch keep such a choice too): by size with best fit (each tensor, largest first, goes
 * into the smallest gap between the tensors placed so far that overlap it in time), by
 * breadth (program points with the most live bytes first), and in program order (first fit). The
 * search stops as soon as a result reaches the peak-live bound, which no placement can beat. A
 * group is placed whole when the first of its items comes up, at the lowest offset where none of
 * its items overlaps an item placed before.
 */
#ifndef TVM_MEMPLAN_RELAX_OFFSET_PACKING_H_
#define TVM_MEMPLAN_RELAX_OFFSET_PACKING_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tvm_memplan {
namespace relax {

/*!
 * \brief One tensor to place: `bytes` live over program points [first, last]. Items of one
 *        `group` (>= 0) are placed together, each at `delta` bytes from the group's place, and
 *        may share bytes with each other (a copy-free concatenation: each input inside its
 *        output); `delta` is a multiple of the alignment.
 */
struct PackItem {
  int64_t bytes = 0;
  int64_t first = 0;
  int64_t last = 0;
  int64_t group = -1;
  int64_t delta = 0;
};

/*! \brief A placement: one offset per item (a multiple of the alignment) and the size. */
struct Packing {
  std::vector<int64_t> offsets;
  /*! \brief The storage size: the largest offset + bytes. */
  int64_t bytes = 0;
  /*! \brief The heuristic that produced the placement. */
  std::string algorithm;
};

/*! \brief The most bytes live at one program point (the bytes of a group's live items counted
 *         once where they overlap): no placement is smaller. */
int64_t PeakLiveBytes(const std::vector<PackItem>& items);

/*! \brief Per program point in [0, num_points), the bytes live there (a group's live items
 *         counted once where they overlap): the curve whose maximum is PeakLiveBytes. */
std::vector<int64_t> LiveBytesAt(const std::vector<PackItem>& items, int64_t num_points);

/*! \brief The smallest placement found; `alignment` (a power of two) divides every offset. */
Packing PackOffsets(const std::vector<PackItem>& items, int64_t alignment);

/*! \brief Whether a placement is valid: aligned offsets, the items of a group at their deltas
 *         from each other, and no two other items overlapping in both time and bytes (for
 *         tests, and as the planner's own check). */
bool IsValidPacking(const std::vector<PackItem>& items, const Packing& packing, int64_t alignment);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_OFFSET_PACKING_H_
