/*!
 * \file ir/rewriter.h
 * \brief Post-order rewriting with variable remapping, on the tvm-ffi structural mutate engine.
 *
 * \code
 *   Rewriter rewriter;
 *   rewriter.RemapVar(old_buffer.ref(), new_buffer.ref());   // definition and every use
 *   rewriter.PostOrder<BufferStore>([&](const BufferStore& store) -> ObjectRef {
 *     // children are already rewritten: store.buffer() is new_buffer here
 *     return store.WithAccess(store.buffer(), Shift(store.indices()));
 *   });
 *   ObjectRef new_func = rewriter(func);    // unchanged subtrees are shared, not copied
 * \endcode
 *
 * Variables and types are leaves: a remapped var is replaced whole, and the rewriter does not
 * descend into a var's type (a buffer's shape is part of the buffer, not a use).
 */
#ifndef TVM_MEMPLAN_IR_REWRITER_H_
#define TVM_MEMPLAN_IR_REWRITER_H_

#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/node.h"

namespace tvm_memplan {
namespace ir {

class Rewriter {
 public:
  /*! \brief A hook: the node after its children were rewritten -> its replacement. */
  using Hook = std::function<ObjectRef(const ObjectRef&)>;

  /*! \brief Replace every occurrence of `var` by `replacement` (a var or an expression). */
  Rewriter& RemapVar(const ObjectRef& var, const ObjectRef& replacement);

  /*! \brief Run `hook` on every node viewable as `View`, after its children. */
  template <typename View, typename F>
  Rewriter& PostOrder(F hook) {
    hooks_.emplace_back(&View::Matches,
                        [hook](const ObjectRef& node) -> ObjectRef { return hook(View(node)); });
    return *this;
  }

  /*!
   * \brief Do not descend into expressions: for hooks on statements only, which then cost a walk
   *        over the statements. Not with RemapVar (the uses of a var are in expressions).
   */
  Rewriter& SkipExpressions();

  /*! \brief Rewrite `root`; returns `root` itself when nothing changed. */
  ObjectRef operator()(const ObjectRef& root) const;

 private:
  std::unordered_map<const Object*, ObjectRef> var_map_;
  std::vector<ObjectRef> keep_alive_;  // the remapped vars, so their addresses stay unique
  std::vector<std::pair<bool (*)(const ObjectRef&), Hook>> hooks_;
  bool skip_expressions_ = false;
};

/*! \brief `expr` with each var of `var_map` replaced by its value. */
ObjectRef Substitute(const ObjectRef& expr, const Map<ObjectRef, ObjectRef>& var_map);

}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_REWRITER_H_
