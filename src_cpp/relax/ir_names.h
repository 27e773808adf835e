/*!
 * \file relax/ir_names.h
 * \brief The IR names the Relax passes use unqualified, declared once for the whole folder
 *        instead of a using-block at the top of each file.
 *
 * \code
 *   #include "relax/ir_names.h"
 *   namespace tvm_memplan::relax {
 *   bool IsTensor(const ObjectRef& var) { return As<TensorType>(TypeOf(var)).has_value(); }
 *   }
 * \endcode
 */
#ifndef TVM_MEMPLAN_RELAX_IR_NAMES_H_
#define TVM_MEMPLAN_RELAX_IR_NAMES_H_

#include "ir/relax.h"

namespace tvm_memplan {
namespace relax {

using namespace ir;  // NOLINT(build/namespaces): the IR layer is this folder's vocabulary
using ir::relax::Binding;
using ir::relax::BindingBlock;
using ir::relax::BlockBuilder;
using ir::relax::Function;
using ir::relax::HoldsNoStorage;
using ir::relax::If;
using ir::relax::InplaceIndices;
using ir::relax::IsConstant;
using ir::relax::IsExternFunc;
using ir::relax::IsFuncType;
using ir::relax::OpAttr;
using ir::relax::SameShapeAndDType;
using ir::relax::SeqExpr;
using ir::relax::TensorType;
using ir::relax::Tuple;
using ir::relax::TupleGetItem;
using ir::relax::TupleType;
using ir::relax::TypeOf;

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_IR_NAMES_H_
