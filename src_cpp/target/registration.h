/*!
 * \file target/registration.h
 * \brief Registering target-kind attributes with TVM, which offers no global function for it
 *        (PassContext options: ir/pass.h).
 *
 * It goes through C++ functions that libtvm_compiler.so exports (schema::symbol, checked by the
 * load-time self-check), called with the parameter types their mangled names spell:
 *
 * \code
 *   SetTargetKindAttr("llvm", "max_stack_alloca", int64_t{1024});
 *   // TVM's own lookup now sees it: tvm.target.Target("llvm").get_kind_attr("max_stack_alloca")
 * \endcode
 *
 * Nothing here touches TVM's private memory layouts.
 */
#ifndef TVM_MEMPLAN_TARGET_REGISTRATION_H_
#define TVM_MEMPLAN_TARGET_REGISTRATION_H_

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

}  // namespace target
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TARGET_REGISTRATION_H_
