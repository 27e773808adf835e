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
 *
 * When every greedy order stays above the bound and `PackOptions::budget` allows it, an exact
 * search (relax/offset_search.h) looks for a placement at the bound; if there is none, it narrows
 * the size down by bisection between the bound and the best size found, each step a search for
 * a placement within that size given half of the budget left, until it proves the least size or
 * its budget runs out. The result says which (`Packing::optimality`, a code of
 * `optimality::kCodes`).
 *
 * Only the order of the program points counts, never their values: the items are put on
 * canonical time first (each first point and each end replaced by its rank), so two numberings
 * that differ by a renaming keeping the order get the same placement, bit for bit.
 *
 * The alignment may be any positive integer (the planner takes any multiple of 64, such as 192):
 * offsets are multiples of it, not just of its largest power of two.
 */
#ifndef TVM_MEMPLAN_RELAX_OFFSET_PACKING_H_
#define TVM_MEMPLAN_RELAX_OFFSET_PACKING_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/codes.h"
#include "relax/planners.h"
#include "relax/search_budget.h"

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

/*! \brief Codes of Packing::optimality (and of the records that carry it): how a placement's
 *         size compares with the least possible. One table (ir/codes.h), exported by reflection
 *         as the family "optimality"; docs and the report read it from there. */
namespace optimality {
inline constexpr const char* kAtBound = "at_bound";
inline constexpr const char* kProvenMinimum = "proven_minimum";
inline constexpr const char* kBestFound = "best_found";
inline constexpr ir::Code kCodes[] = {
    {kAtBound,
     "The size equals the peak-live bound (the most bytes live at one program point): no "
     "placement is smaller.",
     ""},
    {kProvenMinimum,
     "The size is above the peak-live bound, and the exact search proved that no smaller "
     "placement exists.",
     ""},
    {kBestFound,
     "The smallest placement found before the search budget ran out (or without an exact search); "
     "a smaller one may exist. The gap to the bound is given.",
     "a larger search budget (exact_search_ms), which may find a smaller placement"},
};
/*! \brief The weaker of two codes (a function's is the weakest of its storages'). */
const char* Weakest(const char* a, const char* b);
}  // namespace optimality

/*! \brief How PackOffsets searches. */
struct PackOptions {
  /*! \brief Every offset is a multiple of this (any positive integer). */
  int64_t alignment = kPlanAlignment;
  /*! \brief When >= 0, any placement within this many bytes will do: the search stops at the
   *         first (it does not minimize further), and says when none exists. */
  int64_t capacity = -1;
  /*! \brief The budget of the whole packing (relax/search_budget.h): every greedy order is
   *         charged to it, and an order after the first runs only while some is left; the exact
   *         search, when the greedy orders stay above the bound, spends the rest. nullptr: every
   *         greedy order and no exact search. One budget may serve several packings, such as
   *         the storages of one function. */
  SearchBudget* budget = nullptr;
  /*! \brief When set, called after each greedy order and each try of the exact search with the
   *         phase ("greedy orders" or "exact search"), the smallest size found so far and the
   *         peak-live bound. */
  std::function<void(const char* phase, int64_t best_bytes, int64_t bound)> progress;
};

/*! \brief Above this many items (of nonzero size) the exact search does not run: it keeps a
 *         list of the pairs live together, which grows with the square of the items. */
inline constexpr size_t kMaxSearchItems = 5000;

/*! \brief A placement: one offset per item (a multiple of the alignment) and the size. */
struct Packing {
  std::vector<int64_t> offsets;
  /*! \brief The storage size: the largest offset + bytes. */
  int64_t bytes = 0;
  /*! \brief The heuristic (or the exact search) that produced the placement. */
  std::string algorithm;
  /*! \brief A code of `optimality`, and the peak-live bound it refers to. */
  const char* optimality = optimality::kBestFound;
  int64_t bound = 0;
  /*! \brief With PackOptions::capacity: whether the placement fits, and when it does not, why
   *         ("" when it fits). */
  bool fits = true;
  std::string why_not;
  /*! \brief Steps the exact search took (0 when it did not run) and whether its deadline, not
   *         its steps, ended it (then the result may depend on the machine's load). */
  int64_t search_steps = 0;
  bool timed_out = false;
  /*! \brief The greedy orders' work (entries of the offset index examined, charged to the
   *         budget at kIndexEntriesPerStep a step) and how many orders ran. */
  int64_t greedy_steps = 0;
  int greedy_orders = 0;
  /*! \brief Seconds in the greedy orders and in the exact search (measured, so they vary from
   *         run to run; the steps do not). */
  double greedy_seconds = 0;
  double search_seconds = 0;
};

/*! \brief The most bytes live at one program point (the bytes of a group's live items counted
 *         once where they overlap): no placement is smaller. */
int64_t PeakLiveBytes(const std::vector<PackItem>& items);

/*! \brief Per program point in [0, num_points), the bytes live there (a group's live items
 *         counted once where they overlap): the curve whose maximum is PeakLiveBytes. */
std::vector<int64_t> LiveBytesAt(const std::vector<PackItem>& items, int64_t num_points);

/*! \brief The smallest placement found (or, with a capacity, one within it), labelled: the
 *         greedy orders, then the exact search where they stay above the bound. */
Packing PackOffsets(const std::vector<PackItem>& items, const PackOptions& options);

/*!
 * \brief PackOffsets for several problems on one budget (the storages of one function), one
 *        placement per problem, in order. Each is placed by the greedy orders first. The exact
 *        search then spends what is left where its expected gain is largest: a problem whose
 *        greedy placement lies more bytes above its bound is searched earlier (the earlier
 *        problem first at a tie), on a share of what is left in proportion to its gap among
 *        the gaps left; what it does not spend goes to the smaller gaps after it.
 *
 * \code
 *   // Greedy: a 448 bytes over its bound, which 3,819 steps of search remove; b 17,408 over.
 *   PackAll({a, b}, options);  // 50 ms: b searched first on 97.5% of what the greedy orders
 *                              // left, down to 12,288 over; a on the rest, to its bound.
 *                              // Had b been searched on all of it, a would have stayed greedy.
 * \endcode
 */
std::vector<Packing> PackAll(const std::vector<std::vector<PackItem>>& problems,
                             const PackOptions& options);

/*! \brief Greedy orders only: PackOffsets with no exact search. */
inline Packing PackOffsets(const std::vector<PackItem>& items, int64_t alignment) {
  PackOptions options;
  options.alignment = alignment;
  return PackOffsets(items, options);
}

/*! \brief Whether a placement is valid: aligned offsets, the items of a group at their deltas
 *         from each other, and no two other items overlapping in both time and bytes (for
 *         tests, and as the planner's own check). */
bool IsValidPacking(const std::vector<PackItem>& items, const Packing& packing, int64_t alignment);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_OFFSET_PACKING_H_
