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

#include <functional>
#include <map>
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
  /*! \brief The declared return type. */
  ObjectRef ret_type() const { return schema::field::RelaxFunction_ret_ty.Get<ObjectRef>(ref_); }
  bool is_pure() const { return schema::field::RelaxFunction_is_pure.Get<bool>(ref_); }
  /*! \brief Whether `relax.memory_plan_dynamic_func_output` is set (MLC-LLM's
   *         AttachMemoryPlanAttr): TVM's planner then allocates its unplanned tensors of symbolic
   *         shape at their bounds. */
  bool plans_dynamic_output() const;
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

/*! \brief relax.If: `if cond: true_branch else: false_branch`, each branch a SeqExpr. */
class If : public NodeView {
  TVM_MEMPLAN_VIEW(If, schema::type::RelaxIf)
  ObjectRef cond() const { return schema::field::RelaxIf_cond.Get<ObjectRef>(ref_); }
  ObjectRef true_branch() const { return schema::field::RelaxIf_true_branch.Get<ObjectRef>(ref_); }
  ObjectRef false_branch() const {
    return schema::field::RelaxIf_false_branch.Get<ObjectRef>(ref_);
  }
  If WithBranches(const ObjectRef& true_branch, const ObjectRef& false_branch) const;
};

class Tuple : public NodeView {
  TVM_MEMPLAN_VIEW(Tuple, schema::type::Tuple)
  Array<ObjectRef> fields() const {
    return schema::field::Tuple_fields.Get<Array<ObjectRef>>(ref_);
  }
  /*! \brief The same tuple (and type) with other fields of the same types. */
  Tuple WithFields(const Array<ObjectRef>& fields) const;
};

class TupleGetItem : public NodeView {
  TVM_MEMPLAN_VIEW(TupleGetItem, schema::type::TupleGetItem)
  ObjectRef tuple() const { return schema::field::TupleGetItem_tuple_value.Get<ObjectRef>(ref_); }
  int64_t index() const { return schema::field::TupleGetItem_index.Get<int64_t>(ref_); }
};

/*! \brief relax.ShapeExpr: `R.shape([values...])`. */
class ShapeExpr : public NodeView {
  TVM_MEMPLAN_VIEW(ShapeExpr, schema::type::ShapeExpr)
  Array<ObjectRef> values() const {
    return schema::field::ShapeExpr_values.Get<Array<ObjectRef>>(ref_);
  }
};

/*! \brief The symbol of a relax.ExternFunc (a packed function called by name), or nullopt. */
std::optional<std::string> ExternFuncSymbol(const ObjectRef& expr);

/*! \brief relax.TensorType: a tensor's dtype and (possibly unknown) shape. */
class TensorType : public NodeView {
  TVM_MEMPLAN_VIEW(TensorType, schema::type::TensorType)
  /*! \brief The dtype, or nullopt when unknown. */
  std::optional<DLDataType> dtype() const;
  /*! \brief The shape's extents when the shape is a known ShapeExpr. */
  std::optional<Array<ObjectRef>> shape() const;
  /*! \brief The shape as integers when every extent is a constant. */
  std::optional<std::vector<int64_t>> static_shape() const;
  /*! \brief Its bytes (ir::AllocatedBytes) when shape and dtype are static. */
  std::optional<int64_t> static_bytes() const;
  /*! \brief Its bytes as an int64 expression of the shape's variables (an IntImm when
   *         static), when shape and dtype are known. */
  std::optional<ObjectRef> bytes_expr() const;
};

/*! \brief ir.TupleType: the type of a tuple value. */
class TupleType : public NodeView {
  TVM_MEMPLAN_VIEW(TupleType, schema::type::TupleType)
  Array<ObjectRef> fields() const {
    return schema::field::TupleType_fields.Get<Array<ObjectRef>>(ref_);
  }
};

/*! \brief The type of a Relax expression (its `ty` field). */
ObjectRef TypeOf(const ObjectRef& expr);
/*! \brief Whether `type` is a relax.FuncType: a GlobalVar has one where the parser or a
 *         BlockBuilder added its function (`IRModule({gv: func})` leaves it untyped), and
 *         call_tir needs one of its callee. */
bool IsFuncType(const ObjectRef& type);

/*! \brief Whether a value of `type` holds no storage: a scalar (ir.PrimType) or a shape
 *         (relax.ShapeType). */
bool HoldsNoStorage(const ObjectRef& type);

/*! \brief Whether two tensor types have the same known dtype and provably equal known shapes. */
bool SameShapeAndDType(const TensorType& a, const TensorType& b);

/*! \brief A tuple expression `(fields...)`, not yet normalized. */
ObjectRef MakeTuple(const Array<ObjectRef>& fields);

/*! \brief `inplace_indices` of a `relax.call_tir_inplace` call: output i aliases argument
 *         `indices[i]` of the argument tuple (-1: a fresh output). */
std::vector<int64_t> InplaceIndices(const Call& call);

/*!
 * \brief `R.call_tir_inplace(prim_func, args, inplace_indices=indices, out_ty=out_types)`,
 *        not yet normalized.
 */
