/*!
 * \file ir/expr.cc
 * \brief Scalar expression helpers on TVM's registered operator overloads.
 */
#include "ir/expr.h"

#include <tvm/ffi/extra/structural_visit.h>
#include <tvm/ffi/reflection/registry.h>

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

bool FuncFlag(const ObjectRef& func, const char* key) {
  std::optional<Any> value = FuncAttr(func, key);
  if (!value || *value == nullptr) return false;
  if (auto flag = value->try_cast<bool>()) return *flag;
  if (auto number = value->try_cast<int64_t>()) return *number != 0;
  if (auto imm = value->try_cast<ObjectRef>()) return AsConstInt(*imm).value_or(0) != 0;
  return false;
}

ObjectRef IntConst(DLDataType dtype, int64_t value) {
  return func::MakeIntImm(dtype, value, nullptr).cast<ObjectRef>();
}

ObjectRef IntConst(const ObjectRef& like, int64_t value) { return IntConst(DTypeOf(like), value); }

bool FitsIn(DLDataType dtype, int64_t value) {
  if (dtype.bits >= 64) return dtype.code != kDLUInt || value >= 0;
  if (dtype.code == kDLUInt || dtype.code == kDLBool) {
    return value >= 0 && value < (int64_t{1} << dtype.bits);
  }
  int64_t limit = int64_t{1} << (dtype.bits - 1);
  return value >= -limit && value < limit;
}

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

ObjectRef MakeScalarVar(const std::string& name, DLDataType dtype) {
  return func::MakeVar(String(name), PrimTypeOf(dtype), nullptr).cast<ObjectRef>();
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

std::optional<BinaryExpr> AsBinary(const ObjectRef& expr) {
  using Kind = BinaryExpr::Kind;
  struct Entry {
    const TypeKey* type;
    const FieldKey* a;
    const FieldKey* b;
    Kind kind;
  };
  static const Entry kEntries[] = {
      {&type::Add, &field::Add_a, &field::Add_b, Kind::kAdd},
      {&type::Sub, &field::Sub_a, &field::Sub_b, Kind::kSub},
      {&type::Mul, &field::Mul_a, &field::Mul_b, Kind::kMul},
      {&type::Min, &field::Min_a, &field::Min_b, Kind::kMin},
      {&type::Max, &field::Max_a, &field::Max_b, Kind::kMax},
      {&type::And, &field::And_a, &field::And_b, Kind::kAnd},
      {&type::Or, &field::Or_a, &field::Or_b, Kind::kOr},
      {&type::LT, &field::LT_a, &field::LT_b, Kind::kLT},
      {&type::LE, &field::LE_a, &field::LE_b, Kind::kLE},
      {&type::GT, &field::GT_a, &field::GT_b, Kind::kGT},
      {&type::GE, &field::GE_a, &field::GE_b, Kind::kGE},
      {&type::EQ, &field::EQ_a, &field::EQ_b, Kind::kEQ},
      {&type::NE, &field::NE_a, &field::NE_b, Kind::kNE},
  };
  if (!expr.defined()) return std::nullopt;
  int32_t index = expr->type_index();
  for (const Entry& e : kEntries) {
    if (e.type->IsInstance(index)) {
      return BinaryExpr{e.kind, e.a->Get<ObjectRef>(expr), e.b->Get<ObjectRef>(expr)};
    }
  }
  return std::nullopt;
}

std::optional<ObjectRef> AsNot(const ObjectRef& expr) {
  if (!type::Not.IsInstance(expr)) return std::nullopt;
  return field::Not_a.Get<ObjectRef>(expr);
}

ObjectRef ExprType(const ObjectRef& expr) { return field::Expr_ty.Get<ObjectRef>(expr); }

Array<Any> IntsWhereConstant(const Array<ObjectRef>& exprs) {
  Array<Any> out;
  for (const ObjectRef& e : exprs) {
    std::optional<int64_t> value = AsConstInt(e);
    out.push_back(value ? Any(*value) : Any(e));
  }
  return out;
}

bool IsStringImm(const ObjectRef& expr) { return type::StringImm.IsInstance(expr); }

std::string StringValue(const ObjectRef& expr, const char* context) {
  if (!type::StringImm.IsInstance(expr)) {
    TVM_FFI_THROW(ValueError) << context << ": expected a string, got `" << TypeKeyOf(expr) << "`";
  }
  return std::string(field::StringImm_value.Get<String>(expr));
}

bool IsVar(const ObjectRef& node) { return type::Var.IsInstance(node); }
bool IsTypeNode(const ObjectRef& node) { return type::Type.IsInstance(node); }
bool IsOpNode(const ObjectRef& node) { return type::Op.IsInstance(node); }
bool IsGlobalVar(const ObjectRef& node) { return type::GlobalVar.IsInstance(node); }
bool IsCallNode(const ObjectRef& node) { return type::Call.IsInstance(node); }
bool IsIntImmNode(const ObjectRef& node) { return type::IntImm.IsInstance(node); }
bool IsLoadNode(const ObjectRef& node) { return type::TensorLoad.IsInstance(node); }

std::unordered_set<const Object*> VarsOf(const ObjectRef& node) {
  std::unordered_set<const Object*> vars;
  if (!node.defined()) return vars;
  ffi::StructuralVisit(
      node,
      [&](const ObjectRef& n, ffi::StructuralVisitorObj* engine) -> Optional<ffi::VisitInterrupt> {
        if (!n.defined()) return std::nullopt;
        if (IsVar(n)) {
          vars.insert(n.get());
          return std::nullopt;
        }
        engine->DefaultVisitExpected(n).value();
        return std::nullopt;
      });
  return vars;
}

TVM_FFI_STATIC_INIT_BLOCK() {
  // The bytes one element of a dtype takes as TVM allocates it: the one count, for Python.
  tvm::ffi::reflection::GlobalDef().def("tvm_memplan.analysis.element_bytes",
                                        [](DLDataType dtype) { return DTypeBytes(dtype); });
}

}  // namespace ir
}  // namespace tvm_memplan
