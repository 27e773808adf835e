/*!
 * \file ir/relax.h
 * \brief Views over TVM 0.27 Relax: functions, binding blocks, bindings and the expressions
 *        bound in them.
 *
 * \code
 *   # TVMScript                      C++
 *   with R.dataflow():               BindingBlock block;  block.is_dataflow()
 *       y = R.add(x, x)              VarBinding b;  b.var(), Call(b.value()).op_name()
 *       t = (x, y); z = t[0]         Tuple / TupleGetItem views
 * \endcode
 */
#ifndef TVM_MEMPLAN_IR_RELAX_H_
#define TVM_MEMPLAN_IR_RELAX_H_

#include <optional>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "ir/node.h"

namespace tvm_memplan {
namespace ir {
namespace relax {

class Function : public NodeView {
  TVM_MEMPLAN_VIEW(Function, schema::type::RelaxFunction)
  Array<ObjectRef> params() const {
    return schema::field::RelaxFunction_params.Get<Array<ObjectRef>>(ref_);
  }
  ObjectRef body() const { return schema::field::RelaxFunction_body.Get<ObjectRef>(ref_); }
  Function WithBody(const ObjectRef& body) const;
};

/*! \brief relax.SeqExpr: binding blocks followed by the result expression. */
class SeqExpr : public NodeView {
  TVM_MEMPLAN_VIEW(SeqExpr, schema::type::SeqExpr)
  Array<ObjectRef> blocks() const {
    return schema::field::SeqExpr_blocks.Get<Array<ObjectRef>>(ref_);
  }
  ObjectRef body() const { return schema::field::SeqExpr_body.Get<ObjectRef>(ref_); }
  /*! \brief Same result expression, other blocks (the type is kept, see relax.h header). */
  SeqExpr WithBlocks(const Array<ObjectRef>& blocks) const;
};

/*! \brief relax.BindingBlock, or its subclass relax.DataflowBlock. */
class BindingBlock : public NodeView {
  TVM_MEMPLAN_VIEW(BindingBlock, schema::type::BindingBlock)
  Array<ObjectRef> bindings() const {
    return schema::field::BindingBlock_bindings.Get<Array<ObjectRef>>(ref_);
  }
  bool is_dataflow() const { return schema::type::DataflowBlock.IsInstance(ref_); }
  BindingBlock WithBindings(const Array<ObjectRef>& bindings) const;
};

/*! \brief relax.VarBinding (`var = value`) or relax.MatchCast (`var = match_cast(value)`). */
class Binding : public NodeView {
  TVM_MEMPLAN_VIEW(Binding, schema::type::Binding)
  Var var() const { return Var(schema::field::Binding_var.Get<ObjectRef>(ref_)); }
  ObjectRef value() const;
  bool is_match_cast() const { return schema::type::MatchCast.IsInstance(ref_); }
  Binding WithValue(const ObjectRef& value) const;
};

class Tuple : public NodeView {
  TVM_MEMPLAN_VIEW(Tuple, schema::type::Tuple)
  Array<ObjectRef> fields() const {
    return schema::field::Tuple_fields.Get<Array<ObjectRef>>(ref_);
  }
};

class TupleGetItem : public NodeView {
  TVM_MEMPLAN_VIEW(TupleGetItem, schema::type::TupleGetItem)
  ObjectRef tuple() const { return schema::field::TupleGetItem_tuple_value.Get<ObjectRef>(ref_); }
  int64_t index() const { return schema::field::TupleGetItem_index.Get<int64_t>(ref_); }
};

/*! \brief relax.TensorType: a tensor's dtype and (possibly unknown) shape. */
class TensorType : public NodeView {
  TVM_MEMPLAN_VIEW(TensorType, schema::type::TensorType)
  /*! \brief The dtype, or nullopt when unknown. */
  std::optional<DLDataType> dtype() const;
  /*! \brief The shape's extents when the shape is a known ShapeExpr. */
  std::optional<Array<ObjectRef>> shape() const;
  /*! \brief The shape as integers when every extent is a constant. */
  std::optional<std::vector<int64_t>> static_shape() const;
};

/*! \brief Whether `expr` is a Relax variable (relax Var or DataflowVar). */
bool IsVar(const ObjectRef& expr);
/*! \brief Whether `expr` is a constant (R.const builds an ir.GenericConst). */
bool IsConstant(const ObjectRef& expr);

}  // namespace relax
}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_RELAX_H_
