/*!
 * \file ir/relax.cc
 * \brief Relax views. Updates are shallow copies: the relax.SeqExpr constructor would leave the
 *        expression's type missing, while a copy keeps the (still valid) normalized type.
 */
#include "ir/relax.h"

namespace tvm_memplan {
namespace ir {
namespace relax {

using namespace schema;

Function Function::WithBody(const ObjectRef& body) const {
  return Function(WithFields(ref_, {{&field::RelaxFunction_body, body}}));
}

SeqExpr SeqExpr::WithBlocks(const Array<ObjectRef>& blocks) const {
  return SeqExpr(WithFields(ref_, {{&field::SeqExpr_blocks, blocks}}));
}

BindingBlock BindingBlock::WithBindings(const Array<ObjectRef>& bindings) const {
  return BindingBlock(WithFields(ref_, {{&field::BindingBlock_bindings, bindings}}));
}

ObjectRef Binding::value() const {
  if (type::MatchCast.IsInstance(ref_)) return field::MatchCast_value.Get<ObjectRef>(ref_);
  return field::VarBinding_value.Get<ObjectRef>(ref_);
}

Binding Binding::WithValue(const ObjectRef& value) const {
  const FieldKey& value_field =
      type::MatchCast.IsInstance(ref_) ? field::MatchCast_value : field::VarBinding_value;
  return Binding(WithFields(ref_, {{&value_field, value}}));
}

std::optional<DLDataType> TensorType::dtype() const {
  Any dtype = field::TensorType_dtype.Get(ref_);
  if (dtype == nullptr) return std::nullopt;
  DLDataType t = field::PrimType_dtype.Get<DLDataType>(dtype.cast<ObjectRef>());
  if (t.bits == 0 && t.lanes == 0) return std::nullopt;  // void: unknown dtype
  return t;
}

std::optional<Array<ObjectRef>> TensorType::shape() const {
  Any shape = field::TensorType_shape.Get(ref_);
  if (shape == nullptr) return std::nullopt;
  ObjectRef expr = shape.cast<ObjectRef>();
  if (!type::ShapeExpr.IsInstance(expr)) return std::nullopt;
  return field::ShapeExpr_values.Get<Array<ObjectRef>>(expr);
}

std::optional<std::vector<int64_t>> TensorType::static_shape() const {
  std::optional<Array<ObjectRef>> extents = shape();
  if (!extents) return std::nullopt;
  std::vector<int64_t> dims;
  for (const ObjectRef& extent : *extents) {
    std::optional<int64_t> value = AsConstInt(extent);
    if (!value) return std::nullopt;
    dims.push_back(*value);
  }
  return dims;
}

bool IsVar(const ObjectRef& expr) { return type::Var.IsInstance(expr); }

bool IsConstant(const ObjectRef& expr) { return type::Constant.IsInstance(expr); }

}  // namespace relax
}  // namespace ir
}  // namespace tvm_memplan
