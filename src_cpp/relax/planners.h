/*!
 * \file relax/planners.h
 * \brief The two Relax memory planners as options and records name them, and the alignment the
 *        runtime holds tensors at offsets to: the facts the planner's records, its model and the
 *        in-place pass's options share, written once.
 *
 * \code
 *   InplaceOptions(planner=kMemplanPlanner)           # "memplan": judged by our planner
 *   MemoryPlanOptions().alignment == kPlanAlignment   # 64 == kRuntimeAlignment
 * \endcode
 */
#ifndef TVM_MEMPLAN_RELAX_PLANNERS_H_
#define TVM_MEMPLAN_RELAX_PLANNERS_H_

#include <cstdint>

namespace tvm_memplan {
namespace relax {

/*! \brief The planners, as options and records name them: TVM's StaticPlanBlockMemory, ours. */
inline constexpr const char* kStockPlanner = "stock";
inline constexpr const char* kMemplanPlanner = "memplan";
/*! \brief kAllocAlignment of the TVM runtime (tvm/runtime/device_api.h; tests/ir/test_schema.py
 *         holds this to the wheel's header): offsets below it make ensure_zero_offset copy. */
inline constexpr int64_t kRuntimeAlignment = 64;
/*! \brief The alignment tvm-memplan's planner packs with by default. */
inline constexpr int64_t kPlanAlignment = kRuntimeAlignment;

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_PLANNERS_H_
