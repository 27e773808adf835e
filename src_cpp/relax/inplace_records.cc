/*!
 * \file relax/inplace_records.cc
 * \brief Reflection of the in-place records, and the one check of the options.
 */
#include "relax/inplace_records.h"

#include <tvm/ffi/reflection/registry.h>

#include <utility>

#include "ir/options.h"

namespace tvm_memplan {
namespace relax {

void InplaceOptionsObj::RegisterReflection() {
  OptionsDef<InplaceOptionsObj>()
      .Option("outside_dataflow", &InplaceOptionsObj::outside_dataflow,
              "Also rewrite bindings outside dataflow blocks (the stock pass only rewrites "
              "inside).")
      .Option("memory_aware", &InplaceOptionsObj::memory_aware,
              "Keep only rewrites that do not raise the bytes the memory planner plans "
              "(judged by a model of it); False keeps every safe rewrite.")
      .Option("planner", &InplaceOptionsObj::planner,
              "The memory planner that will run, by which memory_aware judges: \"stock\" (TVM's "
              "StaticPlanBlockMemory) or \"memplan\" (tvm-memplan's, as in the memplan pipeline).")
      .Option("gpu", &InplaceOptionsObj::gpu,
              "Whether the module is compiled for a GPU, whose pipeline schedules the PrimFuncs "
              "it legalizes and fuses (dlight): then operator calls are kept and only calls of "
              "PrimFuncs already bound to threads run in place. None: the current target has "
              "the key \"gpu\".")
      .Option("cuda_graphs", &InplaceOptionsObj::cuda_graphs,
              "Whether RewriteCUDAGraph will capture the kernels into CUDA graphs: then no call "
              "writes in place into storage that would become the function's result only through "
              "it, where that storage could be captured (a returned tensor is allocated on its "
              "own, and no kernel touching it is captured). None: the PassContext option "
              "relax.backend.use_cuda_graph decides.");
}

void CheckInplaceOptions(const InplaceOptionsObj& options) {
  if (options.planner != kStockPlanner && options.planner != kMemplanPlanner) {
    TVM_FFI_THROW(ValueError) << "InplaceOptions.planner must be \"" << kStockPlanner << "\" or \""
                              << kMemplanPlanner << "\", got \"" << options.planner << "\"";
  }
}

void InplaceCandidateObj::Refuse(std::string why) {
  inplace = false;
  arg_index = std::nullopt;
  arg = std::nullopt;
  reason = std::move(why);
  reused = ObjectRef();
  call_tir = ObjectRef();
  prim_func.reset();
  prim_func_name.clear();
  tuple_indices.clear();
}

void InplaceCandidateObj::RegisterReflection() {
  namespace refl = tvm::ffi::reflection;
  using R = InplaceCandidateObj;
  refl::ObjectDef<R>()
      .def_ro("binding", &R::binding, "The variable the call binds.")
      .def_ro("op", &R::op, "The operator; None when the callee is not an operator.")
      .def_ro("dataflow", &R::dataflow, "Whether the binding is in a dataflow block.")
      .def_ro("inplace", &R::inplace, "Whether DataflowUseInplaceCalls rewrites it.")
      .def_ro("arg_index", &R::arg_index,
              "In place: the position of the argument that receives the result.")
      .def_ro("arg", &R::arg, "In place: that argument.")
      .def_ro("reason", &R::reason,
              "Why, or why not (the first refusal of each candidate argument).");
}

void InplaceStatsObj::RegisterReflection() {
  namespace refl = tvm::ffi::reflection;
  using R = InplaceStatsObj;
  refl::ObjectDef<R>()
      .def_ro("functions", &R::functions, "Relax functions analysed.")
      .def_ro("call_bindings", &R::call_bindings, "Bindings whose value is a call.")
      .def_ro("rewritten", &R::rewritten, "Bindings rewritten to R.call_tir_inplace.")
      .def_ro("prim_funcs_added", &R::prim_funcs_added, "In-place PrimFuncs added to the module.")
      .def_ro("prim_funcs_removed", &R::prim_funcs_removed,
              "PrimFuncs removed because every call of them now runs in place.")
      .def_ro("signatures_legalized", &R::signatures_legalized,
              "Distinct call signatures legalized to decide.");
}

TVM_FFI_STATIC_INIT_BLOCK() {
  InplaceOptionsObj::RegisterReflection();
  InplaceCandidateObj::RegisterReflection();
  InplaceStatsObj::RegisterReflection();
}

}  // namespace relax
}  // namespace tvm_memplan
