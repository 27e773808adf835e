/*!
 * \file relax/inplace_records.h
 * \brief The records of DataflowUseInplaceCalls: its options, its decision per call binding
 *        (InplaceCandidate), and what one run of the rewrite did (InplaceStats). The analysis
 *        (relax/inplace_analysis.h) builds the candidates, the rewrite (relax/inplace_rewrite.h)
 *        reads the same objects, and Python, the report and the benchmarks read their
 *        reflected fields.
 *
 * \code
 *   d = R.multiply(b, c)     InplaceCandidate: binding "d", op "relax.multiply",
 *                              inplace True, arg_index 0, arg "b",
 *                              reason "elementwise; `b` is not read afterwards"
 * \endcode
 *
 * Like every record of tvm-memplan, a record is one reflected object: the fields reflection
 * registers are what every reader sees; the members after them hold the IR the rewrite needs and
 * are C++'s only.
 */
#ifndef TVM_MEMPLAN_RELAX_INPLACE_RECORDS_H_
#define TVM_MEMPLAN_RELAX_INPLACE_RECORDS_H_

#include <optional>
#include <string>
#include <vector>

#include "ir/relax.h"
#include "ir/tir.h"
#include "relax/planners.h"

namespace tvm_memplan {
namespace relax {

/*!
 * \brief Options of the in-place analysis and rewrite, reflected as
 *        `tvm_memplan.relax.InplaceOptions` (Python reads names, docs and defaults from here).
 */
class InplaceOptionsObj : public ffi::Object {
 public:
  // Reflected fields: each documented once, in RegisterReflection (inplace_records.cc).
  bool outside_dataflow = true;
  bool memory_aware = true;
  String planner = kStockPlanner;
  Optional<bool> gpu;
  Optional<bool> cuda_graphs;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.relax.InplaceOptions", InplaceOptionsObj,
                                    ffi::Object);
};

class InplaceOptions : public ObjectRef {
 public:
  InplaceOptions() : ObjectRef(ffi::make_object<InplaceOptionsObj>()) {}
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(InplaceOptions, ObjectRef, InplaceOptionsObj);
};

/*! \brief The one check of the options (ValueError naming the bad field), at every FFI entry
 *         that takes them: the pass constructors and the analyses. */
void CheckInplaceOptions(const InplaceOptionsObj& options);

/*! \brief The decision for one binding whose value is a call, reflected as
 *         `tvm_memplan.relax.InplaceCandidate`. */
class InplaceCandidateObj : public ffi::Object {
 public:
  // Reflected fields: each documented once, in RegisterReflection (inplace_records.cc).
  String binding;
  Optional<String> op;
  bool dataflow = false;
  bool inplace = false;
  Optional<int64_t> arg_index;
  Optional<String> arg;
  String reason;

  // C++ only: what the rewrite needs of an in-place decision.
  /*! \brief The relax.Binding (the rewrite replaces its value). */
  ObjectRef binding_node;
  /*! \brief The reused argument (a variable). */
  ObjectRef reused;
  /*! \brief `R.call_tir(prim_func, (args...), out_ty)` over this binding's arguments. */
  ObjectRef call_tir;
  std::optional<ir::PrimFunc> prim_func;
  std::string prim_func_name;
  /*!
   * \brief Positions of the reused argument in the call_tir argument tuple (several when the
   *        variable is passed more than once: their PrimFunc parameters become one buffer).
   */
  std::vector<int64_t> tuple_indices;

  /*! \brief Refuse the binding: not in place, for `why`. */
  void Refuse(std::string why);

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.relax.InplaceCandidate", InplaceCandidateObj,
                                    ffi::Object);
};

using InplaceCandidate = ffi::ObjectPtr<InplaceCandidateObj>;

/*! \brief What one run of the rewrite did, reflected as `tvm_memplan.relax.InplaceStats`. */
class InplaceStatsObj : public ffi::Object {
 public:
  // Reflected fields: each documented once, in RegisterReflection (inplace_records.cc).
  int64_t functions = 0;
  int64_t call_bindings = 0;
  int64_t rewritten = 0;
  int64_t prim_funcs_added = 0;
  int64_t prim_funcs_removed = 0;
  int64_t signatures_legalized = 0;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.relax.InplaceStats", InplaceStatsObj, ffi::Object);
};

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_INPLACE_RECORDS_H_
