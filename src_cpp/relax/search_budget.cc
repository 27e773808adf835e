/*!
 * \file relax/search_budget.cc
 * \brief The PassContext option of the exact search's budget, and its defaults for Python.
 */
#include "relax/search_budget.h"

#include <tvm/ffi/reflection/registry.h>

#include <optional>
#include <string>

#include "ir/expr.h"
#include "ir/pass.h"

namespace tvm_memplan {
namespace relax {
namespace {

/*! \brief `value` as milliseconds >= 0; ValueError naming the option otherwise. */
int64_t CheckMs(const ffi::AnyView& value) {
  // Exactly an integer: a Python bool would convert silently.
  if (value.type_index() == ffi::TypeIndex::kTVMFFIInt) {
    int64_t ms = value.cast<int64_t>();
    if (ms >= 0) return ms;
  }
  TVM_FFI_THROW(ValueError) << "PassContext option " << kSearchPassConfig
                            << " must be an integer >= 0 (milliseconds), got "
                            << ir::ToString(value);
  TVM_FFI_UNREACHABLE();
}

}  // namespace

int64_t PlannerSearchMs(const ffi::ObjectRef& pass_context, int64_t option_ms) {
  if (std::optional<ffi::Any> value = ir::PassConfigValue(pass_context, kSearchPassConfig)) {
    return CheckMs(*value);
  }
  return option_ms;
}

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef()
      .def("tvm_memplan.relax.RegisterOptions",
           []() {
             ir::RegisterPassConfigOption(kSearchPassConfig, "int", [](ffi::Any value) -> ffi::Any {
               return CheckMs(value);
             });
           })
      // The defaults and the unit, for Python (analysis.search_defaults) and the docs.
      .def("tvm_memplan.relax.ExactSearchDefaults", []() {
        ffi::Map<ffi::String, ffi::Any> defaults;
        defaults.Set("planner_ms", kPlannerSearchMs);
        defaults.Set("pack_ms", kPackSearchMs);
        defaults.Set("pass_config", ffi::String(kSearchPassConfig));
        defaults.Set("steps_per_ms", kSearchStepsPerMs);
        defaults.Set("index_entries_per_step", kIndexEntriesPerStep);
        return defaults;
      });
}

}  // namespace relax
}  // namespace tvm_memplan
