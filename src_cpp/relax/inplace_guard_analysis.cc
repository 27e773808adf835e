/*!
 * \file relax/inplace_guard_analysis.cc
 * \brief Finding in-place writes into constants, parameters' views and values read afterwards.
 */
#include "relax/inplace_guard_analysis.h"

#include <tvm/ffi/reflection/registry.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/scopes.h"
#include "relax/ir_names.h"
#include "relax/program_points.h"
#include "relax/storage_flow.h"

namespace tvm_memplan {
namespace relax {

namespace {

/*! \brief The unsafe in-place writes of one function, in program order. */
class WriteAnalysis {
 public:
  WriteAnalysis(const Function& func, std::shared_ptr<const std::vector<Step>> steps,
                const IRModule& mod, PrimFuncFacts* facts)
      : func_(func),
        facts_(facts),
        classifier_(mod.ref(), nullptr, facts,
                    MemoryEffectPolicy{/*packed_functions_keep_arguments=*/false}),
        own_steps_(std::move(steps)),
        steps_(*own_steps_) {}

  std::vector<RevertedInplaceWrite> Run() {
    if (OnlyFreshDestinations()) return {};
    flow_ = FollowStorage(func_, own_steps_, &classifier_);
    for (const ObjectRef& param : func_.params()) defined_at_[param.get()] = -1;
    for (size_t i = 0; i < steps_.size(); ++i) Define(static_cast<int64_t>(i));
    std::vector<RevertedInplaceWrite> writes;
    for (size_t i = 0; i < steps_.size(); ++i) Check(static_cast<int64_t>(i), &writes);
    return writes;
  }

  /*! \brief The flow Run followed, or null where it did not need it. */
  std::shared_ptr<const FunctionFlow> flow() const { return flow_; }

 private:
  /*!
   * \brief Whether every call writes only tensors of their own: each written argument a
   *        variable bound to `R.builtin.alloc_tensor` that no other call writes (what
   *        CallTIRRewrite emits), or a scalar or shape. Then no write is unsafe (a fresh
   *        allocation written once holds no value yet), and the flow of storage need not be
   *        followed: the common case, decided in one walk over the bindings.
   */
  bool OnlyFreshDestinations() {
    std::unordered_map<const Object*, bool> written_once;  // a fresh tensor -> written yet
    for (const Step& step : steps_) {
      if (step.kind != Step::Kind::kBinding) continue;
      std::optional<Call> call = As<Call>(step.expr);
      if (!call) continue;
      if (call->IsOp(schema::op::BuiltinAllocTensor)) {
        written_once.emplace(step.var.get(), false);
        continue;
      }
      // What Define and Check take as written: the effect's arguments and the callee's.
      std::vector<size_t> written =
          WrittenArguments(*call, classifier_.Classify(*call), classifier_, facts_);
      if (std::optional<PrimFunc> callee = classifier_.PrimFuncOf(call->op())) {
        const std::vector<bool>& params = facts_->WrittenParams(*callee);
        for (size_t i = 0; i < params.size(); ++i) {
          if (params[i]) written.push_back(i);
        }
      }
      std::sort(written.begin(), written.end());
      written.erase(std::unique(written.begin(), written.end()), written.end());
      Array<ObjectRef> args = call->args();
      for (size_t i : written) {
        if (i >= args.size()) continue;
        if (HoldsNoStorage(TypeOf(args[i]))) continue;
        auto fresh = IsVar(args[i]) ? written_once.find(args[i].get()) : written_once.end();
        if (fresh == written_once.end() || fresh->second) return false;
        fresh->second = true;
      }
    }
    return true;
  }

  /*! \brief Where step `index` defines its variable, and which roots its call writes. */
  void Define(int64_t index) {
    const Step& step = steps_[index];
    if (step.kind != Step::Kind::kBinding && step.kind != Step::Kind::kIfResult) return;
    defined_at_[step.var.get()] = index;
    const std::optional<MemoryEffect>& effect = flow_->effects[index];
    if (!effect) return;
    Call call(step.expr);
    Array<ObjectRef> args = call.args();
    for (size_t i : WrittenArguments(call, *effect, classifier_, facts_)) {
      const Value* value = IsVar(args[i]) ? values().Find(args[i].get()) : nullptr;
      if (value == nullptr) continue;
      for (RootId root : value->roots) writes_[root].push_back(index);
    }
    if (effect->allocator == MemoryEffect::Allocator::kAllocStorage) {
      const Value* value = values().Find(step.var.get());
      planned_.insert(value->roots.begin(), value->roots.end());
    }
  }

