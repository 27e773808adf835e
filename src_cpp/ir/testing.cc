/*!
 * \file ir/testing.cc
 * \brief Hooks that expose each piece of the IR access layer to Python tests
 *        (`tvm_memplan.testing.*`). They are thin: each one drives one layer API on IR that a
 *        test writes in TVMScript and returns plain values to assert on.
 */
#include <tvm/ffi/reflection/registry.h>

#include <algorithm>
#include <sstream>

#include "ir/analyzer.h"
#include "ir/node_kind.h"
#include "ir/pass.h"
#include "ir/relax.h"
#include "ir/rewriter.h"
#include "ir/visitor.h"

namespace tvm_memplan {
namespace ir {
namespace {

using namespace schema;

Map<String, Any> DescribeBuffer(ObjectRef var) {
  Buffer buffer(var, "describe_buffer");
  Map<String, Any> out;
  out.Set("name", String(buffer.name()));
  out.Set("dtype", String(DTypeToString(buffer.dtype())));
  out.Set("shape", buffer.shape());
  out.Set("scope", String(buffer.scope()));
  out.Set("num_elements", buffer.ConstNumElements() ? Any(*buffer.ConstNumElements()) : Any());
  out.Set("size_bytes", buffer.ConstSizeBytes() ? Any(*buffer.ConstSizeBytes()) : Any());
  out.Set("layout", buffer.layout());
  return out;
}

/*! \brief Replace buffer `name` everywhere by a buffer of `shape`, shifting indices by `offsets`.
 */
PrimFunc ReshapeBuffer(PrimFunc func, String name, Array<ObjectRef> shape,
                       Array<ObjectRef> offsets) {
  std::optional<Buffer> target;
  class Finder : public ScopedVisitor {
   public:
    Finder(Analyzer* a, String name, std::optional<Buffer>* out)
        : ScopedVisitor(a), name_(name), out_(out) {}
    void OnAllocation(const AllocationSite& site) override {
      if (site.buffer.name() == std::string(name_)) *out_ = site.buffer;
    }
    String name_;
    std::optional<Buffer>* out_;
  };
  Analyzer analyzer;
  Finder(&analyzer, name, &target).Run(func);
  if (!target) TVM_FFI_THROW(ValueError) << "no buffer named `" << name << "` is defined";
  std::optional<Buffer> reshaped = target->WithShape(shape);
  if (!reshaped) TVM_FFI_THROW(ValueError) << "buffer `" << name << "` has a non-default layout";
  auto shift = [&](const Array<ObjectRef>& indices) {
    Array<ObjectRef> out;
    for (size_t d = 0; d < indices.size(); ++d) {
      out.push_back(d < offsets.size() ? analyzer.Simplify(Sub(indices[d], offsets[d]))
                                       : indices[d]);
    }
    return out;
  };
  Rewriter rewriter;
  rewriter.RemapVar(target->ref(), reshaped->ref());
  rewriter.PostOrder<BufferStore>([&](const BufferStore& store) -> ObjectRef {
    if (!store.buffer().same_as(*reshaped)) return store;
    return store.WithAccess(store.buffer(), shift(store.indices()));
  });
  rewriter.PostOrder<BufferLoad>([&](const BufferLoad& load) -> ObjectRef {
    if (!load.buffer().same_as(*reshaped)) return load;
    return load.WithAccess(load.buffer(), shift(load.indices()));
  });
  return PrimFunc(rewriter(func));
}

/*! \brief A log of the ScopedVisitor's events, one line each. */
class EventLog : public ScopedVisitor {
 public:
  EventLog(Analyzer* analyzer, bool skip_unreachable)
      : ScopedVisitor(analyzer, Options{skip_unreachable}) {}
  Array<String> lines;

