/*!
 * \file relax/search_budget.h
 * \brief The exact offset search's budget, in one place: its unit (milliseconds), its defaults
 *        with their reasons, the one conversion into steps, and the PassContext option that sets
 *        it for a whole build.
 *
 * \code
 *   SearchBudget budget = SearchBudget::ForMs(kPlannerSearchMs);  // 1000 ms: 150,000,000 steps
 *   PackOptions options;
 *   options.budget = &budget;  // shared by every storage of one function
 * \endcode
 *
 * Where it is set, the first that is set winning (as the stack limits are resolved,
 * target/stack_limits.h): the PassContext option `tvm_memplan.exact_search_ms` (a whole build,
 * MLC-LLM's included; `tvm-memplan report` and `run` set it with `--exact-search-ms`); the
 * planner's option `MemoryPlanOptions.exact_search_ms`; `pack_offsets`' argument.
 */
#ifndef TVM_MEMPLAN_RELAX_SEARCH_BUDGET_H_
#define TVM_MEMPLAN_RELAX_SEARCH_BUDGET_H_

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "ir/reflection.h"

namespace tvm_memplan {
namespace relax {

/*! \brief Search steps (a block or a section visited) per millisecond of budget. A step took 1.2
 *         to 2.9 ns on the 11 published hard instances on a busy 2-core machine (bench/plan.py);
 *         at 150,000 a millisecond the steps, not the clock, end a search on a machine up to
 *         about twice as slow, so the result is reproducible. */
inline constexpr int64_t kSearchStepsPerMs = 150000;

/*! \brief Entries of the offset index that the greedy orders examine per search step charged
 *         (relax/offset_packing.cc): an entry took 0.9 to 1.4 ns on idealloc's largest traces
 *         on the same machine, so four of them cost about what the steps per millisecond above
 *         allow one step, and a budget bounds a whole packing in about its own time. */
inline constexpr int64_t kIndexEntriesPerStep = 4;

/*! \brief The planner's budget per function when nothing sets it: a compile spends it once for
 *         every function whose greedy orders stay above the bound, so it stays small. */
inline constexpr int64_t kPlannerSearchMs = 1000;

/*! \brief The budget of one packing problem on its own (`analysis.pack_offsets`,
 *         `tvm-memplan pack`): the problem is the user's whole job, so it may take longer. */
inline constexpr int64_t kPackSearchMs = 10000;

/*! \brief The PassContext option that sets the planner's budget for a whole build. */
inline constexpr const char* kSearchPassConfig = "tvm_memplan.exact_search_ms";

/*!
 * \brief What a search may spend: steps of work (a block or a section visited) and wall-clock
 *        time, shared by every search it is passed to. The steps make results reproducible; the
 *        deadline only guards against a machine much slower than the steps were sized for.
 */
class SearchBudget {
 public:
  SearchBudget(int64_t steps, std::chrono::steady_clock::duration time)
      : steps_left_(steps), deadline_(std::chrono::steady_clock::now() + time) {}

  /*! \brief The budget of `ms` milliseconds: the one conversion into steps. */
  static SearchBudget ForMs(int64_t ms) {
    return SearchBudget(ms * kSearchStepsPerMs, std::chrono::milliseconds(ms));
  }

  /*! \brief A part of this budget: at most `steps` of what is left, the same deadline. What it
   *         spends is charged back with Charge. */
  SearchBudget Part(int64_t steps) const {
    SearchBudget part(std::min(steps, steps_left_), std::chrono::steady_clock::duration(0));
    part.deadline_ = deadline_;
    part.spent_ = spent_;
    return part;
  }
  /*! \brief Charge what `part` spent to this budget. */
  void Charge(const SearchBudget& part) {
    taken_ += part.taken_;
    steps_left_ -= part.taken_;
    if (part.timed_out_) spent_ = timed_out_ = true;
    if (steps_left_ <= 0) spent_ = true;
  }
  int64_t steps_left() const { return steps_left_; }

  /*! \brief Spend `steps`; false (from then on) once the steps or the time are spent. */
  bool Spend(int64_t steps) {
    if (spent_) return false;
    taken_ += steps;
    if ((steps_left_ -= steps) < 0) return !(spent_ = true);
    // The clock is read every few calls only.
    if ((++calls_ & 63) == 0 && std::chrono::steady_clock::now() > deadline_) {
      return !(spent_ = timed_out_ = true);
    }
    return true;
  }
  /*! \brief Spend `steps` of work done at once (a whole greedy order), reading the clock: false
   *         once the steps or the time are spent. */
  bool SpendAtOnce(int64_t steps) {
    if (!Spend(steps)) return false;
    if (std::chrono::steady_clock::now() > deadline_) return !(spent_ = timed_out_ = true);
    return true;
  }
  bool spent() const { return spent_; }
  /*! \brief Whether the deadline, rather than the steps, ended a search. */
  bool timed_out() const { return timed_out_; }
  int64_t steps_taken() const { return taken_; }

 private:
  int64_t steps_left_;
  std::chrono::steady_clock::time_point deadline_;
  int64_t taken_ = 0;
  int64_t calls_ = 0;
  bool spent_ = false;
  bool timed_out_ = false;
};

/*!
 * \brief The planner's budget in milliseconds for a build under `pass_context`: the PassContext
 *        option when set, else `option_ms` (MemoryPlanOptions.exact_search_ms).
 */
int64_t PlannerSearchMs(const ffi::ObjectRef& pass_context, int64_t option_ms);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_SEARCH_BUDGET_H_