  StorageFlow& values() { return flow_->values; }
  const StorageFlow& values() const { return flow_->values; }

  void Check(int64_t index, std::vector<RevertedInplaceWrite>* writes) {
    const Step& step = steps_[index];
    if (step.kind != Step::Kind::kBinding) return;
    std::optional<Call> call = As<Call>(step.expr);
    if (!call) return;
    std::optional<PrimFunc> callee = classifier_.PrimFuncOf(call->op());
    if (!callee) return;
    const std::vector<bool>& written = facts_->WrittenParams(*callee);
    Array<ObjectRef> args = call->args();
    for (size_t i = 0; i < args.size() && i < written.size(); ++i) {
      if (!written[i] || !Is<TensorType>(TypeOf(args[i]))) continue;
      Value value = values().Eval(args[i], index, "the call of " + GlobalVarName(call->op()));
      for (RootId root : value.roots) {
        std::optional<RevertedInplaceWrite> write = Judge(index, *call, i, root);
        if (write) {
          writes->push_back(std::move(*write));
          break;
        }
      }
    }
  }

  /*! \brief Whether writing `root` (through argument `arg` of `call` at `index`) is unsafe. */
  std::optional<RevertedInplaceWrite> Judge(int64_t index, const Call& call, size_t arg,
                                            RootId root) {
    const Root& r = values().root(root);
    // A parameter passed itself is the caller's tensor, written as the program says; storage
    // of unknown origin, or a destination nothing wrote yet, holds no value of this function's.
    const ObjectRef& written = call.args()[arg];
    if (r.kind == RootKind::kParam && IsVar(written) && defined_at_.count(written.get()) &&
        defined_at_.at(written.get()) < 0) {
      return std::nullopt;
    }
    if (r.kind == RootKind::kForeign) return std::nullopt;
    // Already planned: tensors at offsets of one storage, which this analysis cannot tell apart.
    if (planned_.count(root)) return std::nullopt;
    if (r.kind == RootKind::kAllocated && !WrittenBefore(root, index)) return std::nullopt;
    const Object* result = ResultBinding(index, call.args()[arg]);
    std::string argument =
        IsVar(call.args()[arg]) ? Quoted(Var(call.args()[arg]).name()) : std::string("a constant");
    const char* code = nullptr;
    std::string reason;
    if (r.kind == RootKind::kConstant) {
      code = inplace_write::kConstant;
      reason = argument + " may refer to constant storage (" + values().Origin(root) +
               "): every later call would read what this one wrote";
    } else if (r.kind == RootKind::kParam) {
      code = inplace_write::kParameter;
      reason = argument +
               " may refer to a parameter's storage (a view of the caller's tensor, "
               "which the function does not write as itself)";
    } else if (std::optional<std::string> read = ReadAfter(root, index, result)) {
      code = inplace_write::kReadAfter;
      reason = argument + " still holds the value it overwrites, which " + *read;
    } else {
      return std::nullopt;
    }
    RevertedInplaceWrite write = ffi::make_object<RevertedInplaceWriteObj>();
    write->callee = GlobalVarName(call.op());
    write->argument = IsVar(call.args()[arg]) ? Var(call.args()[arg]).name() : "a constant";
    write->code = code;
    write->reason = reason;
    if (result) write->result = Binding(ffi::GetRef<ObjectRef>(result)).var().name();
    write->binding = ffi::GetRef<ObjectRef>(steps_[index].binding->get());
    write->arg = arg;
    if (result) write->result_binding = ffi::GetRef<ObjectRef>(result);
    DestinationOf(r, write.get());
    return write;
  }

  /*! \brief Whether a call before step `index`, on a path reaching it, wrote `root`. */
  bool WrittenBefore(RootId root, int64_t index) const {
    auto found = writes_.find(root);
    if (found == writes_.end()) return false;
    for (int64_t write : found->second) {
      if (write < index && CanFollow(steps_[write], steps_[index])) return true;
    }
    return false;
  }

