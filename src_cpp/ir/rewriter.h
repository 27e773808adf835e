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
    AddHook(&View::Type(), &View::Matches,
            [hook](const ObjectRef& node) -> ObjectRef { return hook(View(node)); });
    return *this;
  }

  /*!
   * \brief Do not descend into expressions: for hooks on statements only, which then cost a walk
   *        over the statements (ForEachChildStmt's). Not with RemapVar (the uses of a var are in
   *        expressions).
   */
  Rewriter& SkipExpressions();

  /*! \brief Rewrite `root`; returns `root` itself when nothing changed. */
  ObjectRef operator()(const ObjectRef& root) const;

 private:
  static constexpr size_t kMaxHooks = 63;
  struct PostOrderHook {
    /*! \brief The view's type: a node of another type never matches, so is never asked. */
    const TypeKey* type;
    bool (*matches)(const ObjectRef&);
    Hook rewrite;
  };
  void AddHook(const TypeKey* type, bool (*matches)(const ObjectRef&), Hook rewrite);
  /*! \brief Bit i: hook i can match nodes of `type_index` (its view's type is an ancestor). */
  uint64_t HooksFor(int32_t type_index) const;
  /*! \brief The hooks that match, in the order they were added, each on the last one's result. */
  ObjectRef ApplyHooks(ObjectRef node) const;
  /*! \brief SkipExpressions: from statement to statement, hooks after the child statements. */
  ObjectRef RewriteStatement(const ObjectRef& stmt) const;

  std::unordered_map<const Object*, ObjectRef> var_map_;
  std::vector<ObjectRef> keep_alive_;  // the remapped vars, so their addresses stay unique
  std::vector<PostOrderHook> hooks_;
  /*! \brief HooksFor by type index, computed on first sight (bit kMaxHooks: computed). */
  mutable std::vector<uint64_t> hook_masks_;
  bool skip_expressions_ = false;
};

/*! \brief `expr` with each var of `var_map` replaced by its value. */
ObjectRef Substitute(const ObjectRef& expr, const Map<ObjectRef, ObjectRef>& var_map);

}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_REWRITER_H_
