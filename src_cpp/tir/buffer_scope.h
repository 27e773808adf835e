/*!
 * \file tir/buffer_scope.h
 * \brief Moving buffers to another storage scope. In TVM 0.27 the scope is part of the buffer's
 *        type, so a buffer var is replaced by a new one at its definition and at every use:
 *
 * \code
 *   L = T.alloc_buffer((16,), scope="local")         L = T.alloc_buffer((16,))
 *   V = T.decl_buffer((4, 4), data=L.data,    ->     V = T.decl_buffer((4, 4), data=L.data)
 *                     scope="local")                 # L.data: T.handle("float32", "global")
 * \endcode
 *
 * Views declared over a moved buffer in its old scope move with it (they are the same memory),
 * and `B.data` is rebuilt so that its pointer type carries the new scope.
 */
#ifndef TVM_MEMPLAN_TIR_BUFFER_SCOPE_H_
#define TVM_MEMPLAN_TIR_BUFFER_SCOPE_H_

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/rewriter.h"
#include "ir/tir.h"

namespace tvm_memplan {
namespace tir {

/*! \brief A buffer and the scope it should move to. */
using ScopeChange = std::pair<ir::Buffer, std::string>;

/*!
 * \brief The scope changes for one statement, views included, ready to run as part of a
 *        Rewriter (so that other hooks share the walk).
 */
class ScopeChanges {
 public:
  ScopeChanges(const ffi::ObjectRef& stmt, const std::vector<ScopeChange>& changes);

  bool empty() const { return replacements_.empty(); }
  /*! \brief The var that replaces `buffer`, or `buffer` when it does not move. */
  ir::Buffer Moved(const ir::Buffer& buffer) const;
  /*! \brief Add the var replacements and the rebuilding of `B.data` to `rewriter`. */
  void AddTo(ir::Rewriter* rewriter) const;

 private:
  /*! \brief (old buffer var, the var that replaces it), views included. */
  std::vector<std::pair<ir::Buffer, ir::Buffer>> replacements_;
  std::unordered_map<const ffi::Object*, ir::Buffer> moved_;     // by old var
  std::unordered_map<const ffi::Object*, ir::Buffer> new_vars_;  // by new var
};

/*! \brief `stmt` with each buffer of `changes` (and its views) in its new scope. */
ffi::ObjectRef ChangeBufferScopes(const ffi::ObjectRef& stmt,
                                  const std::vector<ScopeChange>& changes);

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_BUFFER_SCOPE_H_