  /*! \brief The binding CallTIRRewrite emits right after the call for its result: `b = a`, or a
   *         tuple holding `a`. */
  const Object* ResultBinding(int64_t index, const ObjectRef& arg) const {
    size_t next = static_cast<size_t>(index) + 1;
    if (next >= steps_.size() || steps_[next].kind != Step::Kind::kBinding ||
        steps_[next].block != steps_[index].block) {
      return nullptr;
    }
    const ObjectRef& value = steps_[next].expr;
    bool holds = value.same_as(arg);
    if (std::optional<Tuple> tuple = As<Tuple>(value)) {
      for (const ObjectRef& field : tuple->fields()) holds = holds || field.same_as(arg);
    }
    return holds ? steps_[next].binding->get() : nullptr;
  }

  /*!
   * \brief Where the old value of `root` is read after step `index` (as "... read at ..."):
   *        by a step that can follow it, through a variable bound before it, other than the
   *        result binding. nullopt when nowhere.
   */
  std::optional<std::string> ReadAfter(RootId root, int64_t index, const Object* result) const {
    for (size_t later = static_cast<size_t>(index) + 1; later < steps_.size(); ++later) {
      const Step& step = steps_[later];
      if (step.binding && step.binding->get() == result) continue;
      if (!CanFollow(steps_[index], step)) continue;
      for (const Object* var : step.uses) {
        auto defined = defined_at_.find(var);
        if (defined == defined_at_.end() || defined->second >= index) continue;
        const Value* value = values().Find(var);
        if (value == nullptr || !Intersects(value->roots, {root})) continue;
        std::string name = Quoted(Var(ffi::GetRef<ObjectRef>(var)).name());
        if (step.kind == Step::Kind::kReturn) return name + " returns";
        if (step.kind == Step::Kind::kBinding) {
          return name + " is read at " + Quoted(step.binding->var().name());
        }
        return name + " is read afterwards";
      }
    }
    return std::nullopt;
  }

  /*! \brief The copy is allocated where the storage was (device 0, global scope when not
   *         known). */
  void DestinationOf(const Root& r, RevertedInplaceWriteObj* write) const {
    write->device = IntConst(kInt64, 0);
    write->scope = StringConst(scope::kGlobal);
    if (r.step < 0) return;
    std::optional<Call> alloc = As<Call>(steps_[r.step].expr);
    if (alloc && alloc->IsOp(schema::op::BuiltinAllocTensor) && alloc->args().size() == 4) {
      write->device = alloc->args()[2];
      write->scope = alloc->args()[3];
    }
  }

  const Function& func_;
  PrimFuncFacts* facts_;
  MemoryEffects classifier_;
  std::shared_ptr<const std::vector<Step>> own_steps_;
  const std::vector<Step>& steps_;
  std::shared_ptr<FunctionFlow> flow_;
  /*! \brief Variable -> the step binding it (-1: a parameter). */
  std::unordered_map<const Object*, int64_t> defined_at_;
  /*! \brief Storages allocated by `R.memory.alloc_storage` (a plan already applied). */
  std::unordered_set<RootId> planned_;
  /*! \brief Per root, the steps of the calls that may write it. */
  std::unordered_map<RootId, std::vector<int64_t>> writes_;
};

}  // namespace

std::vector<RevertedInplaceWrite> FindUnsafeWrites(const Function& func,
                                                   std::shared_ptr<const std::vector<Step>> steps,
                                                   const IRModule& mod, PrimFuncFacts* facts,
                                                   std::shared_ptr<const FunctionFlow>* flow) {
  WriteAnalysis analysis(func, std::move(steps), mod, facts);
  std::vector<RevertedInplaceWrite> writes = analysis.Run();
  if (flow) *flow = analysis.flow();
  return writes;
}

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def(
      "tvm_memplan.analysis.unsafe_inplace_writes", [](ObjectRef module) {
        IRModule mod(module, "unsafe_inplace_writes");
        PrimFuncFacts facts;
        Map<String, Array<ObjectRef>> out;
        for (const auto& [gv, func] : mod.functions()) {
          if (!Is<Function>(func)) continue;
          Array<ObjectRef> records;
          auto steps = std::make_shared<const std::vector<Step>>(FlattenFunction(Function(func)));
          for (RevertedInplaceWrite& write : FindUnsafeWrites(Function(func), steps, mod, &facts)) {
            records.push_back(ObjectRef(write));
          }
          if (!records.empty()) out.Set(GlobalVarName(gv), records);
        }
        return out;
      });
}

}  // namespace relax
}  // namespace tvm_memplan