ObjectRef MakeCallTIRInplace(const ObjectRef& prim_func_var, const Tuple& args,
                             const std::vector<int64_t>& indices,
                             const Array<ObjectRef>& out_types);

/*! \brief `R.null_value()`, a null object (what a packed function's optional argument takes). */
ObjectRef MakeNullValue();

/*!
 * \brief A check at run time that each of `values` (int64 expressions of shape variables)
 *        equals the same entry of `expected`: `R.call_packed("vm.builtin.match_shape",
 *        R.shape(values), none, len(values), kAssertEqualToImm, expected[0], ..., message)`, with
 *        `none` a variable bound to `R.null_value()` (the builtin's shape heap, which these checks
 *        do not read). On a mismatch the VM raises "Check failed: input_shape[i] == reg (value vs.
 *        expected) : <message> ...".
 *
 * It is the VM's own builtin, the one VMShapeLower emits for `match_cast`: every runtime has it,
 * without Python. And RewriteCUDAGraph never lifts a `vm.builtin` call into a captured graph, so
 * the check runs on every call, also where the calls around it replay a graph.
 */
ObjectRef MakeShapeCheck(const Array<ObjectRef>& values, const std::vector<int64_t>& expected,
                         const ObjectRef& none, const std::string& message);

/*! \brief `op(args...)` with its type already set to `type`, so it needs no normalization (for
 *         calls whose type is known, such as memory operators). */
Call MakeTypedCall(const ObjectRef& type, const ObjectRef& op, const Array<ObjectRef>& args,
                   const Array<ObjectRef>& ty_args = {});
/*! \brief `R.call_packed(symbol, args...)` returning nothing (a destination-passing packed
 *         function, as CallTIRRewrite lowers `call_dps_packed`). */
Call MakePackedCall(const std::string& symbol, const Array<ObjectRef>& args);
/*! \brief The ir.Op named `name` (TVM's registry; a ValueError when there is none). */
ObjectRef GetOp(const char* name);
/*! \brief A new relax variable. */
Var MakeVar(const std::string& name, const ObjectRef& type);
/*! \brief `var = value`. */
Binding MakeVarBinding(const Var& var, const ObjectRef& value);
/*! \brief A (non-dataflow) binding block. */
BindingBlock MakeBindingBlock(const Array<ObjectRef>& bindings);
/*! \brief `R.shape([values...])`. */
ObjectRef MakeShapeExpr(const Array<ObjectRef>& values);
/*! \brief `R.dtype("...")`, a data type as a Relax argument. */
ObjectRef MakeDataTypeConst(DLDataType dtype);
/*! \brief relax.AnyType, the type of a storage object. */
ObjectRef AnyType();

/*! \brief An operator attribute (`ir.OpGetAttr`), or None when the operator does not set it. */
Any OpAttr(const ObjectRef& op, const char* key);

/*! \brief An integer attribute map of `func` such as `tir_var_upper_bound` (name -> value),
 *         empty when unset; a value that is not an integer is a TypeError naming `function`,
 *         the attribute and the variable. */
std::map<std::string, int64_t> IntAttrMap(const Function& func, const std::string& function,
                                          const char* key);

/*! \brief What a rewrite makes of one binding: it appends its replacements (none, itself, or
 *         several bindings) to `out`. */
using Rebind = std::function<void(const Binding& binding, Array<ObjectRef>* out)>;

/*!
 * \brief `func` with every binding replaced by what `rebind` appends for it, in every binding
 *        block, inside `if` branches too (an `if` binding itself keeps its place, with its
 *        branches rewritten).
 */
Function RebindEach(const Function& func, const Rebind& rebind);

/*!
 * \brief A relax.BlockBuilder: normalizes expressions, collects emitted bindings and adds
 *        functions (deduplicated, with unique names) to its context module.
 *
 * \code
 *   BlockBuilder builder(module);
 *   builder.BeginBlock(/\*dataflow=*\/true);
 *   ObjectRef legal = flegalize(builder.ref(), call);     // may emit bindings
 *   BindingBlock emitted = builder.EndBlock();
 *   ObjectRef gv = builder.AddFunction(prim_func, "add_inplace");
 * \endcode
 */
class BlockBuilder {
 public:
  /*! \brief A builder over `context` (an ir.IRModule), or over an empty module when null. */
  explicit BlockBuilder(const ObjectRef& context = ObjectRef());
  const ObjectRef& ref() const { return self_; }
  void BeginBlock(bool dataflow);
  BindingBlock EndBlock();
  ObjectRef Normalize(const ObjectRef& expr);
  /*! \brief The GlobalVar of `func` in the context module (an existing one if equal). */
  ObjectRef AddFunction(const ObjectRef& func, const std::string& name_hint);
  IRModule ContextModule() const;

 private:
  ObjectRef self_;
};

/*! \brief Whether `expr` is a constant (R.const builds an ir.GenericConst). */
bool IsConstant(const ObjectRef& expr);
/*! \brief Whether `expr` is a relax.DataflowVar (a var local to its dataflow block). */
bool IsDataflowVar(const ObjectRef& expr);
/*! \brief Whether `expr` is a relax.ExternFunc (a packed function called by name). */
bool IsExternFunc(const ObjectRef& expr);

}  // namespace relax
}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_RELAX_H_
