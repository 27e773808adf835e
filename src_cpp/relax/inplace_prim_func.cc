/*!
 * \file relax/inplace_prim_func.cc
 * \brief The access proof for writing a PrimFunc's output into one of its inputs: the accesses
 *        are collected in one walk, then each (input load, output store) pair is proven apart.
 */
#include "relax/inplace_prim_func.h"

#include <tvm/ffi/extra/structural_equal.h>
#include <tvm/ffi/extra/structural_visit.h>

#include <algorithm>
#include <map>
#include <utility>

#include "ir/rewriter.h"
#include "ir/scopes.h"
#include "ir/visitor.h"
#include "relax/ir_names.h"

namespace tvm_memplan {
namespace relax {

namespace {

/*!
 * \brief Whether loops bound to `tag` are a hardware index: within one kernel, all loops of one
 *        such tag are the same index. Virtual threads are serialized by InjectVirtualThread, so
 *        their loops are ordinary (unordered) loops here.
 */
bool IsHardwareTag(const std::string& tag) {
  return !tag.empty() && !StartsWith(tag, thread_tag::kVThread) && tag != thread_tag::kCThread;
}

/*!
 * \brief Whether `input` can stand for `output`: the same type, or default row-major layouts of
 *        provably equal shapes (`n + n` and `n * 2`) and otherwise the same type.
 */
bool SameBufferType(const Buffer& input, const Buffer& output) {
  if (ffi::StructuralEqual::Equal(input.type(), output.type())) return true;
  Array<ObjectRef> in_shape = input.shape(), out_shape = output.shape();
  if (in_shape.size() != out_shape.size()) return false;
  Analyzer analyzer;
  for (size_t d = 0; d < in_shape.size(); ++d) {
    if (!analyzer.CanProveEqual(in_shape[d], out_shape[d])) return false;
  }
  std::optional<Buffer> reshaped = input.WithShape(out_shape);
  return reshaped && ffi::StructuralEqual::Equal(reshaped->type(), output.type());
}

ObjectRef Conjunction(const std::vector<ObjectRef>& conditions) {
  ObjectRef all = BoolConst(true);
  for (const ObjectRef& c : conditions) all = And(all, c);
  return all;
}

/*! \brief Whether `stmt` holds a `while` loop (the walk does not treat it as a loop). */
bool ContainsWhile(const ObjectRef& stmt) {
  Optional<ffi::VisitInterrupt> found =
      ffi::StructuralVisit(stmt,
                           [](const ObjectRef& node,
                              ffi::StructuralVisitorObj* engine) -> Optional<ffi::VisitInterrupt> {
                             if (!node.defined() || IsVar(node) || IsTypeNode(node))
                               return std::nullopt;
                             if (Is<While>(node)) return ffi::VisitInterrupt();
                             return engine->DefaultVisitExpected(node).value();
                           });
  return found.has_value();
}

/*! \brief One load of the input or store to the output, where it happens. */
struct Access {
  /*! \brief Position in program order (the walk's order of access events). */
  int64_t order = 0;
  /*! \brief The store the access is part of (its number in the walk), or -1. */
  int64_t statement = -1;
  std::vector<LoopScope> loops;
  /*! \brief Indices and conditions with block iteration vars replaced by their bindings. */
  Array<ObjectRef> indices;
  std::vector<ObjectRef> conditions;
  /*! \brief The outermost loop bound to a hardware thread (the kernel), or null. */
  const Object* kernel = nullptr;
};

/*! \brief Collects the accesses of the input and the output, and what rules them out. */
class AccessCollector : public ScopedVisitor {
 public:
  AccessCollector(Analyzer* analyzer, std::vector<Buffer> inputs, const Buffer& output)
      : ScopedVisitor(analyzer), inputs_(std::move(inputs)), output_(output) {}

  std::vector<Access> loads, stores;
  std::optional<std::string> failure;
  /*! \brief Per kernel, per hardware tag, the extents of the loops bound to it. */
  std::map<const Object*, std::map<std::string, std::vector<ObjectRef>>> kernel_tags;

