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

}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_NODE_KIND_H_
