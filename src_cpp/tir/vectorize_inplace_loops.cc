/*!
 * \file tir/vectorize_inplace_loops.cc
 * \brief VectorizeInplaceLoops: which functions it looks at, where each buffer's memory lies,
 *        the rule per loop, and the rewrite.
 */
#include "tir/vectorize_inplace_loops.h"

#include <tvm/ffi/extra/structural_equal.h>
#include <tvm/ffi/reflection/registry.h>

#include <unordered_map>
#include <unordered_set>

#include "ir/analyzer.h"
#include "ir/dump.h"
#include "ir/expr.h"
#include "ir/pass.h"
#include "ir/relax.h"
#include "ir/rewriter.h"
#include "ir/target.h"

namespace tvm_memplan {
namespace tir {

using namespace ir;

namespace {

/*! \brief TVM's CallEffectKind::kPure: a call that reads and writes no memory. */
constexpr int64_t kPureCall = 1;

/*! \brief Whether `target` lets LLVM compute vector code other than scalar code would (its
 *         `fast-math*` flags: estimates, reassociation). */
bool AllowsFastMath(const Target& target) {
  for (const auto& [key, value] : target.attrs()) {
    if (std::string(key).rfind("fast-math", 0) != 0) continue;
    if (auto flag = value.try_cast<bool>(); flag && *flag) return true;
    if (auto number = value.try_cast<int64_t>(); number && *number != 0) return true;
  }
  return false;
}

/*! \brief Whether the pass looks at `func`: compiled for an LLVM CPU target without fast-math
 *         (TVM's C backend prints no vector types), its parameters declared `tirx.noalias`. */
bool Applies(const PrimFunc& func) {
  std::optional<Any> target = FuncAttr(func.ref(), schema::attr::Target);
  if (!target) return false;
  std::optional<ObjectRef> object = target->try_cast<ObjectRef>();
  if (!object || !Target::Matches(*object)) return false;
  Target t(*object);
  if (t.kind_name() != "llvm" || !t.HasKey("cpu") || AllowsFastMath(t)) return false;
  return FuncFlag(func.ref(), schema::attr::NoAlias);
}

/*!
 * \brief The buffer whose memory each buffer var names: a DeclBuffer that views buffer B names
 *        B's memory, a parameter or an allocation its own. A DeclBuffer over any other pointer
 *        names memory nobody here knows (Of returns nullptr).
 */
class BufferRoots {
 public:
  explicit BufferRoots(const PrimFunc& func) {
    ForEachNode(func.body(), [&](const ObjectRef& node) {
      if (std::optional<DeclBuffer> decl = As<DeclBuffer>(node)) {
        std::optional<Buffer> viewed = decl->viewed_buffer();
        root_[decl->buffer().ref().get()] = viewed ? Of(*viewed) : nullptr;
      }
      return true;
    });
  }

  const Object* Of(const Buffer& buffer) const {
    auto it = root_.find(buffer.ref().get());
    return it == root_.end() ? buffer.ref().get() : it->second;
  }