 private:
  bool IsInput(const Buffer& buffer) const {
    return std::any_of(inputs_.begin(), inputs_.end(),
                       [&](const Buffer& input) { return input.same_as(buffer); });
  }
  bool IsInputOrOutput(const Buffer& buffer) const {
    return IsInput(buffer) || buffer.same_as(output_);
  }

  void Fail(const std::string& why) {
    if (!failure) failure = why;
  }

  /*! \brief Records the thread tags of the enclosing kernel; returns the kernel. */
  const Object* NoteKernel() {
    const Object* kernel = nullptr;
    for (const LoopScope& loop : loops()) {
      if (!IsHardwareTag(loop.thread_tag)) continue;
      if (kernel == nullptr) kernel = loop.node.get();
      kernel_tags[kernel][loop.thread_tag].push_back(loop.extent);
    }
    return kernel;
  }

  Access Here(const Array<ObjectRef>& indices) {
    Access access;
    access.order = ++order_;
    access.statement = store_depth_ > 0 ? current_store_ : -1;
    access.loops = loops();
    access.kernel = NoteKernel();
    for (const ObjectRef& index : indices) access.indices.push_back(Resolve(index));
    for (const ObjectRef& condition : conditions()) {
      access.conditions.push_back(Resolve(condition));
    }
    return access;
  }

  /*! \brief `expr` with the iteration vars of the enclosing blocks replaced by their values. */
  ObjectRef Resolve(const ObjectRef& expr) const {
    return resolved_.empty() ? expr : Substitute(expr, resolved_);
  }

  void OnBlockEnter(const SBlockRealize& realize) override {
    Array<ObjectRef> iter_vars = realize.block().iter_vars();
    Array<ObjectRef> values = realize.iter_values();
    std::vector<ObjectRef> bound;
    for (size_t i = 0; i < iter_vars.size() && i < values.size(); ++i) {
      ObjectRef var = IterVar(iter_vars[i]).var().ref();
      resolved_.Set(var, Resolve(values[i]));
      bound.push_back(var);
    }
    blocks_.push_back(Block{realize, std::move(bound)});
  }
  void OnBlockExit(const SBlockRealize& /*realize*/) override {
    for (const ObjectRef& var : blocks_.back().iter_vars) resolved_.erase(var);
    blocks_.pop_back();
  }

  void OnStore(const BufferStore& store) override {
    current_store_ = ++num_stores_;
    ++store_depth_;
    if (IsInput(store.buffer())) return Fail("the PrimFunc writes its input");
    if (!store.buffer().same_as(output_)) {
      NoteKernel();
      return;
    }
    if (!blocks_.empty() && blocks_.back().realize.block().init().defined()) {
      return Fail("the output is written by a reduction");
    }
    stores.push_back(Here(store.indices()));
  }
  void OnStoreExit(const BufferStore& /*store*/) override { --store_depth_; }

  void OnLoad(const BufferLoad& load) override {
    if (load.buffer().same_as(output_)) return Fail("the PrimFunc reads its output");
    if (!IsInput(load.buffer())) {
      NoteKernel();
      return;
    }
    loads.push_back(Here(load.indices()));
  }

  void OnCall(const Call& call) override {
    NoteKernel();
    if (TakesBufferAddress(call)) {
      Fail("the PrimFunc takes a buffer's address (" + call.op_name() + ")");
    }
    // A buffer passed whole (to an extern or packed function) is read and written unseen.
    for (const ObjectRef& arg : call.args()) {
      if (IsVar(arg) && Is<Buffer>(arg) && IsInputOrOutput(Buffer(arg))) {
        Fail("the PrimFunc passes " + Quoted(Buffer(arg).name()) + " to a call");
      }
    }
  }