 private:
  std::string Context() const {
    std::ostringstream os;
    os << " loops=[";
    for (size_t i = 0; i < loops().size(); ++i) {
      const LoopScope& loop = loops()[i];
      os << (i ? " " : "") << Var(loop.var).name();
      if (!loop.thread_tag.empty()) os << ":" << loop.thread_tag;
    }
    os << "] conds=" << conditions().size();
    return os.str();
  }
  void Log(const std::string& line) { lines.push_back(line); }
  void OnAllocation(const AllocationSite& site) override {
    Log("alloc " + site.buffer.name() + " depth=" + std::to_string(site.loop_depth) + Context());
  }
  void OnAllocationEnd(const AllocationSite& site) override { Log("end " + site.buffer.name()); }
  void OnLoad(const BufferLoad& load) override { Log("load " + load.buffer().name() + Context()); }
  void OnStore(const BufferStore& store) override {
    Log("store " + store.buffer().name() + Context());
  }
  void OnBlockEnter(const SBlockRealize& realize) override {
    Log("block " + realize.block().name_hint() + Context());
  }
  void OnMatchBuffer(const MatchBufferRegion& match, const SBlock& /*block*/) override {
    Log("match " + match.buffer().name() + " <- " + match.source().buffer().name());
  }
  void OnBind(const Bind& bind) override { Log("bind " + bind.var().name() + Context()); }
};

/*!
 * \brief At each store: every enclosing loop as `var in [min, min + extent)`, and whether the
 *        analyzer (bindings passed lazily) proves each index inside the buffer's shape.
 */
class StoreFacts : public ScopedVisitor {
 public:
  StoreFacts(Analyzer* analyzer, bool forget_finished_scopes)
      : ScopedVisitor(analyzer, Options{/*skip_unreachable=*/false, forget_finished_scopes}) {}
  Array<String> lines;

