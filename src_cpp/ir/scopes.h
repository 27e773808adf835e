/*!
 * \file ir/scopes.h
 * \brief TVM's names of storage scopes and thread tags, in one place: the passes compare scopes
 *        and tags against these, never against inline strings.
 *
 * \code
 *   if (buffer.scope() == scope::kGlobal) ...                 // "" is "global" in TVM
 *   if (StartsWith(tag, thread_tag::kThreadIdx)) ...          // "threadIdx.x", ...
 * \endcode
 */
#ifndef TVM_MEMPLAN_IR_SCOPES_H_
#define TVM_MEMPLAN_IR_SCOPES_H_

#include <cstddef>
#include <string>

namespace tvm_memplan {
namespace ir {

/*! \brief Storage scopes (a buffer's `storage_scope`; "" means kGlobal). */
namespace scope {
inline constexpr const char* kGlobal = "global";
inline constexpr const char* kLocal = "local";
inline constexpr const char* kShared = "shared";
inline constexpr const char* kWarp = "warp";
/*! \brief Always on the stack (TVM merges such buffers in StorageRewrite). */
inline constexpr const char* kGlobalStack = "global.stack";
/*! \brief Always through TVMBackendAllocWorkspace. */
inline constexpr const char* kGlobalWorkspace = "global.workspace";
/*! \brief tvm-memplan's own: a `disable_lower_builtin` allocation, kept through StorageRewrite
 *         (which drops annotations but keeps scopes) until LowerTVMBuiltin. */
inline constexpr const char* kMemplanUnlowered = "global.memplan_unlowered";
/*! \brief Prefixes of per-thread fragments and special memories (one copy per thread). */
inline constexpr const char* kFragmentPrefixes[] = {"wmma.",   "m16n8k8.", "metal.",
                                                    "amx.tmm", "texture",  "trn."};
}  // namespace scope

/*! \brief Thread tags of `thread_extent` IterVars (prefixes, followed by x, y or z). */
namespace thread_tag {
inline constexpr const char* kBlockIdx = "blockIdx.";
inline constexpr const char* kThreadIdx = "threadIdx.";
inline constexpr const char* kVThread = "vthread";
inline constexpr const char* kCThread = "cthread";
inline constexpr const char* kClusterCtaIdx = "clusterCtaIdx.";
inline constexpr const char* kPreferredClusterCtaIdx = "preferredClusterCtaIdx.";
}  // namespace thread_tag

/*! \brief Length of a constant string, for prefix arithmetic on the names above. */
constexpr size_t Length(const char* s) { return *s ? 1 + Length(s + 1) : 0; }

/*! \brief Whether `s` begins with `prefix` (one of the names above). */
inline bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_SCOPES_H_