  void OnMatchBuffer(const MatchBufferRegion& match, const SBlock& /*block*/) override {
    Buffer source = match.source().buffer();
    if (IsInputOrOutput(source)) Fail("a block matches a sub-buffer of " + Quoted(source.name()));
  }

  void OnAllocation(const AllocationSite& site) override {
    if (site.kind != AllocationSite::Kind::kDeclBuffer) return;
    std::optional<Buffer> viewed = DeclBuffer(site.node).viewed_buffer();
    if (viewed && IsInputOrOutput(*viewed)) {
      Fail("the PrimFunc declares a view of " + Quoted(viewed->name()));
    }
  }

  struct Block {
    SBlockRealize realize;
    std::vector<ObjectRef> iter_vars;
  };
  std::vector<Buffer> inputs_;
  Buffer output_;
  std::vector<Block> blocks_;
  Map<ObjectRef, ObjectRef> resolved_;
  int64_t order_ = 0;
  int64_t num_stores_ = 0;
  int64_t current_store_ = -1;
  int store_depth_ = 0;
};

/*! \brief A coordinate of a statement's instances: a loop, or a hardware thread index. */
struct Coord {
  ObjectRef var, min, extent;
};

/*! \brief An access over its coordinates. */
struct Frame {
  std::vector<Coord> coords;
  Array<ObjectRef> indices;
  ObjectRef predicate;
  /*! \brief The thread indices of the access's kernel (a subset of coords). */
  std::vector<ObjectRef> thread_coords;
};

/*! \brief The proof of rules 1-3 (see the header) over the collected accesses. */
class ConflictProof {
 public:
  ConflictProof(const AccessCollector& accesses, std::string input)
      : accesses_(accesses), input_(std::move(input)) {}

  std::optional<std::string> Run() {
    for (const Access& store : accesses_.stores) {
      std::optional<Inverse> inverse = Invert(store);
      if (!inverse) return failure_;
      for (const Access& load : accesses_.loads) {
        if (std::optional<std::string> why = CheckPair(load, store, *inverse)) return why;
      }
    }
    return std::nullopt;
  }

 private:
  /*! \brief The index of the hardware thread `tag` of `kernel`, one var per kernel and tag. */
  ObjectRef ThreadVar(const Object* kernel, const std::string& tag, const ObjectRef& like) {
    auto key = std::make_pair(kernel, tag);
    auto it = thread_vars_.find(key);
    if (it != thread_vars_.end()) return it->second;
    return thread_vars_.emplace(key, MakeScalarVar(tag, DTypeOf(like))).first->second;
  }

  /*!
   * \brief The coordinate of an ordinary loop: its var, or a var counting from 0 when the loop
   *        does not (the iter-map inverse is taken over zero-based iterators).
   */
  ObjectRef LoopVar(const LoopScope& loop) {
    std::optional<int64_t> min = AsConstInt(loop.min);
    if (min && *min == 0) return loop.var;
    auto it = zero_based_.find(loop.var.get());
    if (it != zero_based_.end()) return it->second;
    ObjectRef var = MakeScalarVar(Var(loop.var).name(), DTypeOf(loop.var));
    keep_alive_.push_back(loop.var);
    return zero_based_.emplace(loop.var.get(), var).first->second;
  }

  /*! \brief The smallest of `extents` (constant when they all are). */
  static ObjectRef Smallest(const std::vector<ObjectRef>& extents, bool largest = false) {
    ObjectRef best = extents[0];
    for (size_t i = 1; i < extents.size(); ++i) {
      best = largest ? Max(best, extents[i]) : Min(best, extents[i]);
    }
    return best;
  }