 private:
  void OnStore(const BufferStore& store) override {
    std::ostringstream os;
    os << store.buffer().name();
    for (const LoopScope& loop : loops()) {
      os << " " << Var(loop.var).name() << "=[" << ToString(loop.min) << ", "
         << ToString(Add(loop.min, loop.extent)) << ")";
    }
    Array<ObjectRef> indices = store.indices(), shape = store.buffer().shape();
    bool in_bounds = true;
    for (size_t d = 0; d < indices.size() && d < shape.size(); ++d) {
      in_bounds &= analyzer()->CanProve(GE(indices[d], IntConst(indices[d], 0))) &&
                   analyzer()->CanProve(LT(indices[d], shape[d]));
    }
    os << (in_bounds ? " in bounds" : " unproven");
    lines.push_back(os.str());
  }
};

Array<String> VisitEvents(PrimFunc func, bool skip_unreachable) {
  Analyzer analyzer;
  EventLog log(&analyzer, skip_unreachable);
  log.Run(func);
  return log.lines;
}

Array<String> StoreFactsOf(PrimFunc func, bool forget_finished_scopes) {
  Analyzer analyzer;
  StoreFacts facts(&analyzer, forget_finished_scopes);
  facts.Run(func);
  return facts.lines;
}

/*!
 * \brief The stores of `func` that write distinct vector lanes to one address: an index that is
 *        a broadcast, a value that is not (what VectorizeLoop makes of a buffer whose lanes were
 *        given one element).
 */
Array<ObjectRef> LanesStoredToOneAddress(PrimFunc func) {
  class Finder : public ScopedVisitor {
   public:
    using ScopedVisitor::ScopedVisitor;
    void OnStore(const BufferStore& store) override {
      if (As<Broadcast>(store.value())) return;
      Array<ObjectRef> indices = store.indices();
      if (std::any_of(indices.begin(), indices.end(),
                      [](const ObjectRef& index) { return As<Broadcast>(index).has_value(); })) {
        stores.push_back(store.ref());
      }
    }
    Array<ObjectRef> stores;
  };
  Analyzer analyzer;
  Finder finder(&analyzer);
  finder.Run(func);
  return finder.stores;
}

/*! \brief Analyzer hooks: bind each var to [0, extent), then query. */
Analyzer BoundAnalyzer(const Map<ObjectRef, ObjectRef>& extents) {
  Analyzer analyzer;
  for (const auto& [var, extent] : extents) analyzer.BindRange(var, IntConst(extent, 0), extent);
  return analyzer;
}

Array<Any> RelaxBounds(ObjectRef expr, Map<ObjectRef, ObjectRef> extents,
                       Array<ObjectRef> relaxed) {
  Analyzer analyzer = BoundAnalyzer(extents);
  std::vector<std::pair<ObjectRef, Interval>> dom;
  for (const ObjectRef& var : relaxed) {
    ObjectRef extent = extents.at(var);
    dom.push_back({var, Interval{IntConst(extent, 0), Sub(extent, IntConst(extent, 1))}});
  }
  Interval interval = analyzer.Relax(expr, dom);
  return {interval.min ? Any(*interval.min) : Any(), interval.max ? Any(*interval.max) : Any()};
}

ObjectRef MarkVisitedPass(String name) {
  return MakePrimFuncPass(name.c_str(), 0, [](PrimFunc func, IRModule, ObjectRef ctx) {
    Any value = Any(true);
    if (std::optional<Any> configured = PassConfigValue(ctx, config::DisableVectorize)) {
      value = *configured;
    }
    return PrimFunc(WithFuncAttr(func, "tvm_memplan.visited", value));
  });
}

ObjectRef DropFunctionsPass(String keep) {
  return MakeModulePass("tvm_memplan.testing.DropFunctions", 0, [keep](IRModule mod, ObjectRef) {
    Map<ObjectRef, ObjectRef> kept;
    for (const auto& [gv, func] : mod.functions()) {
      if (GlobalVarName(gv) == std::string(keep)) kept.Set(gv, func);
    }
    return mod.WithFunctions(kept);
  });
}

Array<Any> RelaxBindings(ObjectRef func) {
  relax::Function f(func, "relax_bindings");
  Array<Any> out;
  relax::SeqExpr seq(f.body(), "Function.body");
  for (const ObjectRef& b : seq.blocks()) {
    relax::BindingBlock block(b);
    for (const ObjectRef& item : block.bindings()) {
      relax::Binding binding(item);
      ObjectRef value = binding.value();
      std::string what = TypeKeyOf(value);
      if (std::optional<Call> call = As<Call>(value)) what = "call " + call->op_name();
      if (As<relax::Tuple>(value)) what = "tuple";
      if (std::optional<relax::TupleGetItem> get = As<relax::TupleGetItem>(value)) {
        what = "get " + std::to_string(get->index());
      }
      std::string shape;
      if (std::optional<relax::TensorType> t = As<relax::TensorType>(binding.var().type())) {
        if (auto dims = t->static_shape()) {
          for (size_t i = 0; i < dims->size(); ++i)
            shape += (i ? "x" : "") + std::to_string((*dims)[i]);
        }
      }
      out.push_back(String(binding.var().name() + (block.is_dataflow() ? " df " : " ") + what +
                           (shape.empty() ? "" : " " + shape)));
    }
  }
  return out;
}

const char* NodeKindName(NodeKind kind) {
  switch (kind) {
    case NodeKind::kOpaque:
      return "opaque";
    case NodeKind::kVar:
      return "var";
    case NodeKind::kConstant:
      return "constant";
    case NodeKind::kExpr:
      return "expr";
    case NodeKind::kStmt:
      return "stmt";
    case NodeKind::kArray:
      return "array";
    case NodeKind::kOther:
      return "other";
  }
  return "?";
}

Array<String> ChildStmts(ObjectRef stmt) {
  Array<String> kinds;
  ForEachChildStmt(stmt, [&](const ObjectRef& child) { kinds.push_back(TypeKeyOf(child)); });
  return kinds;
}

/*! \brief Each statement directly inside `stmt` replaced by `T.evaluate(0)`, except evaluates. */
ObjectRef ChildStmtsToEvaluate(ObjectRef stmt) {
  return MapChildStmts(stmt, [](const ObjectRef& child) -> ObjectRef {
    if (Is<Evaluate>(child)) return child;
    return MakeEvaluate(IntConst(DLDataType{kDLInt, 32, 1}, 0));
  });
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  namespace refl = tvm::ffi::reflection;
  refl::GlobalDef()
      .def("tvm_memplan.testing.describe_buffer", DescribeBuffer)
      .def("tvm_memplan.testing.reshape_buffer",
           [](ObjectRef func, String name, Array<ObjectRef> shape, Array<ObjectRef> offsets) {
             return ReshapeBuffer(PrimFunc(func, "reshape_buffer"), name, shape, offsets).ref();
           })
      .def("tvm_memplan.testing.substitute",
           [](ObjectRef expr, Map<ObjectRef, ObjectRef> vmap) { return Substitute(expr, vmap); })
      .def("tvm_memplan.testing.visit_events",
           [](ObjectRef func, bool skip_unreachable) {
             return VisitEvents(PrimFunc(func, "visit_events"), skip_unreachable);
           })
      .def("tvm_memplan.testing.simplify",
           [](ObjectRef expr, Map<ObjectRef, ObjectRef> extents) {
             return BoundAnalyzer(extents).Simplify(expr);
           })
      .def("tvm_memplan.testing.can_prove",
           [](ObjectRef cond, Map<ObjectRef, ObjectRef> extents) {
             return BoundAnalyzer(extents).CanProve(cond);
           })
      .def("tvm_memplan.testing.can_prove_under",
           [](ObjectRef cond, ObjectRef assumption, Map<ObjectRef, ObjectRef> extents) {
             Analyzer analyzer = BoundAnalyzer(extents);
             Analyzer::ConstraintScope assume(&analyzer, assumption);
             return analyzer.CanProve(cond);
           })
      .def("tvm_memplan.testing.const_bound",
           [](ObjectRef expr, Map<ObjectRef, ObjectRef> extents) {
             auto [lo, hi] = BoundAnalyzer(extents).ConstBound(expr);
             return Array<int64_t>{lo, hi};
           })
      .def("tvm_memplan.testing.relax_bounds", RelaxBounds)
      .def("tvm_memplan.testing.estimate_region",
           [](Array<ObjectRef> region, Map<ObjectRef, ObjectRef> extents, ObjectRef predicate,
              bool strict) -> Any {
             Map<ObjectRef, ObjectRef> dom;
             for (const auto& [var, extent] : extents) {
               dom.Set(var, MakeRange(IntConst(extent, 0), extent));
             }
             auto box = Analyzer().EstimateRegion(
                 region, dom, predicate,
                 strict ? Analyzer::RegionBound::kStrict : Analyzer::RegionBound::kUpper);
             if (!box) return Any();
             Array<Any> out;
             for (const Interval& i : *box) {
               out.push_back(Array<Any>{i.min ? Any(*i.min) : Any(), i.max ? Any(*i.max) : Any()});
             }
             return out;
           })
      .def("tvm_memplan.testing.lanes_stored_to_one_address",
           [](ObjectRef func) {
             return LanesStoredToOneAddress(PrimFunc(func, "lanes_stored_to_one_address"));
           })
      .def("tvm_memplan.testing.store_facts",
           [](ObjectRef func, bool forget_finished_scopes) {
             return StoreFactsOf(PrimFunc(func, "store_facts"), forget_finished_scopes);
           })
      .def("tvm_memplan.testing.with_shape",
           [](ObjectRef var, Array<ObjectRef> shape, Array<ObjectRef> strides) -> Any {
             std::optional<Buffer> out = Buffer(var, "with_shape").WithShape(shape, strides);
             return out ? Any(out->ref()) : Any();
           })
      .def("tvm_memplan.testing.detect_iter_map",
           [](Array<ObjectRef> indices, Map<ObjectRef, ObjectRef> extents) -> Any {
             Map<ObjectRef, ObjectRef> iters;
             for (const auto& [var, extent] : extents) {
               iters.Set(var, MakeRange(IntConst(extent, 0), extent));
             }
             Analyzer analyzer;
             auto sums = analyzer.DetectIterMap(indices, iters, BoolConst(true));
             return sums ? Any(*sums) : Any();
           })
      .def("tvm_memplan.testing.fold",
           [](String op, ObjectRef a, ObjectRef b) -> ObjectRef {
             std::string name = op;
             if (name == "add") return Add(a, b);
             if (name == "sub") return Sub(a, b);
             if (name == "mul") return Mul(a, b);
             if (name == "min") return Min(a, b);
             if (name == "max") return Max(a, b);
             if (name == "lt") return LT(a, b);
             if (name == "not") return Not(a);
             if (name == "cond") return AsCondition(a);
             TVM_FFI_THROW(ValueError) << "unknown op " << op;
             TVM_FFI_UNREACHABLE();
           })
      .def("tvm_memplan.testing.read_field",
           [](ObjectRef node, String type_key, String field) -> Any {
             TypeKey type(type_key.c_str());
             FieldKey key(type, field.c_str());
             return key.Get(node);
           })
      .def("tvm_memplan.testing.borrow_field",
           [](ObjectRef node, String type_key, String field) -> ObjectRef {
             TypeKey type(type_key.c_str());
             FieldKey key(type, field.c_str());
             const Object* held = key.Borrow(node.get());
             return held ? ffi::GetRef<ObjectRef>(held) : ObjectRef();
           })
      .def("tvm_memplan.testing.node_kind",
           [](AnyView value) { return String(NodeKindName(NodeKindOf(value.type_index()))); })
      .def("tvm_memplan.testing.child_stmts", ChildStmts)
      .def("tvm_memplan.testing.child_stmts_to_evaluate", ChildStmtsToEvaluate)
      .def("tvm_memplan.testing.mark_visited_pass", MarkVisitedPass)
      .def("tvm_memplan.testing.drop_functions_pass", DropFunctionsPass)
      .def("tvm_memplan.testing.relax_bindings", RelaxBindings);
}

}  // namespace ir
}  // namespace tvm_memplan
