/*!
 * \file ir/node.cc
 * \brief The generic views ir/node.h declares: the view base's type check, calls, operators looked
 *        up by name, global variables, modules and function attributes.
 */
#include "ir/node.h"

#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tvm_memplan {
namespace ir {

using namespace schema;

NodeView::NodeView(ObjectRef ref, const TypeKey& type, const char* context) : ref_(std::move(ref)) {
  if (!type.IsInstance(ref_)) {
    TVM_FFI_THROW(TypeError) << context << ": expected `" << type.key() << "`, got `"
                             << TypeKeyOf(ref_) << "`";
  }
}

// ---- generic nodes ---------------------------------------------------------------------------

std::string OpName(const ObjectRef& op) {
  return type::Op.IsInstance(op) ? std::string(field::Op_name.Get<String>(op)) : std::string();
}

std::string Call::op_name() const { return OpName(op()); }

namespace {
/*! \brief The ir.Op named `name` (a null ref when TVM has none), looked up once per name. */
ObjectRef LookUpOp(const char* name) {
  static std::mutex mutex;
  static std::unordered_map<const char*, ObjectRef> ops;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = ops.find(name);
  if (it != ops.end()) return it->second;
  ObjectRef op;
  try {
    op = func::GetOp(String(name)).cast<ObjectRef>();
  } catch (const ffi::Error&) {
    // Not registered: no call is a call to it.
  }
  return ops.emplace(name, op).first->second;
}

/*!
 * \brief LookUpOp without its lock: passes ask about a handful of operators for every call they
 *        meet. Ops are never freed (LookUpOp's table holds them), so their addresses are kept.
 */
const Object* OpNamed(const char* name) {
  thread_local std::vector<std::pair<const char*, const Object*>> known;
  for (const auto& [known_name, op] : known) {
    if (known_name == name) return op;
  }
  const Object* op = LookUpOp(name).get();
  known.emplace_back(name, op);
  return op;
}
}  // namespace

bool Call::IsOp(const char* name) const {
  const Object* op = OpNamed(name);
  return op != nullptr && this->op().get() == op;
}

Call Call::WithType(const ObjectRef& type) const {
  return Call(WithFields(ref_, {{&field::Expr_ty, type}}));
}

Call Call::WithArgs(const Array<ObjectRef>& args) const {
  return Call(WithFields(ref_, {{&field::Call_args, args}}));
}

std::string GlobalVarName(const ObjectRef& global_var) {
  return field::GlobalVar_name_hint.Get<String>(global_var);
}

IRModule IRModule::WithFunctions(const Map<ObjectRef, ObjectRef>& functions) const {
  // A fresh module: ir.Module_Add/Update mutate in place and would change the caller's module.
  return IRModule(func::MakeIRModule(functions, field::IRModule_attrs.Get(ref_),
                                     field::IRModule_global_infos.Get(ref_))
                      .cast<ObjectRef>());
}

Map<String, Any> FuncAttrs(const ObjectRef& func) {
  Any attrs = field::BaseFunc_attrs.Get(func);
  if (attrs == nullptr) return {};
  return field::DictAttrs___dict__.Get<Map<String, Any>>(attrs.cast<ObjectRef>());
}

std::optional<Any> FuncAttr(const ObjectRef& func, const char* key) {
  Map<String, Any> attrs = FuncAttrs(func);
  auto it = attrs.find(String(key));
  if (it == attrs.end()) return std::nullopt;
  return (*it).second;
}

ObjectRef WithFuncAttr(const ObjectRef& func, const char* key, Any value) {
  return func::BaseFuncWithAttr(func, String(key), value).cast<ObjectRef>();
}

ObjectRef WithoutFuncAttr(const ObjectRef& func, const char* key) {
  return func::BaseFuncWithoutAttr(func, String(key)).cast<ObjectRef>();
}

}  // namespace ir
}  // namespace tvm_memplan
