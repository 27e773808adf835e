/*!
 * \file ir/pass.h
 * \brief Turning a C++ function into a `tvm.transform.Pass`, and reading PassContext options.
 *
 * \code
 *   ObjectRef pass = MakePrimFuncPass("tvm_memplan.CompactBufferAllocation", 0,
 *       [](PrimFunc func, IRModule mod, ObjectRef ctx) { return Compact(func); });
 *   // Python sees an ordinary tirx.PrimFuncPass: pass(mod), tvm.transform.Sequential([...]).
 * \endcode
 */
#ifndef TVM_MEMPLAN_IR_PASS_H_
#define TVM_MEMPLAN_IR_PASS_H_

#include <functional>
#include <optional>
#include <string>

#include "ir/tir.h"

namespace tvm_memplan {
namespace ir {

/*! \brief (func, module, pass context) -> rewritten func. */
using PrimFuncTransform = std::function<PrimFunc(PrimFunc, IRModule, ObjectRef)>;
/*! \brief (module, pass context) -> rewritten module. */
using ModuleTransform = std::function<IRModule(IRModule, ObjectRef)>;

/*! \brief A tirx.PrimFuncPass that applies `transform` to every PrimFunc of a module. */
ObjectRef MakePrimFuncPass(const char* name, int opt_level, PrimFuncTransform transform,
                           const Array<String>& required = {});
/*! \brief A transform.ModulePass. */
ObjectRef MakeModulePass(const char* name, int opt_level, ModuleTransform transform,
                         const Array<String>& required = {});

/*! \brief Run `pass` (a tvm.transform.Pass) on `mod` under the current PassContext. */
IRModule ApplyPass(const ObjectRef& pass, const IRModule& mod);

/*! \brief The value of PassContext option `key`, or nullopt when it is not set. */
std::optional<Any> PassConfigValue(const ObjectRef& pass_context, const char* key);

/*!
 * \brief Register PassContext option `key` (TVM offers no global function for it: an exported
 *        C++ function, schema::symbol); `legalize` checks and normalizes each value set in a
 *        PassContext (it throws for a bad one). Nothing happens when `key` is already registered.
 */
void RegisterPassConfigOption(const std::string& key, const std::string& type_name,
                              std::function<Any(Any)> legalize);

}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_PASS_H_