  Frame MakeFrame(const Access& access) {
    Frame frame;
    Map<ObjectRef, ObjectRef> to_thread;
    if (access.kernel != nullptr) {
      for (const auto& [tag, kernel_extents] : accesses_.kernel_tags.at(access.kernel)) {
        std::vector<ObjectRef> extents;
        ObjectRef thread;
        for (const LoopScope& loop : access.loops) {
          if (loop.thread_tag != tag) continue;
          thread = ThreadVar(access.kernel, tag, loop.var);
          to_thread.Set(loop.var, Add(thread, loop.min));
          extents.push_back(loop.extent);
        }
        // No loop binds the tag: the statement runs in every thread of it.
        if (extents.empty()) thread = ThreadVar(access.kernel, tag, kernel_extents[0]);
        ObjectRef extent =
            extents.empty() ? Smallest(kernel_extents, /*largest=*/true) : Smallest(extents);
        frame.coords.push_back(Coord{thread, IntConst(extent, 0), extent});
        frame.thread_coords.push_back(thread);
      }
    }
    for (const LoopScope& loop : access.loops) {
      if (IsHardwareTag(loop.thread_tag)) continue;
      ObjectRef coord = LoopVar(loop);
      if (!coord.same_as(loop.var)) to_thread.Set(loop.var, Add(coord, loop.min));
      frame.coords.push_back(Coord{coord, IntConst(loop.extent, 0), loop.extent});
    }
    auto canonical = [&](const ObjectRef& expr) {
      return to_thread.empty() ? expr : Substitute(expr, to_thread);
    };
    for (const ObjectRef& index : access.indices) frame.indices.push_back(canonical(index));
    frame.predicate = canonical(Conjunction(access.conditions));
    return frame;
  }

  /*! \brief W's coordinates as expressions of the element it writes (one var per dimension). */
  struct Inverse {
    Frame frame;
    std::vector<ObjectRef> element;
    Map<ObjectRef, ObjectRef> coords;
  };

  std::optional<Inverse> Invert(const Access& store) {
    Inverse inverse;
    inverse.frame = MakeFrame(store);
    const Frame& frame = inverse.frame;
    Map<ObjectRef, ObjectRef> iters;
    for (const Coord& c : frame.coords) iters.Set(c.var, MakeRange(c.min, c.extent));
    Analyzer analyzer;
    std::optional<Array<ObjectRef>> sums =
        analyzer.DetectIterMap(frame.indices, iters, frame.predicate, /*require_bijective=*/true);
    // A predicate the iter-map analysis cannot read: injective on all iterations is enough.
    if (!sums) {
      sums = analyzer.DetectIterMap(frame.indices, iters, BoolConst(true), true);
    }
    const std::string not_once =
        "the output is not written once per element (its indices are not a one-to-one map of "
        "the loops and threads around the store)";
    if (!sums) {
      failure_ = not_once;
      return std::nullopt;
    }
    Array<ObjectRef> outputs;
    for (size_t k = 0; k < frame.indices.size(); ++k) {
      inverse.element.push_back(MakeScalarVar("e" + std::to_string(k), DTypeOf(frame.indices[k])));
      outputs.push_back(inverse.element.back());
    }
    Map<ObjectRef, ObjectRef> map = analyzer.InverseIterMap(*sums, outputs);
    for (const Coord& c : frame.coords) {
      auto found = map.find(c.var);
      if (found != map.end()) {
        inverse.coords.Set(c.var, (*found).second);
      } else if (analyzer.CanProveEqual(c.extent, IntConst(c.extent, 1))) {
        inverse.coords.Set(c.var, c.min);  // a trivial loop: its one value
      } else {
        failure_ = not_once;
        return std::nullopt;
      }
    }
    return inverse;
  }

