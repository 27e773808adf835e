/*!
 * \file ir/expr.cc
 * \brief Scalar expression helpers on TVM's registered operator overloads.
 */
#include "ir/expr.h"

#include "ir/schema.h"

namespace tvm_memplan {
namespace ir {

using namespace schema;

namespace {
ObjectRef Binary(const GlobalFunc& op, const ObjectRef& a, const ObjectRef& b) {
  return op(a, b, nullptr).cast<ObjectRef>();
}
}  // namespace

bool IsPrimExpr(const ObjectRef& expr) {
  if (!type::Expr.IsInstance(expr)) return false;
  return type::PrimType.IsInstance(field::Expr_ty.Get(expr));
}

DLDataType DTypeOf(const ObjectRef& expr) {
  ObjectRef ty = field::Expr_ty.Get<ObjectRef>(expr);
  if (!type::PrimType.IsInstance(ty)) {
    TVM_FFI_THROW(TypeError) << "expected a scalar expression, got `" << ToString(expr)
                             << "` of type `" << TypeKeyOf(ty) << "`";
  }
  return field::PrimType_dtype.Get<DLDataType>(ty);
}

std::optional<int64_t> AsConstInt(const ObjectRef& expr) {
  if (!type::IntImm.IsInstance(expr)) return std::nullopt;
  // IntImm.value is a BigInt in 0.27; values that do not fit int64 are not constants to us.
  return field::IntImm_value.Get(expr).try_cast<int64_t>();
}

ObjectRef IntConst(DLDataType dtype, int64_t value) {
  return func::MakeIntImm(dtype, value, nullptr).cast<ObjectRef>();
}

ObjectRef IntConst(const ObjectRef& like, int64_t value) { return IntConst(DTypeOf(like), value); }

ObjectRef BoolConst(bool value) { return IntConst(DLDataType{kDLBool, 1, 1}, value ? 1 : 0); }

ObjectRef StringConst(const std::string& value) {
  return func::MakeStringImm(String(value), nullptr).cast<ObjectRef>();
}

ObjectRef Add(const ObjectRef& a, const ObjectRef& b) { return Binary(func::OpAdd, a, b); }
ObjectRef Sub(const ObjectRef& a, const ObjectRef& b) { return Binary(func::OpSub, a, b); }
ObjectRef Mul(const ObjectRef& a, const ObjectRef& b) { return Binary(func::OpMul, a, b); }
ObjectRef FloorDiv(const ObjectRef& a, const ObjectRef& b) {
  return Binary(func::OpFloorDiv, a, b);
}
ObjectRef FloorMod(const ObjectRef& a, const ObjectRef& b) {
  return Binary(func::OpFloorMod, a, b);
}
ObjectRef Min(const ObjectRef& a, const ObjectRef& b) { return Binary(func::OpMin, a, b); }
ObjectRef Max(const ObjectRef& a, const ObjectRef& b) { return Binary(func::OpMax, a, b); }
ObjectRef EQ(const ObjectRef& a, const ObjectRef& b) { return Binary(func::OpEQ, a, b); }
ObjectRef NE(const ObjectRef& a, const ObjectRef& b) { return Binary(func::OpNE, a, b); }
ObjectRef LT(const ObjectRef& a, const ObjectRef& b) { return Binary(func::OpLT, a, b); }
ObjectRef LE(const ObjectRef& a, const ObjectRef& b) { return Binary(func::OpLE, a, b); }
ObjectRef GT(const ObjectRef& a, const ObjectRef& b) { return Binary(func::OpGT, a, b); }
ObjectRef GE(const ObjectRef& a, const ObjectRef& b) { return Binary(func::OpGE, a, b); }
ObjectRef And(const ObjectRef& a, const ObjectRef& b) { return Binary(func::OpAnd, a, b); }
ObjectRef Or(const ObjectRef& a, const ObjectRef& b) { return Binary(func::OpOr, a, b); }

ObjectRef Not(const ObjectRef& a) {
  if (std::optional<int64_t> c = AsConstInt(a)) return BoolConst(*c == 0);
  return func::MakeNot(a, nullptr).cast<ObjectRef>();
}

ObjectRef AsCondition(const ObjectRef& cond) {
  DLDataType dtype = DTypeOf(cond);
  if (dtype.code == kDLBool) return cond;
  return NE(cond, IntConst(dtype, 0));
}

ObjectRef PrimTypeOf(DLDataType dtype) { return func::MakePrimType(dtype).cast<ObjectRef>(); }

ObjectRef CallOp(DLDataType dtype, const char* op_name, const Array<ObjectRef>& args) {
  ObjectRef op = func::GetOp(String(op_name)).cast<ObjectRef>();
  return func::MakeCall(PrimTypeOf(dtype), op, args, nullptr, Array<ObjectRef>{}, nullptr)
      .cast<ObjectRef>();
}

ObjectRef MakeRange(const ObjectRef& min, const ObjectRef& extent) {
  return func::MakeRange(min, extent, nullptr).cast<ObjectRef>();
}

std::string ToString(const AnyView& value) {
  return std::string(func::ReprPrint(value).cast<String>());
}

std::string DTypeToString(DLDataType dtype) { return std::string(ffi::DLDataTypeToString(dtype)); }

int64_t DTypeBytes(DLDataType dtype) {
  int64_t bits = static_cast<int64_t>(dtype.bits) * dtype.lanes;
  if (dtype.code == kDLBool) bits = 8 * static_cast<int64_t>(dtype.lanes);
  return (bits + 7) / 8;
}

}  // namespace ir
}  // namespace tvm_memplan
