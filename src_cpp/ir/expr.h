/*!
 * \file ir/expr.h
 * \brief Scalar (PrimExpr) helpers: constants, dtypes, and arithmetic through TVM's operator
 *        overloads, so `Add(x, IntConst(x, 0))` folds to `x` exactly as `x + 0` does in Python.
 *
 * \code
 *   ObjectRef extent = Sub(hi, lo);               // folds constants, promotes dtypes
 *   if (std::optional<int64_t> c = AsConstInt(extent)) ...
 *   ObjectRef one = IntConst(extent, 1);          // int constant of extent's dtype
 * \endcode
 */
#ifndef TVM_MEMPLAN_IR_EXPR_H_
#define TVM_MEMPLAN_IR_EXPR_H_

#include <optional>
#include <string>
#include <unordered_set>

#include "ir/node.h"

namespace tvm_memplan {
namespace ir {

/*! \brief The dtypes the core builds constants of: shapes, offsets and sizes are int64; a
 *         storage's element type is uint8. */
inline constexpr DLDataType kInt64{kDLInt, 64, 1};
inline constexpr DLDataType kUInt8{kDLUInt, 8, 1};

/*! \brief The dtype of a scalar expression (its PrimType). */
DLDataType DTypeOf(const ObjectRef& expr);
/*! \brief Whether `expr` is a scalar expression (an ir.Expr whose type is a PrimType). */
bool IsPrimExpr(const ObjectRef& expr);
/*! \brief The value of an integer constant (ir.IntImm), or nullopt. */
std::optional<int64_t> AsConstInt(const ObjectRef& expr);
/*! \brief Whether function attribute `key` of `func` is set and true: a bool, an integer or an
 *         ir.IntImm other than 0 (as TVM writes flags such as `tirx.noalias`). */
bool FuncFlag(const ObjectRef& func, const char* key);
/*! \brief An integer constant of the given dtype. */
ObjectRef IntConst(DLDataType dtype, int64_t value);
/*! \brief Whether `value` is representable in integer type `dtype` (an IntConst of it). */
bool FitsIn(DLDataType dtype, int64_t value);
/*! \brief An integer constant with the dtype of `like`. */
ObjectRef IntConst(const ObjectRef& like, int64_t value);
/*! \brief A boolean constant. */
ObjectRef BoolConst(bool value);
/*! \brief A string constant (ir.StringImm). */
ObjectRef StringConst(const std::string& value);

ObjectRef Add(const ObjectRef& a, const ObjectRef& b);
ObjectRef Sub(const ObjectRef& a, const ObjectRef& b);
ObjectRef Mul(const ObjectRef& a, const ObjectRef& b);
ObjectRef FloorDiv(const ObjectRef& a, const ObjectRef& b);
ObjectRef FloorMod(const ObjectRef& a, const ObjectRef& b);
ObjectRef Min(const ObjectRef& a, const ObjectRef& b);
ObjectRef Max(const ObjectRef& a, const ObjectRef& b);
ObjectRef EQ(const ObjectRef& a, const ObjectRef& b);
ObjectRef NE(const ObjectRef& a, const ObjectRef& b);
ObjectRef LT(const ObjectRef& a, const ObjectRef& b);
ObjectRef LE(const ObjectRef& a, const ObjectRef& b);
ObjectRef GT(const ObjectRef& a, const ObjectRef& b);
ObjectRef GE(const ObjectRef& a, const ObjectRef& b);
ObjectRef And(const ObjectRef& a, const ObjectRef& b);
ObjectRef Or(const ObjectRef& a, const ObjectRef& b);
ObjectRef Not(const ObjectRef& a);

/*!
 * \brief `cond` as a boolean: a non-bool condition such as `if i:` becomes `i != 0`.
 */
ObjectRef AsCondition(const ObjectRef& cond);

/*! \brief The ir.PrimType of `dtype`. */
ObjectRef PrimTypeOf(DLDataType dtype);

/*! \brief A call to operator `op_name` returning `dtype` (e.g. a TIR builtin). */
ObjectRef CallOp(DLDataType dtype, const char* op_name, const Array<ObjectRef>& args);

/*! \brief A fresh scalar variable (a TIR var) of `dtype`. */
ObjectRef MakeScalarVar(const std::string& name, DLDataType dtype);

/*! \brief An ir.Range from `min` and `extent`. */
ObjectRef MakeRange(const ObjectRef& min, const ObjectRef& extent);

/*! \brief ir.Range: `min` and `extent`. */
class Range : public NodeView {
  TVM_MEMPLAN_VIEW(Range, schema::type::Range)
  ObjectRef min() const { return schema::field::Range_min.Get<ObjectRef>(ref_); }
  ObjectRef extent() const { return schema::field::Range_extent.Get<ObjectRef>(ref_); }
};

/*! \brief A binary scalar expression: arithmetic, min/max, logic or comparison. */
struct BinaryExpr {
  enum class Kind { kAdd, kSub, kMul, kMin, kMax, kAnd, kOr, kLT, kLE, kGT, kGE, kEQ, kNE };
  Kind kind;
  ObjectRef a, b;
};

/*! \brief `expr` as a binary expression of one of the kinds above, or nullopt. */
std::optional<BinaryExpr> AsBinary(const ObjectRef& expr);
/*! \brief The operand of a logical `not`, or nullopt. */
std::optional<ObjectRef> AsNot(const ObjectRef& expr);

/*! \brief prim.Ramp: `base + stride * i` for `lanes` lanes. */
class Ramp : public NodeView {
  TVM_MEMPLAN_VIEW(Ramp, schema::type::Ramp)
  ObjectRef base() const { return schema::field::Ramp_base.Get<ObjectRef>(ref_); }
  ObjectRef stride() const { return schema::field::Ramp_stride.Get<ObjectRef>(ref_); }
  ObjectRef lanes() const { return schema::field::Ramp_lanes.Get<ObjectRef>(ref_); }
};

/*! \brief prim.Broadcast: `value` in every lane. */
class Broadcast : public NodeView {
  TVM_MEMPLAN_VIEW(Broadcast, schema::type::Broadcast)
  ObjectRef value() const { return schema::field::Broadcast_value.Get<ObjectRef>(ref_); }
};

/*! \brief Extents as plain integers where constant, expressions where symbolic (for records). */
Array<Any> IntsWhereConstant(const Array<ObjectRef>& exprs);

/*! \brief The type of any expression (its `ty` field). */
ObjectRef ExprType(const ObjectRef& expr);
/*! \brief Whether `expr` is an ir.StringImm. */
bool IsStringImm(const ObjectRef& expr);
/*! \brief The value of an ir.StringImm (a ValueError naming `context` for anything else). */
std::string StringValue(const ObjectRef& expr, const char* context);

/*! \brief What a node is, for walks that only need to tell kinds apart (TIR and Relax share
 *         ir.Var and ir.GlobalVar). */
bool IsVar(const ObjectRef& node);
/*! \brief The variables occurring in `node` (an expression or a type). */
std::unordered_set<const Object*> VarsOf(const ObjectRef& node);
/*! \brief A type (walks do not enter types: they hold no uses). */
bool IsTypeNode(const ObjectRef& node);
bool IsOpNode(const ObjectRef& node);
bool IsGlobalVar(const ObjectRef& node);
bool IsCallNode(const ObjectRef& node);
bool IsIntImmNode(const ObjectRef& node);
/*! \brief A read of memory (ir.TensorLoad: a BufferLoad). */
bool IsLoadNode(const ObjectRef& node);

/*! \brief TVM's printed form of any value, for messages and debugging. */
std::string ToString(const AnyView& value);
/*! \brief `name` in backquotes, as reasons and messages name IR objects. */
inline std::string Quoted(const std::string& name) { return "`" + name + "`"; }

/*! \brief "float32", "int8x4", ... */
std::string DTypeToString(DLDataType dtype);
/*! \brief Bytes one element of `dtype` occupies (bools take one byte, as TVM stores them). */
int64_t DTypeBytes(DLDataType dtype);

}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_EXPR_H_
