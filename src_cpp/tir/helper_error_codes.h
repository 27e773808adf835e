/*!
 * \file tir/helper_error_codes.h
 * \brief Lets private helper functions report errors. Codegen lowers `tvm_throw_last_error`
 *        (which a workspace allocation's null check uses) to `return -1`, which a helper that
 *        returns nothing cannot compile. Such a helper returns an int32 error code instead, 0 on
 *        success, and each call to it passes a failure on to its caller:
 *
 * \code
 *   # before                                     # after
 *   def helper(a: T.handle("float32")):          def helper(a: T.handle("float32")) -> T.int32:
 *       W = T.decl_buffer(..., data=              W = T.decl_buffer(..., data=
 *           T.TVMBackendAllocWorkspace(...))          T.TVMBackendAllocWorkspace(...))
 *       if T.isnullptr(W.data):                   if T.isnullptr(W.data):
 *           T.tvm_throw_last_error()                  T.tvm_throw_last_error()
 *       ...                                       ...
 *                                                 return 0
 *   def main(...):                               def main(...):
 *       Module.helper(A.data)                        if Module.helper(A.data) != 0:
 *                                                        T.tvm_throw_last_error()
 * \endcode
 *
 * A private caller that returns nothing itself is handled the same way, up the call graph. Helpers
 * that return a value are left alone (their -1 could be a result), and so are functions with a
 * global symbol (callers outside the module would not check the code).
 */
#ifndef TVM_MEMPLAN_TIR_HELPER_ERROR_CODES_H_
#define TVM_MEMPLAN_TIR_HELPER_ERROR_CODES_H_

#include "ir/tir.h"

namespace tvm_memplan {
namespace tir {

/*! \brief `mod` with every helper that can fail and returns nothing returning an error code. */
ir::IRModule ReturnErrorCodesFromHelpers(const ir::IRModule& mod);

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_HELPER_ERROR_CODES_H_
