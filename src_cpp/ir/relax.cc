/*!
 * \file ir/relax.cc
 * \brief Relax views. Updates are shallow copies: the relax.SeqExpr constructor would leave the
 *        expression's type missing, while a copy keeps the (still valid) normalized type.
 */
#include "ir/relax.h"

#include <tvm/ffi/extra/structural_equal.h>

#include "ir/analyzer.h"
#include "ir/tir.h"

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

If If::WithBranches(const ObjectRef& true_branch, const ObjectRef& false_branch) const {
  return If(WithFields(ref_, {{&field::RelaxIf_true_branch, true_branch},
                              {&field::RelaxIf_false_branch, false_branch}}));
}

Tuple Tuple::WithFields(const Array<ObjectRef>& fields) const {
  return Tuple(ir::WithFields(ref_, {{&field::Tuple_fields, fields}}));
}

namespace {

SeqExpr RebindSeq(const SeqExpr& seq, const Rebind& rebind) {
  Array<ObjectRef> blocks;
  for (const ObjectRef& item : seq.blocks()) {
    BindingBlock block(item);
    Array<ObjectRef> bindings;
    for (const ObjectRef& b : block.bindings()) {
      Binding binding(b);
      std::optional<If> branch = As<If>(binding.value());
      if (!branch) {
        rebind(binding, &bindings);
        continue;
      }
      auto rewritten = [&](const ObjectRef& body) {
        std::optional<SeqExpr> inner = As<SeqExpr>(body);
        return inner ? RebindSeq(*inner, rebind).ref() : body;
      };
      bindings.push_back(binding
                             .WithValue(branch->WithBranches(rewritten(branch->true_branch()),
                                                             rewritten(branch->false_branch())))
                             .ref());
    }
    blocks.push_back(block.WithBindings(bindings).ref());
  }
  return seq.WithBlocks(blocks);
}

}  // namespace

