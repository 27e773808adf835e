/*!
 * \file relax/storage_flow.cc
 * \brief The points-to analysis over storage roots.
 */
#include "relax/storage_flow.h"

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "relax/ir_names.h"

namespace tvm_memplan {
namespace relax {

RootSet Union(const RootSet& a, const RootSet& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  RootSet out;
  out.reserve(a.size() + b.size());
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

bool Intersects(const RootSet& a, const RootSet& b) {
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i == *j) return true;
    if (*i < *j) {
      ++i;
    } else {
      ++j;
    }
  }
  return false;
}

Value TupleOf(std::vector<Value> fields) {
  Value tuple;
  for (const Value& field : fields) tuple.roots = Union(tuple.roots, field.roots);
  tuple.fields = std::make_shared<const std::vector<Value>>(std::move(fields));
  return tuple;
}

Value Join(const Value& a, const Value& b) {
  if (a.fields && b.fields && a.fields->size() == b.fields->size()) {
    std::vector<Value> fields;
    for (size_t i = 0; i < a.fields->size(); ++i) {
      fields.push_back(Join((*a.fields)[i], (*b.fields)[i]));
    }
    return TupleOf(std::move(fields));
  }
  return Value{Union(a.roots, b.roots), nullptr};
}

StorageFlow::StorageFlow(const std::vector<Step>& steps) : steps_(steps) {
  for (size_t i = 0; i < steps.size(); ++i) {
    for (const Object* var : steps[i].uses) uses_[var].push_back(static_cast<int64_t>(i));
  }
}

RootId StorageFlow::NewRoot(RootKind kind, Where origin, int64_t step, OriginForm form) {
  roots_.push_back(Root{kind, form, std::move(origin), "", step, {}});
  return static_cast<RootId>(roots_.size() - 1);
}

std::string StorageFlow::Text(const Where& where) const {
  if (where.step_ < 0) return where.phrase_;
  return Quoted(steps_[where.step_].binding->var().name());
}

std::string StorageFlow::Origin(RootId id) const {
  const Root& root = roots_[id];
  switch (root.form) {
    case OriginForm::kAt:
      return Text(root.where);
    case OriginForm::kResultOf:
      return "the result of " + Text(root.where);
    case OriginForm::kFromConstants:
      return Text(root.where) + ", computed from constants only";
  }
  return Text(root.where);
}

void StorageFlow::Define(const ObjectRef& var, Value value) {
  auto it = uses_.find(var.get());
  if (it != uses_.end()) {
    for (RootId root : value.roots) {
      std::vector<int64_t>& uses = roots_[root].uses;
      uses.insert(uses.end(), it->second.begin(), it->second.end());
    }
  }
  env_[var.get()] = std::move(value);
}

void StorageFlow::Escape(const RootSet& roots, const std::string& why) {
  for (RootId root : roots) {
    if (roots_[root].escape.empty()) roots_[root].escape = why;
  }
}

const Value* StorageFlow::Find(const Object* var) const {
  auto it = env_.find(var);
  return it == env_.end() ? nullptr : &it->second;
}

bool StorageFlow::OnlyConstants(const RootSet& roots) const {
  return std::all_of(roots.begin(), roots.end(),
                     [&](RootId r) { return roots_[r].kind == RootKind::kConstant; });
}

Value StorageFlow::Fresh(const ObjectRef& type, RootKind kind, const Where& origin, OriginForm form,
                         int64_t step) {
  if (std::optional<TupleType> tuple = As<TupleType>(type)) {
    std::vector<Value> fields;
    for (const ObjectRef& field : tuple->fields()) {
      fields.push_back(Fresh(field, kind, origin, form, step));
    }
    return TupleOf(std::move(fields));
  }
  return Value{{NewRoot(kind, origin, step, form)}, nullptr};
}

Value StorageFlow::Opaque(const RootSet& args, const Where& origin, int64_t step) {
  return Value{Union(args, {NewRoot(RootKind::kForeign, origin, step)}), nullptr};
}

Value StorageFlow::Eval(const ObjectRef& expr, int64_t step, const Where& where) {
  if (!expr.defined()) return {};
  // Scalars (prim values, shape variables) and strings hold no tensor storage.
  if (IsPrimExpr(expr) || IsStringImm(expr)) return {};
  if (IsVar(expr)) {
    if (const Value* value = Find(expr.get())) return *value;
    return Opaque({}, "unbound variable `" + Var(expr).name() + "`", step);
  }
  if (IsConstant(expr)) return Value{{NewRoot(RootKind::kConstant, "a constant", step)}, nullptr};
  if (std::optional<Tuple> tuple = As<Tuple>(expr)) {
    std::vector<Value> fields;
    for (const ObjectRef& field : tuple->fields()) fields.push_back(Eval(field, step, where));
    return TupleOf(std::move(fields));
  }
  if (std::optional<TupleGetItem> get = As<TupleGetItem>(expr)) {
    Value tuple = Eval(get->tuple(), step, where);
    int64_t index = get->index();
    if (tuple.fields && index >= 0 && index < static_cast<int64_t>(tuple.fields->size())) {
      return (*tuple.fields)[index];
    }
    return Value{tuple.roots, nullptr};
  }
  if (Is<Function>(expr)) {
    // A closure may run at any later point: what it captures escapes.
    RootSet captured;
    for (const Object* var : UsedVars(expr)) {
      if (const Value* value = Find(var)) captured = Union(captured, value->roots);
    }
    Escape(captured, "captured by the closure " + Text(where));
    return Opaque(captured, "the closure " + Text(where), step);
  }
  if (Is<ir::relax::ShapeExpr>(expr) || IsGlobalVar(expr) || IsExternFunc(expr)) {
    return {};
  }
  // Anything else (not normalized): whatever its variables refer to, or unknown storage.
  RootSet used;
  for (const Object* var : UsedVars(expr)) {
    if (const Value* value = Find(var)) used = Union(used, value->roots);
  }
  return Opaque(used, "the " + TypeKeyOf(expr) + " at " + Text(where), step);
}

Value StorageFlow::CallResult(const Call& call, const MemoryEffect& effect, int64_t step,
                              const Where& where) {
  using Kind = MemoryEffect::Kind;
  Array<ObjectRef> call_args = call.args();
  RootSet args;
  for (const ObjectRef& arg : call_args) args = Union(args, Eval(arg, step, where).roots);
  // A call of a function value (a closure variable) may also return what it captured.
  bool calls_op = IsOpNode(call.op());
  bool calls_value = !calls_op && !IsGlobalVar(call.op()) && !IsExternFunc(call.op());
  if (calls_value) args = Union(args, Eval(call.op(), step, where).roots);
  if (effect.escapes) Escape(args, "passed to " + effect.what + " at " + Text(where));
  ObjectRef type = TypeOf(call.ref());
  bool from_constants = effect.folds_to_constant ||
                        (effect.allocator == MemoryEffect::Allocator::kNone && OnlyConstants(args));
  RootKind fresh_kind = from_constants ? RootKind::kConstant : RootKind::kAllocated;
  OriginForm fresh_form = from_constants ? OriginForm::kFromConstants : OriginForm::kResultOf;
  switch (effect.kind) {
    case Kind::kAllocate:
      return Fresh(type, fresh_kind, where, fresh_form, step);
    case Kind::kMaybeView:
      return Value{Union(args, Fresh(type, fresh_kind, where, fresh_form, step).roots), nullptr};
    case Kind::kView:
      if (effect.source >= 0 && effect.source < static_cast<int64_t>(call_args.size())) {
        return Value{Eval(call_args[effect.source], step, where).roots, nullptr};
      }
      return Opaque(args, where, step);
    case Kind::kUse:
      return {};
    case Kind::kInplace: {
      std::optional<Tuple> tuple =
          call_args.size() > 1 ? As<Tuple>(call_args[1]) : std::optional<Tuple>();
      if (!tuple) return Opaque(args, where, step);
      Array<ObjectRef> fields = tuple->fields();
      auto output = [&](int64_t index, const ObjectRef& output_type) -> Value {
        if (index < 0)
          return Fresh(output_type, RootKind::kAllocated, where, OriginForm::kResultOf, step);
        if (index >= static_cast<int64_t>(fields.size())) return Opaque(args, where, step);
        return Eval(fields[index], step, where);
      };
      const std::vector<int64_t>& indices = effect.inplace_indices;
      std::optional<TupleType> outputs = As<TupleType>(type);
      if (!outputs) return output(indices[0], type);
      std::vector<Value> values;
      Array<ObjectRef> output_types = outputs->fields();
      for (size_t i = 0; i < output_types.size(); ++i) {
        values.push_back(i < indices.size() ? output(indices[i], output_types[i])
                                            : Opaque(args, where, step));
      }
      return TupleOf(std::move(values));
    }
    case Kind::kOpaque:
      return Opaque(args, calls_op ? where : Where("the call at " + Text(where)), step);
  }
  return Opaque(args, where, step);
}

Value StorageFlow::StepValue(int64_t index, const MemoryEffect* effect) {
  const Step& step = steps_[index];
  Where where = Where::BindingOf(index);
  if (step.kind == Step::Kind::kIfResult) {
    return Join(Eval(step.true_result, index, where), Eval(step.false_result, index, where));
  }
  if (effect != nullptr) return CallResult(Call(step.expr), *effect, index, where);
  return Eval(step.expr, index, where);
}

std::shared_ptr<FunctionFlow> FollowStorage(const Function& func,
                                            std::shared_ptr<const std::vector<Step>> steps,
                                            MemoryEffects* classifier) {
  auto flow = std::make_shared<FunctionFlow>(std::move(steps));
  StorageFlow& values = flow->values;
  for (const ObjectRef& param : func.params()) {
    values.Define(param, Value{{values.NewRoot(RootKind::kParam, "a parameter", -1)}, nullptr});
  }
  const std::vector<Step>& points = *flow->steps;
  flow->effects.resize(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    const Step& step = points[i];
    if (step.kind != Step::Kind::kBinding && step.kind != Step::Kind::kIfResult) continue;
    std::optional<Call> call =
        step.kind == Step::Kind::kBinding ? As<Call>(step.expr) : std::nullopt;
    const MemoryEffect* effect =
        call ? &*(flow->effects[i] = classifier->Classify(*call)) : nullptr;
    values.Define(step.var, values.StepValue(static_cast<int64_t>(i), effect));
  }
  return flow;
}

namespace {

RootSet RootSetOf(const tvm::ffi::Array<int64_t>& ids) {
  RootSet set;
  for (int64_t id : ids) set.push_back(static_cast<RootId>(id));
  return set;
}

tvm::ffi::Array<int64_t> IdsOf(const RootSet& set) {
  tvm::ffi::Array<int64_t> ids;
  for (RootId id : set) ids.push_back(id);
  return ids;
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  // Root sets alone, for property tests: two sorted sets built root by root; their union read
  // back after it is moved into a new set, moved over a set of three roots (on the heap) and
  // copied; the sizes the moves left behind; and whether the two sets intersect.
  tvm::ffi::reflection::GlobalDef().def(
      "tvm_memplan.testing.root_set_union",
      [](tvm::ffi::Array<int64_t> a, tvm::ffi::Array<int64_t> b) {
        RootSet x = RootSetOf(a), y = RootSetOf(b);
        RootSet joined = Union(x, y);
        RootSet moved = std::move(joined);
        RootSet over{0, 1, 2};
        over = std::move(moved);
        RootSet copied;
        copied = over;
        // What the moves left behind, read on purpose: NOLINT(bugprone-use-after-move)
        tvm::ffi::Array<int64_t> left{static_cast<int64_t>(joined.size()),
                                      static_cast<int64_t>(moved.size())};
        return tvm::ffi::Array<tvm::ffi::Any>{IdsOf(copied), left, Intersects(x, y)};
      });
}

}  // namespace relax
}  // namespace tvm_memplan