  std::optional<std::string> CheckPair(const Access& load, const Access& store,
                                       const Inverse& inverse) {
    bool same_statement = load.statement >= 0 && load.statement == store.statement;
    if (!same_statement && load.order > store.order) {
      return input_ + " is read after the output is written";
    }
    Frame frame = MakeFrame(load);
    // The coordinates both share: every coordinate of one statement; else the loops around
    // both, and every thread index of a kernel that runs both.
    std::vector<ObjectRef> shared;
    if (same_statement) {
      for (const Coord& c : inverse.frame.coords) shared.push_back(c.var);
    } else {
      if (load.kernel != nullptr && load.kernel == store.kernel) shared = frame.thread_coords;
      for (size_t i = 0; i < load.loops.size() && i < store.loops.size(); ++i) {
        if (!load.loops[i].node.same_as(store.loops[i].node)) break;
        if (!IsHardwareTag(load.loops[i].thread_tag)) shared.push_back(LoopVar(load.loops[i]));
      }
    }
    if (shared.empty()) return std::nullopt;  // program order: the load's statement runs first
    Map<ObjectRef, ObjectRef> element;
    for (size_t k = 0; k < inverse.element.size(); ++k) {
      if (DTypeOf(frame.indices[k]) != DTypeOf(inverse.element[k])) {
        return input_ + " and the output are indexed with different integer types";
      }
      element.Set(inverse.element[k], frame.indices[k]);
    }
    Analyzer analyzer;
    for (const Coord& c : frame.coords) analyzer.BindRange(c.var, c.min, c.extent);
    Analyzer::ConstraintScope assume(&analyzer, frame.predicate);
    for (const ObjectRef& coord : shared) {
      ObjectRef recovered = Substitute(inverse.coords.at(coord), element);
      if (analyzer.CanProveEqual(analyzer.Simplify(recovered), coord)) continue;
      if (same_statement) {
        return "the statement writing the output reads " + input_ +
               " at another element than it writes";
      }
      return "a statement reading " + input_ +
             " shares loops or threads with the statement writing the output and may read an "
             "element that another iteration writes";
    }
    return std::nullopt;
  }

  const AccessCollector& accesses_;
  std::string input_;
  std::optional<std::string> failure_;
  std::map<std::pair<const Object*, std::string>, ObjectRef> thread_vars_;
  std::map<const Object*, ObjectRef> zero_based_;
  std::vector<ObjectRef> keep_alive_;  // loop vars keyed by address in zero_based_
};

}  // namespace

std::optional<std::string> CheckInplacePrimFunc(const PrimFunc& prim_func,
                                                const std::vector<int64_t>& inputs) {
  Array<ObjectRef> params = prim_func.params();
  std::vector<Buffer> buffers;
  for (int64_t input : inputs) {
    if (input < 0 || input + 1 >= static_cast<int64_t>(params.size()) ||
        !Is<Buffer>(params[input])) {
      return "the PrimFunc's parameters are not the expected buffers";
    }
    buffers.push_back(Buffer(params[input]));
  }
  if (buffers.empty() || !Is<Buffer>(params[params.size() - 1])) {
    return "the PrimFunc's parameters are not the expected buffers";
  }
  Buffer output(params[params.size() - 1]);
  for (const Buffer& input : buffers) {
    if (!SameBufferType(input, output)) {
      return "the input and output buffers differ in shape, dtype or layout";
    }
  }
  if (ContainsWhile(prim_func.body())) {
    return "the PrimFunc has a `while` loop, whose body may run any number of times";
  }
  Analyzer analyzer;
  AccessCollector accesses(&analyzer, buffers, output);
  accesses.Run(prim_func);
  if (accesses.failure) return accesses.failure;
  if (accesses.stores.empty()) return "the PrimFunc does not write its output";
  return ConflictProof(accesses, Quoted(buffers[0].name())).Run();
}

bool HasThreadBindings(const PrimFunc& prim_func) {
  class Finder : public ScopedVisitor {
   public:
    using ScopedVisitor::ScopedVisitor;
    bool found = false;

   private:
    void Note() {
      for (const LoopScope& loop : loops()) found |= IsHardwareTag(loop.thread_tag);
    }
    void OnStore(const BufferStore& /*store*/) override { Note(); }
    void OnLoad(const BufferLoad& /*load*/) override { Note(); }
    void OnCall(const Call& /*call*/) override { Note(); }
  };
  Analyzer analyzer;
  Finder finder(&analyzer);
  finder.Run(prim_func);
  return finder.found;
}

}  // namespace relax
}  // namespace tvm_memplan