Function RebindEach(const Function& func, const Rebind& rebind) {
  return func.WithBody(RebindSeq(SeqExpr(func.body(), "Function.body"), rebind).ref());
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

std::optional<int64_t> TensorType::static_bytes() const {
  std::optional<Array<ObjectRef>> extents = shape();
  std::optional<DLDataType> type = dtype();
  if (!extents || !type || !static_shape()) return std::nullopt;
  return AllocatedBytes(*extents, {}, *type);
}

std::optional<ObjectRef> TensorType::bytes_expr() const {
  std::optional<Array<ObjectRef>> extents = shape();
  std::optional<DLDataType> type = dtype();
  if (!extents || !type) return std::nullopt;
  return AllocatedBytesExpr(*extents, {}, *type);
}

bool Function::plans_dynamic_output() const {
  std::optional<Any> marked = FuncAttr(ref_, schema::attr::MemoryPlanDynamicFuncOutput);
  return marked && marked->cast<bool>();
}

ObjectRef TypeOf(const ObjectRef& expr) { return ExprType(expr); }
bool IsFuncType(const ObjectRef& type) { return schema::type::FuncType.IsInstance(type); }

bool HoldsNoStorage(const ObjectRef& type) {
  return schema::type::PrimType.IsInstance(type) || schema::type::ShapeType.IsInstance(type);
}

bool SameShapeAndDType(const TensorType& a, const TensorType& b) {
  std::optional<DLDataType> dtype_a = a.dtype(), dtype_b = b.dtype();
  if (!dtype_a || !dtype_b || *dtype_a != *dtype_b) return false;
  std::optional<Array<ObjectRef>> shape_a = a.shape(), shape_b = b.shape();
  if (!shape_a || !shape_b || shape_a->size() != shape_b->size()) return false;
  if (ffi::StructuralEqual::Equal(*shape_a, *shape_b)) return true;
  // Symbolic extents: equal when the analyzer proves it (`n * 2` and `2 * n`).
  Analyzer analyzer;
  for (size_t i = 0; i < shape_a->size(); ++i) {
    if (!analyzer.CanProveEqual((*shape_a)[i], (*shape_b)[i])) return false;
  }
  return true;
}

ObjectRef MakeTuple(const Array<ObjectRef>& fields) {
  return func::MakeTuple(fields, nullptr).cast<ObjectRef>();
}

std::vector<int64_t> InplaceIndices(const Call& call) {
  std::vector<int64_t> indices;
  Any attrs = call.attrs();
  if (attrs == nullptr || !type::CallTIRInplaceAttrs.IsInstance(attrs)) return indices;
  for (int64_t index :
       field::CallTIRInplaceAttrs_inplace_indices.Get<Array<int64_t>>(attrs.cast<ObjectRef>())) {
    indices.push_back(index);
  }
  return indices;
}

ObjectRef MakeCallTIRInplace(const ObjectRef& prim_func_var, const Tuple& args,
                             const std::vector<int64_t>& indices,
                             const Array<ObjectRef>& out_types) {
  Array<int64_t> index_array(indices.begin(), indices.end());
  return func::MakeCallTIRInplace(prim_func_var, args.ref(), index_array, out_types)
      .cast<ObjectRef>();
}

ObjectRef MakeNullValue() {
  return MakeTypedCall(AnyType(), GetOp(schema::op::NullValue), {}).ref();
}

namespace {
// MatchShapeCode::kAssertEqualToImm of the VM's match_shape (tvm/runtime/vm/builtin.h, a runtime
// header of the apache-tvm wheel; tests/ir/test_schema.py holds this value to it).
constexpr int64_t kAssertEqualToImm = 0;
}  // namespace

ObjectRef MakeShapeCheck(const Array<ObjectRef>& values, const std::vector<int64_t>& expected,
                         const ObjectRef& none, const std::string& message) {
  TVM_FFI_ICHECK_EQ(values.size(), expected.size()) << "internal error: one value per expectation";
  Array<ObjectRef> args{MakeShapeExpr(values), none,
                        IntConst(kInt64, static_cast<int64_t>(values.size()))};
  for (int64_t value : expected) {
    args.push_back(IntConst(kInt64, kAssertEqualToImm));
    args.push_back(IntConst(kInt64, value));
  }
  args.push_back(StringConst(message));
  return MakePackedCall(schema::func::VMBuiltinMatchShape.name(), args).ref();
}

Any OpAttr(const ObjectRef& op, const char* key) { return func::OpGetAttr(op, String(key)); }

std::map<std::string, int64_t> IntAttrMap(const Function& func, const std::string& function,
                                          const char* key) {
  std::map<std::string, int64_t> out;
  std::optional<Any> attr = FuncAttr(func.ref(), key);
  if (!attr || *attr == nullptr) return out;
  std::optional<Map<String, Any>> entries = attr->try_cast<Map<String, Any>>();
  if (!entries) {
    TVM_FFI_THROW(TypeError) << "function " << Quoted(function) << ": " << key
                             << " must map shape variable names to integers, got "
                             << ToString(*attr);
  }
  for (const auto& [name, value] : *entries) {
    std::optional<int64_t> bound;
    if (value.type_index() == ffi::TypeIndex::kTVMFFIInt) {
      bound = value.cast<int64_t>();
    } else if (value.as<ffi::Object>() != nullptr) {
      bound = AsConstInt(value.cast<ObjectRef>());
    }
    if (!bound) {
      TVM_FFI_THROW(TypeError) << "function " << Quoted(function) << ": " << key << "[\""
                               << std::string(name) << "\"] must be an integer, got "
                               << ToString(value);
    }
    out[std::string(name)] = *bound;
  }
  return out;
}

Call MakeTypedCall(const ObjectRef& type, const ObjectRef& op, const Array<ObjectRef>& args,
                   const Array<ObjectRef>& ty_args) {
  return Call(func::MakeCall(type, op, args, nullptr, ty_args, nullptr).cast<ObjectRef>());
}

Call MakePackedCall(const std::string& symbol, const Array<ObjectRef>& args) {
  ObjectRef callee = func::MakeExternFunc(String(symbol), nullptr, nullptr).cast<ObjectRef>();
  ObjectRef unit = func::MakeTupleType(Array<ObjectRef>{}, nullptr).cast<ObjectRef>();
  return MakeTypedCall(unit, callee, args, Array<ObjectRef>{unit});
}

ObjectRef GetOp(const char* name) { return func::GetOp(String(name)).cast<ObjectRef>(); }

Var MakeVar(const std::string& name, const ObjectRef& type) {
  return Var(func::MakeVar(String(name), type, nullptr).cast<ObjectRef>());
}

Binding MakeVarBinding(const Var& var, const ObjectRef& value) {
  return Binding(func::MakeVarBinding(var.ref(), value, nullptr).cast<ObjectRef>());
}

BindingBlock MakeBindingBlock(const Array<ObjectRef>& bindings) {
  return BindingBlock(func::MakeBindingBlock(bindings, nullptr).cast<ObjectRef>());
}

ObjectRef MakeShapeExpr(const Array<ObjectRef>& values) {
  return func::MakeShapeExpr(values, nullptr).cast<ObjectRef>();
}

ObjectRef AnyType() { return func::MakeAnyType(nullptr).cast<ObjectRef>(); }

ObjectRef MakeDataTypeConst(DLDataType dtype) {
  return func::MakeGenericConst(dtype, AnyType(), nullptr).cast<ObjectRef>();
}

BlockBuilder::BlockBuilder(const ObjectRef& context)
    : self_(func::BlockBuilderCreate(context.defined() ? Any(context) : Any()).cast<ObjectRef>()) {}

void BlockBuilder::BeginBlock(bool dataflow) {
  if (dataflow) {
    func::BlockBuilderBeginDataflowBlock(self_);
  } else {
    func::BlockBuilderBeginBindingBlock(self_);
  }
}

BindingBlock BlockBuilder::EndBlock() {
  return BindingBlock(func::BlockBuilderEndBlock(self_).cast<ObjectRef>());
}

ObjectRef BlockBuilder::Normalize(const ObjectRef& expr) {
  return func::BlockBuilderNormalize(self_, expr).cast<ObjectRef>();
}

ObjectRef BlockBuilder::AddFunction(const ObjectRef& func, const std::string& name_hint) {
  return func::BlockBuilderAddFunction(self_, func, String(name_hint)).cast<ObjectRef>();
}

IRModule BlockBuilder::ContextModule() const {
  return IRModule(func::BlockBuilderGetContextIRModule(self_).cast<ObjectRef>());
}

bool IsConstant(const ObjectRef& expr) { return type::Constant.IsInstance(expr); }

bool IsDataflowVar(const ObjectRef& expr) { return type::DataflowVar.IsInstance(expr); }

bool IsExternFunc(const ObjectRef& expr) { return type::ExternFunc.IsInstance(expr); }

std::optional<std::string> ExternFuncSymbol(const ObjectRef& expr) {
  if (!IsExternFunc(expr)) return std::nullopt;
  return std::string(field::ExternFunc_global_symbol.Get<String>(expr));
}

}  // namespace relax
}  // namespace ir
}  // namespace tvm_memplan
