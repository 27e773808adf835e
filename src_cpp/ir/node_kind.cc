/*!
 * \file ir/node_kind.cc
 * \brief NodeKindOf: the type table's answers, computed once per type index.
 */
#include "ir/node_kind.h"

#include <atomic>

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
  // Type indices are small and dense (a few thousand after `import tvm`); 0 = not computed yet.
  constexpr int32_t kTableSize = 1 << 14;
  static std::atomic<uint8_t> table[kTableSize] = {};
  if (type_index < 0 || type_index >= kTableSize) return ComputeNodeKind(type_index);
  uint8_t known = table[type_index].load(std::memory_order_relaxed);
  if (TVM_FFI_PREDICT_TRUE(known != 0)) return static_cast<NodeKind>(known);
  NodeKind kind = ComputeNodeKind(type_index);
  table[type_index].store(static_cast<uint8_t>(kind), std::memory_order_relaxed);
  return kind;
}

}  // namespace ir
}  // namespace tvm_memplan
