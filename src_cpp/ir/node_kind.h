/*!
 * \file ir/node_kind.h
 * \brief What a traversal needs to know about a node's type, in one table lookup: whether it can
 *        hold a use of a variable, and whether it is a statement, an expression or a leaf.
 *
 * \code
 *   switch (NodeKindOf(value.type_index())) {
 *     case NodeKind::kOpaque:   return;           // types, ops, PODs: nothing to visit
 *     case NodeKind::kVar:      OnVar(value); return;
 *     case NodeKind::kConstant: return;           // 1, 2.5f, "text": no var inside
 *     default:                  descend(value);   // other expressions, statements, containers
 *   }
 * \endcode
 *
 * Walks ask these questions for every node they meet, millions of times per pass; asking TVM's
 * type table each time (TypeKey::IsInstance per question) costs more than the walk itself. The
 * answer for a type index is computed once per process and kept.
 */
#ifndef TVM_MEMPLAN_IR_NODE_KIND_H_
#define TVM_MEMPLAN_IR_NODE_KIND_H_

#include <tvm/ffi/base_detail.h>

#include <atomic>
#include <cstdint>

namespace tvm_memplan {
namespace ir {

enum class NodeKind : uint8_t {
  /*! \brief Holds no variable and is never rewritten: a POD or None, an ir.Type, an ir.Op. */
  kOpaque = 1,
  /*! \brief An ir.Var (a buffer is one too). */
  kVar,
  /*! \brief ir.IntImm, ir.FloatImm, ir.StringImm: an expression with no expression inside. */
  kConstant,
  /*! \brief Any other ir.Expr. */
  kExpr,
  /*! \brief A tirx.Stmt (s_tir blocks included). */
  kStmt,
  /*! \brief ffi.Array. */
  kArray,
  /*! \brief Anything else: maps, ranges, iter vars, ... (functions are ir.Exprs in 0.27) */
  kOther,
};

/*! \brief The kind of nodes of `type_index` (any runtime type index, PODs included). */
NodeKind NodeKindOf(int32_t type_index);

/*!
 * \brief `compute(type_index)`, computed once per process and type index: for the questions
 *        walks ask of every node (NodeKindOf, tir's StmtShapeOf). `Answer` is a one-byte enum
 *        whose 0 no answer takes (it marks "not computed yet").
 */
template <typename Answer, Answer (*compute)(int32_t)>
Answer MemoizedByTypeIndex(int32_t type_index) {
  // Type indices are small and dense (a few thousand after `import tvm`).
  constexpr int32_t kTableSize = 1 << 14;
  static std::atomic<uint8_t> table[kTableSize] = {};
  if (type_index < 0 || type_index >= kTableSize) return compute(type_index);
  uint8_t known = table[type_index].load(std::memory_order_relaxed);
  if (TVM_FFI_PREDICT_TRUE(known != 0)) return static_cast<Answer>(known);
  Answer answer = compute(type_index);
  table[type_index].store(static_cast<uint8_t>(answer), std::memory_order_relaxed);
  return answer;
}

}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_NODE_KIND_H_
