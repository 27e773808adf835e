/*!
 * \file relax/offset_search.h
 * \brief An exact search for offsets that fit a capacity (relax/offset_packing.h calls it when
 *        its greedy orders stay above the peak-live bound): a depth-first branch and bound over
 *        canonical placements, which either places every item within the capacity, proves that
 *        no placement does, or runs out of its budget.
 *
 * \code
 *   //            bytes  live over points
 *   //   a        128    [0, 1]
 *   //   b         64    [1, 2]
 *   //   c        128    [2, 3]
 *   OffsetSearch search({{128, 0, 1}, {64, 1, 2}, {128, 2, 3}}, 64);
 *   SearchBudget budget = SearchBudget::ForMs(10);
 *   search.Fit(192, &budget);  // kFound: a at 0, b at 128, c at 0 (or a mirror of it)
 *   search.Fit(128, &budget);  // kInfeasible: a and b are live together at point 1
 * \endcode
 *
 * The ideas are those of MiniMalloc (Moffitt, ASPLOS 2023), implemented here on their own terms:
 *
 * - **Canonical placements only.** Items are placed in order of offset, each at the lowest
 *   aligned offset above every placed item that is live with it. Any placement can be pushed down
 *   until each item sits at 0 or on an item live with it, and placing such a placement's items by
 *   offset meets it, so for plain items nothing is lost.
 * - **Inference per section.** Time is cut into sections where the live set does not change.
 *   Every item still to place that is live in a section must go above the highest placed item
 *   live there (and above the offset last placed, since offsets only grow), so a section whose
 *   floor plus its unplaced bytes exceeds the capacity ends the branch at once.
 * - **Dominance.** An item placed at or above the top that another item could still take below
 *   it leaves a gap that item would fill: such branches are skipped, as is every alternative to
 *   an item that nothing still to place lies above.
 * - **Decomposition.** Once no item still to place spans a section boundary, the two sides are
 *   independent problems, searched one after the other.
 * - **Restarts.** Several orders of preference are tried in turn with a doubling step limit, so
 *   one unlucky order does not spend the whole budget.
 *
 * A group (items at fixed deltas, a copy-free concatenation) is placed as one rigid block above
 * every placed item live with one of its members. Its members may leave holes that a plain item
 * could fill, which canonical placements never try: the search still only returns valid
 * placements, but a failure with groups present is not a proof (`proves_infeasibility`).
 */
#ifndef TVM_MEMPLAN_RELAX_OFFSET_SEARCH_H_
#define TVM_MEMPLAN_RELAX_OFFSET_SEARCH_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "relax/offset_packing.h"
#include "relax/search_budget.h"

namespace tvm_memplan {
namespace relax {

/*! \brief The outcome of OffsetSearch::Fit. */
enum class SearchOutcome {
  /*! \brief Every item placed within the capacity. */
  kFound,
  /*! \brief No placement fits (a proof only where OffsetSearch::proves_infeasibility). */
  kInfeasible,
  /*! \brief The budget ran out first. */
  kOutOfBudget,
};

/*! \brief The search over one set of items; Fit may be called for several capacities. */
class OffsetSearch {
 public:
  /*! \brief `alignment` (any positive integer) divides every offset; group deltas are multiples
   *         of it (PackItem). */
  OffsetSearch(const std::vector<PackItem>& items, int64_t alignment);
  ~OffsetSearch();

  /*! \brief Search for offsets within `capacity` bytes; on kFound, `offsets` (one per item) is a
   *         valid placement whose size is at most `capacity`. */
  SearchOutcome Fit(int64_t capacity, SearchBudget* budget, std::vector<int64_t>* offsets);

  /*! \brief Whether kInfeasible is a proof: no group of more than one item takes part. */
  bool proves_infeasibility() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_OFFSET_SEARCH_H_