 private:
  std::unordered_map<const Object*, const Object*> root_;
};

/*! \brief Why the value stored by `store` keeps `loop` serial, or nullopt (see the rule). */
std::optional<std::string> ValueRefusal(const BufferStore& store, const BufferRoots& roots) {
  const Object* written = roots.Of(store.buffer());
  if (written == nullptr)
    return "it writes " + store.buffer().name() + ", a view of unknown memory";
  bool reads_written = false;
  std::optional<std::string> refusal;
  ForEachNode(store.value(), [&](const ObjectRef& node) {
    if (std::optional<BufferLoad> load = As<BufferLoad>(node)) {
      const Object* root = roots.Of(load->buffer());
      if (root == nullptr) {
        refusal = "it reads " + load->buffer().name() + ", a view of unknown memory";
      } else if (root == written) {
        if (!load->buffer().same_as(store.buffer()) ||
            !ffi::StructuralEqual::Equal(load->indices(), store.indices())) {
          refusal = "it reads " + load->buffer().name() + " at other elements than it writes";
        }
        reads_written = true;
      }
    } else if (std::optional<Call> call = As<Call>(node)) {
      if (TakesBufferAddress(*call)) {
        refusal = "it takes the address of a buffer";
      } else if (!IsOpNode(call->op())) {
        refusal = "it calls a function";
      } else {
        Any kind = relax::OpAttr(call->op(), schema::attr::CallEffectKind);
        std::optional<int64_t> value;
        if (auto number = kind.try_cast<int64_t>()) {
          value = *number;
        } else if (auto imm = kind.try_cast<ObjectRef>()) {
          value = AsConstInt(*imm);
        }
        if (!value || *value > kPureCall) refusal = "it calls " + call->op_name() + ", not pure";
      }
    }
    if (!refusal && IsPrimExpr(node) && DTypeOf(node).lanes != 1) {
      refusal = "its value has a vector-typed part";
    }
    return !refusal;
  });
  if (refusal) return refusal;
  if (!reads_written) return "it does not read " + store.buffer().name() + " (not in place)";
  return std::nullopt;
}

/*! \brief Why `loop` (whose body is `store`) stays serial, or nullopt (see the rule). */
std::optional<std::string> LoopRefusal(const For& loop, const BufferStore& store,
                                       const BufferRoots& roots) {
  if (loop.kind() != ForKind::kSerial) return "not a serial loop";
  if (!loop.thread_tag().empty() || !loop.annotations().empty()) return "annotated";
  if (loop.step().defined() && AsConstInt(loop.step()) != 1) return "a step other than 1";
  if (AsConstInt(loop.min()) != 0) return "it does not start at 0";
  std::optional<int64_t> extent = AsConstInt(loop.extent());
  if (!extent || *extent < 2 || *extent > kMaxVectorizedLanes) {
    return "its extent is not a constant from 2 to " + std::to_string(kMaxVectorizedLanes);
  }
  DLDataType dtype = store.buffer().dtype();
  if (dtype.lanes != 1 || dtype.bits % 8 != 0 || dtype.code == kDLBool ||
      dtype.code == kDLOpaqueHandle) {
    return "it stores vectors, booleans, handles or elements of part bytes";
  }
  // Distinct indices are distinct elements only without strides (flattened TIR has none).
  if (!store.buffer().strides().empty()) return "the buffer it writes has strides";
  // Distinct iterations write distinct elements: each index moves by a constant with the loop
  // variable, one of them by a non-zero one.
  Analyzer analyzer;
  const ObjectRef& var = loop.loop_var().ref();
  Map<ObjectRef, ObjectRef> next;
  next.Set(var, Add(var, IntConst(var, 1)));
  bool moves = false;
  for (const ObjectRef& index : store.indices()) {
    std::optional<int64_t> step =
        AsConstInt(analyzer.Simplify(Sub(Substitute(index, next), index)));
    if (!step) return "an index it writes does not move by a constant with the loop";
    moves = moves || *step != 0;
  }
  if (!moves) return "every iteration writes the same element";
  return ValueRefusal(store, roots);
}

}  // namespace

PrimFunc VectorizeInplaceLoops(const PrimFunc& func, std::vector<LoopDecision>* decisions) {
  if (!Applies(func)) return func;
  BufferRoots roots(func);
  // VectorizeLoop leaves a vector loop inside another one as it is, which LLVM's code
  // generation then rejects: loops inside a vector loop stay serial.
  std::unordered_set<const Object*> inside_vector_loop;
  ForEachNode(func.body(), [&](const ObjectRef& node) {
    std::optional<For> loop = As<For>(node);
    if (loop && loop->kind() == ForKind::kVectorized) {
      ForEachNode(loop->body(), [&](const ObjectRef& inner) {
        if (Is<For>(inner)) inside_vector_loop.insert(inner.get());
        return true;
      });
    }
    return true;
  });
  Rewriter rewriter;
  rewriter.SkipExpressions().PostOrder<For>([&](const For& loop) -> ObjectRef {
    std::optional<BufferStore> store = As<BufferStore>(loop.body());
    if (!store) return loop.ref();
    std::optional<std::string> refusal = inside_vector_loop.count(loop.ref().get())
                                             ? "inside a vectorized loop"
                                             : LoopRefusal(loop, *store, roots);
    if (decisions) decisions->push_back({loop.loop_var().name(), refusal.value_or("")});
    return refusal ? loop.ref() : loop.WithKind(ForKind::kVectorized).ref();
  });
  return func.WithBody(rewriter(func.body()));
}

namespace {

IRModule Run(const IRModule& mod, const ObjectRef& /*pass_context*/) {
  PassDump dump("VectorizeInplaceLoops");
  dump.Write("input", mod.ref());
  std::string log;
  Map<ObjectRef, ObjectRef> functions;
  for (const auto& [global_var, base_func] : mod.functions()) {
    std::optional<PrimFunc> func = As<PrimFunc>(base_func);
    if (!func) {
      functions.Set(global_var, base_func);
      continue;
    }
    std::vector<LoopDecision> decisions;
    functions.Set(global_var, VectorizeInplaceLoops(*func, &decisions).ref());
    for (const LoopDecision& d : decisions) {
      log += GlobalVarName(global_var) + " loop " + d.loop_var + ": " +
             (d.refusal.empty() ? "vectorized" : "serial, " + d.refusal) + "\n";
    }
  }
  dump.Write("decisions", String(log));
  IRModule out = mod.WithFunctions(functions);
  dump.Write("output", out.ref());
  return out;
}

}  // namespace

ObjectRef VectorizeInplaceLoopsPass() {
  return MakeModulePass("tvm_memplan.VectorizeInplaceLoops", 0, Run);
}

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def("tvm_memplan.transform.VectorizeInplaceLoops",
                                        VectorizeInplaceLoopsPass);
}

}  // namespace tir
}  // namespace tvm_memplan
