/*!
 * \file ir/pass.cc
 * \brief Pass objects built through TVM's registered pass constructors.
 */
#include "ir/pass.h"

namespace tvm_memplan {
namespace ir {

using namespace schema;

namespace {
ObjectRef PassInfo(int opt_level, const char* name, const Array<String>& required) {
  return func::MakePassInfo(opt_level, String(name), required, /*traceable=*/false)
      .cast<ObjectRef>();
}
}  // namespace

ObjectRef MakePrimFuncPass(const char* name, int opt_level, PrimFuncTransform transform,
                           const Array<String>& required) {
  // TVM hands the function over as an rvalue reference: a plain ObjectRef parameter would be
  // rejected at call time ("Expected ffi.Object but got ObjectRValueRef").
  Function body = Function::FromTyped(
      [transform](ffi::RValueRef<ObjectRef> func, ObjectRef mod, ObjectRef ctx) -> ObjectRef {
        return transform(PrimFunc(*std::move(func)), IRModule(mod), ctx).ref();
      });
  return func::CreatePrimFuncPass(body, PassInfo(opt_level, name, required)).cast<ObjectRef>();
}

ObjectRef MakeModulePass(const char* name, int opt_level, ModuleTransform transform,
                         const Array<String>& required) {
  Function body =
      Function::FromTyped([transform](ffi::RValueRef<ObjectRef> mod, ObjectRef ctx) -> ObjectRef {
        return transform(IRModule(*std::move(mod)), ctx).ref();
      });
  return func::MakeModulePass(body, PassInfo(opt_level, name, required)).cast<ObjectRef>();
}

IRModule ApplyPass(const ObjectRef& pass, const IRModule& mod) {
  return IRModule(func::RunPass(pass, mod.ref()).cast<ObjectRef>());
}

void RegisterPassConfigOption(const std::string& key, const std::string& type_name,
                              std::function<Any(Any)> legalize) {
  // TVM aborts the registration of a key it already has.
  if (func::ListConfigs().cast<Map<String, Any>>().count(String(key))) return;
  using RegisterConfigOptionFn = void (*)(const char*, String, std::function<Any(Any)>);
  static auto register_option =
      symbol::PassContextRegisterConfigOption.As<RegisterConfigOptionFn>();
  register_option(key.c_str(), String(type_name), std::move(legalize));
}

std::optional<Any> PassConfigValue(const ObjectRef& pass_context, const char* key) {
  Map<String, Any> config = field::PassContext_config.Get<Map<String, Any>>(pass_context);
  auto it = config.find(String(key));
  if (it == config.end()) return std::nullopt;
  return (*it).second;
}

}  // namespace ir
}  // namespace tvm_memplan
