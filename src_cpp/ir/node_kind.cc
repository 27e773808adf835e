/*!
 * \file ir/node_kind.cc
 * \brief NodeKindOf: the type table's answers, computed once per type index.
 */
#include "ir/node_kind.h"

#include "ir/schema.h"

namespace tvm_memplan {
namespace ir {

namespace {

NodeKind ComputeNodeKind(int32_t type_index) {
  using namespace schema;
  if (type_index < ffi::TypeIndex::kTVMFFIStaticObjectBegin) return NodeKind::kOpaque;
  if (type_index == ffi::TypeIndex::kTVMFFIArray) return NodeKind::kArray;
  if (type::Var.IsInstance(type_index)) return NodeKind::kVar;
  if (type::Type.IsInstance(type_index) || type::Op.IsInstance(type_index)) {
    return NodeKind::kOpaque;
  }
  if (type::IntImm.IsInstance(type_index) || type::FloatImm.IsInstance(type_index) ||
      type::StringImm.IsInstance(type_index)) {
    return NodeKind::kConstant;
  }
  if (type::Expr.IsInstance(type_index)) return NodeKind::kExpr;
  if (type::Stmt.IsInstance(type_index)) return NodeKind::kStmt;
  return NodeKind::kOther;
}

}  // namespace

NodeKind NodeKindOf(int32_t type_index) {
  return MemoizedByTypeIndex<NodeKind, ComputeNodeKind>(type_index);
}

}  // namespace ir
}  // namespace tvm_memplan
