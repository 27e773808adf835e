/*!
 * \file target/stack_limits.h
 * \brief How much stack a function may use on a target: `max_stack_alloca` (bytes one allocation
 *        may take on the stack) and `max_stack_bytes` (bytes all stack allocations of a function
 *        may take together), resolved once from four levels, the first that is set winning:
 *
 * \code
 *   with tvm.transform.PassContext(config={"tvm_memplan.max_stack_alloca": 0}):   # 1. compilation
 *   tvm.target.Target({"kind": "c", "feature.max_stack_alloca": 4096})           # 2. target
 *   tvm_memplan.target.set_kind_max_stack_alloca("c", 256)                        # 3. target kind
 *   # 4. default: max_stack_alloca 1024 (TVM's constant), max_stack_bytes none
 * \endcode
 *
 * Analyses receive the resolved StackLimits; rewrites never look at the target themselves.
 */
#ifndef TVM_MEMPLAN_TARGET_STACK_LIMITS_H_
#define TVM_MEMPLAN_TARGET_STACK_LIMITS_H_

#include <optional>
#include <string>
#include <vector>

#include "ir/reflection.h"

namespace tvm_memplan {
namespace target {

/*!
 * \brief TVM's own LowerTVMBuiltin keeps a CPU allocation of scope exactly "global" on the stack
 *        when its constant size is below this (runtime::kMaxStackAlloca); nothing else. It is
 *        also `max_stack_alloca`'s default, so a target that sets nothing keeps TVM's bytes.
 */
inline constexpr int64_t kStockMaxStackAlloca = 1024;

/*! \brief One stack option: its name at every level, its default and its documentation. */
struct StackOption {
  /*! \brief Also the target-kind attribute name. */
  const char* name;
  /*! \brief The PassContext option. */
  const char* pass_config;
  /*! \brief The target attribute (TVM accepts extra target keys only with the `feature.` prefix).
   */
  const char* target_attr;
  /*! \brief Used when no level sets the option; nullopt means "no limit". */
  std::optional<int64_t> default_value;
  const char* doc;
};

inline constexpr StackOption kMaxStackAlloca{
    "max_stack_alloca", "tvm_memplan.max_stack_alloca", "feature.max_stack_alloca",
    kStockMaxStackAlloca,
    "Largest allocation, in bytes, placed on the stack of CPU code; larger ones use "
    "TVMBackendAllocWorkspace. 0 forbids the stack."};
inline constexpr StackOption kMaxStackBytes{
    "max_stack_bytes", "tvm_memplan.max_stack_bytes", "feature.max_stack_bytes", std::nullopt,
    "Bytes all stack allocations of one function may take together; the largest are moved to "
    "the workspace until the rest fit. Unset: no budget."};
inline constexpr const StackOption* kStackOptions[] = {&kMaxStackAlloca, &kMaxStackBytes};

/*! \brief Where a resolved value came from. */
enum class LimitSource { kPassContext, kTarget, kTargetKind, kDefault };

/*! \brief An option's value for one target and pass context. */
struct ResolvedLimit {
  const StackOption* option;
  /*! \brief nullopt: unlimited. */
  std::optional<int64_t> bytes;
  LimitSource source;
  /*! \brief "max_stack_alloca 1024 (TVM default)", for decision reasons and errors. */
  std::string Describe() const;
};

/*! \brief The stack facts of a target, as the placement analysis consumes them. */
struct StackLimits {
  ResolvedLimit max_stack_alloca;
  ResolvedLimit max_stack_bytes;
  /*! \brief The target kind's default device type; nullopt without a target. */
  std::optional<int64_t> device_type;
  /*! \brief The code generator takes an allocation left to it (`disable_lower_builtin`) only in
   *         storage scope "global": the C backend. */
  bool unlowered_needs_global_scope = false;
};

/*! \brief Whether `target` (a tvm.target.Target) has the given key ("cpu", "gpu", ...). */
bool TargetHasKey(const ffi::ObjectRef& target, const char* key);
/*! \brief The default device type of the target's kind. */
int64_t TargetDeviceType(const ffi::ObjectRef& target);

/*!
 * \brief The limits for `target` (a null ref: no target, only the PassContext and the defaults
 *        apply) under `pass_context`. Throws ValueError for a value that is not an integer >= 0,
 *        naming the level that holds it.
 */
StackLimits ResolveStackLimits(const ffi::ObjectRef& target, const ffi::ObjectRef& pass_context);

/*!
 * \brief Register both options as PassContext options and `max_stack_alloca` = 1024 as an
 *        attribute of the CPU target kinds. Called once when the package is imported.
 */
void RegisterStackOptions();

/*!
 * \brief Set an option as a target-kind attribute. ValueError when `nbytes` is negative or the
 *        kind does not exist or is not a CPU kind.
 */
void SetKindStackOption(const StackOption& option, const std::string& kind_name, ffi::Any nbytes);

}  // namespace target
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TARGET_STACK_LIMITS_H_
