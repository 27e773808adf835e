/*!
 * \file relax/program_points.cc
 * \brief Flattening a Relax function into program points.
 */
#include "relax/program_points.h"

#include <tvm/ffi/extra/structural_visit.h>

#include <algorithm>

#include "ir/node_kind.h"
#include "relax/ir_names.h"

namespace tvm_memplan {
namespace relax {

namespace {

/*! \brief The result of a branch: the body of its SeqExpr, or the branch itself. */
ObjectRef BranchResult(const ObjectRef& branch) {
  if (std::optional<SeqExpr> seq = As<SeqExpr>(branch)) return seq->body();
  return branch;
}

class Flattener {
 public:
  std::vector<Step> steps;

  void Flatten(const Function& func) {
    std::optional<SeqExpr> body = As<SeqExpr>(func.body());
    if (!body) {
      TVM_FFI_THROW(ValueError) << "the function body is a `" << TypeKeyOf(func.body())
                                << "`, not a SeqExpr: normalize the module first "
                                << "(tvm.relax.transform.Normalize())";
    }
    Blocks(*body);
    binding_block_ = -1;
    Push(Step::Kind::kReturn, std::nullopt, body->body(), false);
  }

 private:
  void Blocks(const SeqExpr& seq) {
    int block_id = next_block_++;
    for (const ObjectRef& item : seq.blocks()) {
      BindingBlock block(item, "SeqExpr.blocks");
      int binding_block = next_binding_block_++;
      for (const ObjectRef& b : block.bindings()) {
        block_ = block_id;
        binding_block_ = binding_block;
        Binding binding(b, "BindingBlock.bindings");
        std::optional<If> branch = As<If>(binding.value());
        if (!branch) {
          Push(Step::Kind::kBinding, binding, binding.value(), block.is_dataflow());
          continue;
        }
        Push(Step::Kind::kIfCondition, binding, branch->cond(), false);
        int id = next_if_++;
        for (int side : {0, 1}) {
          ObjectRef body = side == 0 ? branch->true_branch() : branch->false_branch();
          branches_.emplace_back(id, side);
          if (std::optional<SeqExpr> inner = As<SeqExpr>(body)) Blocks(*inner);
          Push(Step::Kind::kBranchResult, binding, BranchResult(body), false);
          branches_.pop_back();
        }
        // The merge binds the `if` var to either result. It reads nothing itself: each branch
        // already read its result in its kBranchResult step, on its own path, and the `if`
        // var's later reads count for whatever either result may refer to.
        Step merge;
        merge.kind = Step::Kind::kIfResult;
        merge.binding = binding;
        merge.var = binding.var().ref();
        merge.true_result = BranchResult(branch->true_branch());
        merge.false_result = BranchResult(branch->false_branch());
        merge.branches = branches_;
        merge.block = block_id;
        merge.binding_block = binding_block;
        steps.push_back(std::move(merge));
      }
    }
  }

  void Push(Step::Kind kind, std::optional<Binding> binding, const ObjectRef& expr, bool dataflow) {
    Step step;
    step.kind = kind;
    if (binding) step.var = binding->var().ref();
    step.binding = std::move(binding);
    step.expr = expr;
    step.dataflow = dataflow;
    step.uses = UsedVars(expr);
    step.branches = branches_;
    step.block = kind == Step::Kind::kReturn ? -1 : block_;
    step.binding_block = binding_block_;
    steps.push_back(std::move(step));
  }

  std::vector<std::pair<int, int>> branches_;
  int next_if_ = 0;
  int next_block_ = 0;
  int next_binding_block_ = 0;
  int block_ = -1;
  int binding_block_ = -1;
};

}  // namespace

std::vector<Step> FlattenFunction(const Function& func) {
  Flattener flattener;
  flattener.Flatten(func);
  return std::move(flattener.steps);
}

bool CanFollow(const Step& earlier, const Step& later) {
  for (const auto& [id, side] : earlier.branches) {
    if (side == 0 &&
        std::count(later.branches.begin(), later.branches.end(), std::make_pair(id, 1))) {
      return false;
    }
  }
  return true;
}

std::vector<const Object*> UsedVars(const ObjectRef& expr) {
  std::vector<const Object*> vars;
  if (!expr.defined()) return vars;
  ffi::StructuralVisit(expr,
                       [&](const ObjectRef& node,
                           ffi::StructuralVisitorObj* engine) -> Optional<ffi::VisitInterrupt> {
                         if (!node.defined()) return std::nullopt;
                         switch (ir::NodeKindOf(node->type_index())) {
                           case ir::NodeKind::kVar:
                             // A step reads a handful of variables: a scan beats a hash set.
                             if (std::find(vars.begin(), vars.end(), node.get()) == vars.end()) {
                               vars.push_back(node.get());
                             }
                             return std::nullopt;       // a var's type holds no uses
                           case ir::NodeKind::kOpaque:  // types (struct info), operators
                           case ir::NodeKind::kConstant:
                             return std::nullopt;
                           case ir::NodeKind::kExpr:
                             if (IsGlobalVar(node)) return std::nullopt;
                             break;
                           default:
                             break;
                         }
                         engine->DefaultVisitExpected(node).value();
                         return std::nullopt;
                       });
  return vars;
}

}  // namespace relax
}  // namespace tvm_memplan
