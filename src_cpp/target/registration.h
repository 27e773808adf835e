/*!
 * \file target/registration.h
 * \brief Registering with TVM what it offers no global function for: target-kind attributes and
 *        PassContext options.
 *
 * Both go through C++ functions that libtvm_compiler.so exports (schema::symbol, checked by the
 * load-time self-check), called with the parameter types their mangled names spell:
 *
 * \code
 *   SetTargetKindAttr("llvm", "max_stack_alloca", int64_t{1024});
 *   // TVM's own lookup now sees it: tvm.target.Target("llvm").get_kind_attr("max_stack_alloca")
 *   RegisterPassConfigOption("tvm_memplan.max_stack_alloca", "int", Validate);
 *   // tvm.transform.PassContext(config={"tvm_memplan.max_stack_alloca": 0}) now validates it
 * \endcode
 *
 * Nothing here touches TVM's private memory layouts.
 */
#ifndef TVM_MEMPLAN_TARGET_REGISTRATION_H_
#define TVM_MEMPLAN_TARGET_REGISTRATION_H_

#include <functional>
#include <string>

#include "ir/reflection.h"

namespace tvm_memplan {
namespace target {

/*! \brief Whether TVM has a target kind named `kind_name`. */
bool TargetKindExists(const std::string& kind_name);

/*!
 * \brief Set attribute `attr_name` of target kind `kind_name` to `value`, overriding what this
 *        library set before. ValueError when the kind does not exist (TVM would create it).
 */
void SetTargetKindAttr(const std::string& kind_name, const std::string& attr_name, ffi::Any value);

/*!
 * \brief Register PassContext option `key`; `legalize` checks and normalizes each value set in a
 *        PassContext (it throws for a bad one). Nothing happens when `key` is already registered.
 */
void RegisterPassConfigOption(const std::string& key, const std::string& type_name,
                              std::function<ffi::Any(ffi::Any)> legalize);

}  // namespace target
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TARGET_REGISTRATION_H_
