/*!
 * \file relax/concat_prim_func.cc
 * \brief The access proof that a PrimFunc concatenates its inputs into slices of its output.
 */
#include "relax/concat_prim_func.h"

#include <tvm/ffi/reflection/registry.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_set>
#include <utility>

#include "ir/node_kind.h"
#include "ir/visitor.h"
#include "relax/ir_names.h"

namespace tvm_memplan {
namespace relax {

namespace {

bool ReadsBuffer(const ObjectRef& expr) {
  return !ForEachNode(expr, [](const ObjectRef& node) { return !Is<BufferLoad>(node); });
}

/*! \brief The condition of `value` when it is an `if_then_else` whose condition reads no
 *         buffer (a selection between its other two arguments). */
std::optional<Call> AsSelection(const ObjectRef& value) {
  std::optional<Call> call = As<Call>(value);
  if (!call || !call->IsOp(schema::op::IfThenElseExpr) || call->args().size() != 3 ||
      ReadsBuffer(call->args()[0])) {
    return std::nullopt;
  }
  return call;
}

/*! \brief Why `value` is not an `if_then_else` chain of input loads, or nullopt when it is. */
std::optional<std::string> CheckSelection(const ObjectRef& value) {
  if (std::optional<Call> call = As<Call>(value)) {
    if (!call->IsOp(schema::op::IfThenElseExpr) || call->args().size() != 3) {
      return "the stored value computes (" + call->op_name() + "), it does not only select";
    }
    if (ReadsBuffer(call->args()[0])) {
      return std::string("a condition of the stored value reads a buffer");
    }
    if (std::optional<std::string> why = CheckSelection(call->args()[1])) return why;
    return CheckSelection(call->args()[2]);
  }
  if (!Is<BufferLoad>(value)) return std::string("the stored value is not a load of an input");
  return std::nullopt;
}

/*! \brief A condition on the way to a leaf of an `if_then_else` chain: it holds, or its
 *         negation does. */
struct Condition {
  ObjectRef expr;
  bool negated = false;
};

std::vector<Condition> Holding(const std::vector<ObjectRef>& conditions) {
  std::vector<Condition> holding;
  for (const ObjectRef& c : conditions) holding.push_back({c, false});
  return holding;
}

/*! \brief [lo, hi] of `var` under `conditions`, each a comparison of `var` with a constant or
 *         the negation of one; nullopt when one is not, unless `others_widen`: then a condition
 *         that is not about `var` is left out (a range under fewer conditions is wider).
 *         (TVM's analyzer loses `v < 32` from `!(32 <= v)` when v <= 32 is known: it rewrites
 *         the condition to `v != 32`.) */
std::optional<std::pair<int64_t, int64_t>> IntervalUnder(const ObjectRef& var, int64_t lo,
                                                         int64_t hi,
                                                         const std::vector<Condition>& conditions,
                                                         bool others_widen = false) {
  using Kind = BinaryExpr::Kind;
  for (const Condition& held : conditions) {
    ObjectRef condition = held.expr;
    bool negated = held.negated;
    while (std::optional<ObjectRef> inner = AsNot(condition)) {
      condition = *inner;
      negated = !negated;
    }
    std::optional<BinaryExpr> cmp = AsBinary(condition);
    bool about_var = cmp && (cmp->a.same_as(var) || cmp->b.same_as(var));
    if (!about_var && others_widen) continue;
    if (!cmp) return std::nullopt;
    Kind kind = cmp->kind;
    std::optional<int64_t> constant;
    if (cmp->a.same_as(var)) {
      constant = AsConstInt(cmp->b);
    } else if (cmp->b.same_as(var)) {
      constant = AsConstInt(cmp->a);
      // c < v is v > c, ...
      kind = kind == Kind::kLT   ? Kind::kGT
             : kind == Kind::kLE ? Kind::kGE
             : kind == Kind::kGT ? Kind::kLT
             : kind == Kind::kGE ? Kind::kLE
                                 : kind;
    }
    if (!constant) return std::nullopt;
    if (negated) {
      kind = kind == Kind::kLT   ? Kind::kGE
             : kind == Kind::kLE ? Kind::kGT
             : kind == Kind::kGT ? Kind::kLE
             : kind == Kind::kGE ? Kind::kLT
             : kind == Kind::kEQ ? Kind::kNE
             : kind == Kind::kNE ? Kind::kEQ
                                 : kind;
    }
    int64_t c = *constant;
    switch (kind) {
      case Kind::kLT:
        hi = std::min(hi, c - 1);
        break;
      case Kind::kLE:
        hi = std::min(hi, c);
        break;
      case Kind::kGT:
        lo = std::max(lo, c + 1);
        break;
      case Kind::kGE:
        lo = std::max(lo, c);
        break;
      case Kind::kEQ:
        lo = std::max(lo, c);
        hi = std::min(hi, c);
        break;
      case Kind::kNE:
        if (c == lo) ++lo;
        if (c == hi) --hi;
        break;
      default:
        return std::nullopt;
    }
  }
  return std::make_pair(lo, hi);
}

/*! \brief What both proofs share: the inputs, the output, the first failure, and the one store
 *         that writes the output with the block it is the body of. */
class OutputCheck : public ScopedVisitor {
 public:
  OutputCheck(Analyzer* analyzer, std::vector<Buffer> inputs, Buffer output)
      : ScopedVisitor(analyzer), inputs_(std::move(inputs)), output_(std::move(output)) {}

 protected:
  void Fail(const std::string& why) {
    if (!failure_) failure_ = why;
  }

  /*! \brief Visits `func`: the first failure, or that nothing writes the output. */
  std::optional<std::string> Visit(const PrimFunc& func) {
    Run(func);
    if (failure_) return failure_;
    if (!store_) return std::string("the PrimFunc does not write its output");
    return std::nullopt;
  }

  /*! \brief Takes `store` as the output's one store, the whole body of the block entered last;
   *         false, with the failure, when another store wrote the output or the block does more. */
  bool TakeOutputStore(const BufferStore& store) {
    if (store_) {
      Fail("the output is written by more than one statement");
      return false;
    }
    store_ = store;
    if (!block_ || !block_->block().body().same_as(store.ref())) {
      Fail("the output is not written by a single-store block");
      return false;
    }
    return true;
  }

  void OnBlockEnter(const SBlockRealize& realize) override { block_ = realize; }

  void OnMatchBuffer(const MatchBufferRegion& /*match*/, const SBlock& /*block*/) override {
    Fail("a block matches a sub-buffer");
  }

  int InputIndex(const Buffer& buffer) const {
    for (size_t j = 0; j < inputs_.size(); ++j) {
      if (inputs_[j].same_as(buffer)) return static_cast<int>(j);
    }
    return -1;
  }

  /*! \brief A layout along `axis`, contiguous when every dimension before it is 1. */
  ConcatLayout LayoutAlong(int64_t axis) const {
    ConcatLayout layout;
    layout.axis = axis;
    Array<ObjectRef> shape = output_.shape();
    for (int64_t d = 0; d < axis && layout.contiguous; ++d) {
      if (AsConstInt(shape[d]) != 1) {
        layout.contiguous = false;
        layout.not_contiguous = "dimension " + std::to_string(d) + " before axis " +
                                std::to_string(axis) + " has extent " +
                                std::to_string(*AsConstInt(shape[d])) +
                                ", not 1: the slices are not contiguous";
      }
    }
    return layout;
  }

  /*! \brief The output's bytes between consecutive indices along `axis`. */
  int64_t BytesPerIndex(int64_t axis) const {
    Array<ObjectRef> shape = output_.shape();
    int64_t inner = DTypeBytes(output_.dtype());
    for (size_t d = axis + 1; d < shape.size(); ++d) inner *= *AsConstInt(shape[d]);
    return inner;
  }

  std::vector<Buffer> inputs_;
  Buffer output_;
  std::optional<std::string> failure_;
  std::optional<SBlockRealize> block_;
  std::optional<BufferStore> store_;
};

/*! \brief Reads the slices off the single block writing the output. */
class ConcatCheck : public OutputCheck {
 public:
  using OutputCheck::OutputCheck;

  std::variant<ConcatLayout, std::string> Check(const PrimFunc& func) {
    if (std::optional<std::string> failure = Visit(func)) return *failure;
    shifts_.resize(inputs_.size());
    std::optional<int64_t> axis;
    for (size_t j = 0; j < inputs_.size(); ++j) {
      if (shifts_[j].empty()) return "input " + Quoted(inputs_[j].name()) + " is never read";
      for (size_t d = 0; d < shifts_[j].size(); ++d) {
        if (shifts_[j][d] == 0) continue;
        if (axis && *axis != static_cast<int64_t>(d)) {
          return std::string("the inputs are shifted along more than one axis");
        }
        axis = static_cast<int64_t>(d);
      }
    }
    if (!axis) return std::string("no input is shifted: not a concatenation of several inputs");
    Analyzer analyzer;
    for (const Buffer& input : inputs_) {
      for (size_t d = 0; d < input.shape().size(); ++d) {
        if (static_cast<int64_t>(d) != *axis &&
            !analyzer.CanProveEqual(input.shape()[d], output_.shape()[d])) {
          return "input " + Quoted(input.name()) + " differs from the output off the axis";
        }
      }
    }
    // The slices, each within the output, must tile the axis: then the leaves' regions (which
    // partition the axis, being an if_then_else chain) are exactly the slices.
    std::vector<size_t> order(inputs_.size());
    std::iota(order.begin(), order.end(), 0);
    auto start = [&](size_t j) { return shifts_[j][*axis]; };
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return start(a) < start(b); });
    int64_t next = 0;
    for (size_t j : order) {
      if (start(j) != next) return std::string("the slices do not tile the axis");
      next += *AsConstInt(inputs_[j].shape()[*axis]);
    }
    if (next != *AsConstInt(output_.shape()[*axis])) {
      return std::string("the slices do not tile the axis");
    }
    ConcatLayout layout = LayoutAlong(*axis);
    int64_t inner = BytesPerIndex(*axis);
    for (size_t j = 0; j < inputs_.size(); ++j) {
      layout.byte_offsets.push_back(start(j) * inner);
    }
    return layout;
  }

 private:
  void OnStore(const BufferStore& store) override {
    if (failure_) return;
    if (!store.buffer().same_as(output_)) return Fail("the PrimFunc writes a buffer of its own");
    if (!TakeOutputStore(store)) return;
    if (std::optional<std::string> why = CheckSelection(store.value())) return Fail(*why);
    CheckOneWritePerElement(*block_, store);
  }

  /*! \brief Indices = the block's iteration variables, bound one to one to loops over the whole
   *         output, under no predicate and no other loop. */
  void CheckOneWritePerElement(const SBlockRealize& realize, const BufferStore& store) {
    SBlock block = realize.block();
    if (block.init().defined()) return Fail("the writing block is a reduction");
    if (AsConstInt(realize.predicate()).value_or(0) != 1) return Fail("the block has a predicate");
    Array<ObjectRef> iter_vars = block.iter_vars();
    Array<ObjectRef> values = realize.iter_values();
    Array<ObjectRef> indices = store.indices();
    Array<ObjectRef> shape = output_.shape();
    if (loops().size() != indices.size() || iter_vars.size() != indices.size()) {
      return Fail("the writing block's loops do not match the output's dimensions");
    }
    for (size_t d = 0; d < indices.size(); ++d) {
      IterVar iter(iter_vars[d]);
      const LoopScope& loop = loops()[d];
      Range dom(iter.dom());
      bool exact = iter.var().same_as(indices[d]) && values[d].same_as(loop.var) &&
                   AsConstInt(dom.min()) == 0 && AsConstInt(loop.min) == 0 &&
                   AsConstInt(dom.extent()) == AsConstInt(shape[d]) &&
                   AsConstInt(loop.extent) == AsConstInt(shape[d]) && AsConstInt(shape[d]);
      if (!exact) return Fail("the writing block does not visit each output element once");
    }
  }

  void OnBlockEnter(const SBlockRealize& realize) override {
    // Only the root block (no iteration variables) may enclose the writing block.
    if (block_ && !block_->block().iter_vars().empty()) {
      return Fail("the PrimFunc has nested blocks");
    }
    block_ = realize;
  }

  /*! \brief A leaf load of input j: the output's indices, each shifted by a constant, and
   *         inside the input under the conditions that select it. */
  void OnLoad(const BufferLoad& load) override {
    if (failure_) return;
    int j = InputIndex(load.buffer());
    if (j < 0) return Fail("the PrimFunc reads a buffer that is not an input");
    if (shifts_.size() != inputs_.size()) shifts_.resize(inputs_.size());
    const Buffer& input = inputs_[j];
    if (!shifts_[j].empty()) return Fail("input " + Quoted(input.name()) + " is read twice");
    Array<ObjectRef> indices = load.indices();
    Array<ObjectRef> out = block_ ? StoreIndicesOf(*block_) : Array<ObjectRef>();
    // The rank is checked against the output's too: an in-place PrimFunc's last parameter is
    // an input, possibly of another rank, and the loop below indexes the output's shape.
    if (!input.strides().empty() || input.dtype() != output_.dtype() ||
        indices.size() != out.size() || out.size() != output_.shape().size() ||
        !input.ConstSizeBytes()) {
      return Fail("input " + Quoted(input.name()) + " is not a row-major slice of the output");
    }
    Analyzer* ana = analyzer();
    Array<ObjectRef> iter_vars = block_->block().iter_vars();
    std::vector<int64_t> shifts;
    for (size_t d = 0; d < indices.size(); ++d) {
      std::optional<int64_t> shift = AsConstInt(ana->Simplify(Sub(out[d], indices[d])));
      if (!shift) return Fail("input " + Quoted(input.name()) + " is read at another element");
      // Selected only where the input holds the element: the output index ranges over the
      // block's domain narrowed by the conditions on the way to this load.
      std::optional<int64_t> extent = AsConstInt(input.shape()[d]);
      std::optional<int64_t> out_extent = AsConstInt(output_.shape()[d]);
      std::optional<std::pair<int64_t, int64_t>> range =
          extent && out_extent && d < iter_vars.size()
              ? IntervalUnder(out[d], 0, *out_extent - 1, Holding(conditions()))
              : std::nullopt;
      bool inside = range ? range->first - *shift >= 0 && range->second - *shift < *extent
                          : ana->CanProve(GE(indices[d], IntConst(indices[d], 0))) &&
                                ana->CanProve(LT(indices[d], input.shape()[d]));
      if (!inside) return Fail("input " + Quoted(input.name()) + " is read at another element");
      shifts.push_back(*shift);
    }
    shifts_[j] = std::move(shifts);
  }

  /*! \brief The indices of the block's single store to the output (none when its body is not
   *         one: an in-place PrimFunc writes another parameter, of another rank). */
  Array<ObjectRef> StoreIndicesOf(const SBlockRealize& realize) const {
    std::optional<BufferStore> store = As<BufferStore>(realize.block().body());
    return store && store->buffer().same_as(output_) ? store->indices() : Array<ObjectRef>();
  }

  void OnCall(const Call& call) override {
    if (TakesBufferAddress(call)) {
      Fail("the PrimFunc takes a buffer's address (" + call.op_name() + ")");
    }
  }

  void OnAllocation(const AllocationSite& site) override {
    Fail("the PrimFunc allocates or declares buffer " + Quoted(site.buffer.name()));
  }

  /*! \brief Per input, the output index minus the input index along each dimension. */
  std::vector<std::vector<int64_t>> shifts_;
};

/*! \brief The second proof of relax/concat_prim_func.h: the inputs a kernel writes back unchanged
 *         into slices of its output. */
class SlicedWriteCheck : public OutputCheck {
 public:
  using OutputCheck::OutputCheck;

  std::variant<ConcatLayout, std::string> Check(const PrimFunc& func) {
    if (std::optional<std::string> failure = Visit(func)) return *failure;
    std::vector<Leaf> leaves;
    CollectLeaves(store_->value(), {}, &leaves);
    Array<ObjectRef> shape = output_.shape();
    // Per input, its slice: the leaves reading it at the output's position shifted by a
    // constant, along one axis, all by the same shift.
    struct Slice {
      int64_t axis = -1, start = 0, extent = 0;
      bool candidate = true;
    };
    std::vector<Slice> slices(inputs_.size());
    std::vector<std::optional<int>> leaf_input(leaves.size());
    for (size_t k = 0; k < leaves.size(); ++k) {
      std::optional<BufferLoad> load = As<BufferLoad>(leaves[k].value);
      int j = load ? InputIndex(load->buffer()) : -1;
      if (j < 0) continue;
      leaf_input[k] = j;
      std::optional<std::pair<int64_t, int64_t>> shift = AxisShift(*load);
      Slice& slice = slices[j];
      if (!shift) {
        slice.candidate = false;
        continue;
      }
      if (slice.axis >= 0 && (slice.axis != shift->first || slice.start != shift->second)) {
        slice.candidate = false;
      }
      slice.axis = shift->first;
      slice.start = shift->second;
      slice.extent = *AsConstInt(inputs_[j].shape()[slice.axis]);
    }
    // The common axis: that of the first input with a slice.
    std::optional<int64_t> axis;
    for (const Slice& slice : slices) {
      if (slice.candidate && slice.axis >= 0 && !axis) axis = slice.axis;
    }
    if (!axis) return std::string("no input is written unchanged into a slice of the output");
    // Each leaf's range along the axis under its conditions (the whole axis when unknown).
    int64_t axis_extent = *AsConstInt(shape[*axis]);
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (const Leaf& leaf : leaves) {
      ranges.push_back(AxisRange(*axis, axis_extent, leaf.conditions));
    }
    ConcatLayout layout = LayoutAlong(*axis);
    int64_t inner = BytesPerIndex(*axis);
    std::vector<std::pair<int64_t, int64_t>> sliced;  // [start, end) along the axis
    for (size_t j = 0; j < inputs_.size(); ++j) {
      const Slice& slice = slices[j];
      int64_t end = slice.start + slice.extent;
      // Within the output: an output inside a larger input is a slice of it, not this.
      bool is_sliced =
          slice.candidate && slice.axis == *axis && slice.start >= 0 && end <= axis_extent;
      for (size_t k = 0; k < leaves.size() && is_sliced; ++k) {
        const auto& [lo, hi] = ranges[k];
        bool reads_it = leaf_input[k] == static_cast<int>(j);
        // Its own leaves select only within the input; the others never within its slice.
        is_sliced = reads_it ? slice.start <= lo && hi < end : hi < slice.start || end <= lo;
      }
      layout.byte_offsets.push_back(is_sliced ? slice.start * inner : ConcatLayout::kNotSliced);
      if (is_sliced) sliced.emplace_back(slice.start, end);
    }
    if (sliced.empty()) {
      return std::string(
          "no input is written unchanged into a slice of the output: another "
          "value may be selected within each candidate's slice");
    }
    // Pure when every leaf reads a sliced input and the slices tile the axis.
    std::sort(sliced.begin(), sliced.end());
    int64_t next = 0;
    for (const auto& [start, end] : sliced) next = start == next ? end : -1;
    layout.computes = next != axis_extent;
    for (size_t k = 0; k < leaves.size() && !layout.computes; ++k) {
      layout.computes = !leaf_input[k] || !layout.Sliced(*leaf_input[k]);
    }
    return layout;
  }

 private:
  struct Leaf {
    ObjectRef value;
    std::vector<Condition> conditions;
  };

  static void CollectLeaves(const ObjectRef& value, std::vector<Condition> conditions,
                            std::vector<Leaf>* leaves) {
    if (std::optional<Call> select = AsSelection(value)) {
      ObjectRef condition = select->args()[0];
      conditions.push_back({condition, false});
      CollectLeaves(select->args()[1], conditions, leaves);
      conditions.back().negated = true;
      CollectLeaves(select->args()[2], conditions, leaves);
      return;
    }
    leaves->push_back({value, std::move(conditions)});
  }

  /*! \brief (axis, shift) when `load` reads its input at the output's indices shifted by a
   *         constant along one axis (along which the input is shorter or shifted), the input
   *         being a row-major slice of the output: of its dtype and rank, equal off the axis. */
  std::optional<std::pair<int64_t, int64_t>> AxisShift(const BufferLoad& load) const {
    const Buffer& input = load.buffer();
    Array<ObjectRef> indices = load.indices();
    Array<ObjectRef> out = store_->indices();
    Array<ObjectRef> shape = output_.shape();
    if (!input.strides().empty() || input.dtype() != output_.dtype() ||
        indices.size() != out.size() || input.shape().size() != shape.size() ||
        !input.ConstSizeBytes()) {
      return std::nullopt;
    }
    Analyzer analyzer;
    std::optional<int64_t> axis;
    int64_t start = 0;
    for (size_t d = 0; d < indices.size(); ++d) {
      std::optional<int64_t> shift = AsConstInt(analyzer.Simplify(Sub(out[d], indices[d])));
      std::optional<int64_t> extent = AsConstInt(input.shape()[d]);
      if (!shift || !extent) return std::nullopt;
      if (*shift == 0 && extent == AsConstInt(shape[d])) continue;
      if (axis) return std::nullopt;
      axis = static_cast<int64_t>(d);
      start = *shift;
    }
    if (!axis) return std::nullopt;  // the whole output: a copy, not a slice
    return std::make_pair(*axis, start);
  }

  /*! \brief [lo, hi] of the output index along `axis` under `conditions`. */
  std::pair<int64_t, int64_t> AxisRange(int64_t axis, int64_t extent,
                                        const std::vector<Condition>& conditions) const {
    auto [lo, hi] = domains_[axis];
    ObjectRef index = store_->indices()[axis];
    if (lo == hi) return {lo, hi};  // a constant index
    return IntervalUnder(index, lo, hi, conditions, /*others_widen=*/true)
        .value_or(std::make_pair(int64_t{0}, extent - 1));
  }

  void OnStore(const BufferStore& store) override {
    if (failure_) return;
    if (!store.buffer().same_as(output_)) {
      if (InputIndex(store.buffer()) >= 0) {
        Fail("the PrimFunc writes its input " + Quoted(store.buffer().name()));
      }
      return;  // a buffer of its own
    }
    if (!TakeOutputStore(store)) return;
    if (block_->block().init().defined()) return Fail("the writing block is a reduction");
    // Each index an iteration variable over the output's extent, or a constant within it: the
    // ranges the leaves are judged on.
    Array<ObjectRef> indices = store.indices();
    Array<ObjectRef> shape = output_.shape();
    for (size_t d = 0; d < indices.size(); ++d) {
      std::optional<int64_t> extent = AsConstInt(shape[d]);
      std::optional<int64_t> constant = AsConstInt(indices[d]);
      std::optional<std::pair<int64_t, int64_t>> domain;
      if (constant && extent && 0 <= *constant && *constant < *extent) {
        domain = std::make_pair(*constant, *constant);
      }
      for (const ObjectRef& iter_var : block_->block().iter_vars()) {
        IterVar iter(iter_var);
        Range dom(iter.dom());
        if (!iter.var().same_as(indices[d]) || AsConstInt(dom.min()) != 0 ||
            AsConstInt(dom.extent()) != extent) {
          continue;
        }
        domain = std::make_pair(int64_t{0}, *extent - 1);
      }
      if (!domain) return Fail("the output is written at an index that is not one of its own");
      domains_.push_back(*domain);
    }
  }

  void OnCall(const Call& call) override {
    if (TakesBufferAddress(call)) {
      Fail("the PrimFunc takes a buffer's address (" + call.op_name() + ")");
    }
  }

  void OnAllocation(const AllocationSite& site) override {
    if (site.kind != AllocationSite::Kind::kDeclBuffer) return;
    if (DeclBuffer(site.node).viewed_buffer()) {
      Fail("the PrimFunc declares a view of a buffer (" + Quoted(site.buffer.name()) + ")");
    }
  }

  /*! \brief Per dimension of the output, the range its store index takes. */
  std::vector<std::pair<int64_t, int64_t>> domains_;
};

}  // namespace

bool MayBeConcatenation(const PrimFunc& prim_func, const ParamWrites& writes) {
  // Both proofs select between inputs: without a selection at the top of the stored value, a
  // leaf reads one input for every element of the output, which is no slice of it.
  return prim_func.params().size() >= 2 && writes.output_store &&
         AsSelection(writes.output_store->value());
}

std::variant<ConcatLayout, std::string> AnalyzeConcatenation(const PrimFunc& prim_func) {
  Array<ObjectRef> params = prim_func.params();
  if (params.size() < 2) return std::string("the PrimFunc has no inputs");
  std::vector<Buffer> inputs;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!Is<Buffer>(params[i])) return std::string("a parameter is not a buffer");
    if (i + 1 < params.size()) inputs.emplace_back(params[i]);
  }
  Buffer output(params[params.size() - 1]);
  if (!output.strides().empty() || !output.ConstSizeBytes()) {
    return std::string("the output is not a row-major buffer of constant size");
  }
  Analyzer pure_analyzer;
  auto pure = ConcatCheck(&pure_analyzer, inputs, output).Check(prim_func);
  if (std::holds_alternative<ConcatLayout>(pure)) return pure;
  Analyzer analyzer;
  auto sliced = SlicedWriteCheck(&analyzer, std::move(inputs), output).Check(prim_func);
  if (std::holds_alternative<ConcatLayout>(sliced)) return sliced;
  return std::get<std::string>(pure) + "; " + std::get<std::string>(sliced);
}

namespace {

/*! \brief What WalkParamWrites looks for in a node of a type. */
enum class WriteSite : uint8_t { kNone = 1, kStore, kMatchBuffer, kDeclBuffer, kCall };

WriteSite ComputeWriteSite(int32_t type_index) {
  if (BufferStore::Type().IsInstance(type_index)) return WriteSite::kStore;
  if (MatchBufferRegion::Type().IsInstance(type_index)) return WriteSite::kMatchBuffer;
  if (DeclBuffer::Type().IsInstance(type_index)) return WriteSite::kDeclBuffer;
  if (Call::Type().IsInstance(type_index)) return WriteSite::kCall;
  return WriteSite::kNone;
}

/*! \brief One table lookup per node: the walk meets tens of thousands of nodes in a model's
 *         kernels, most of them none of the four, and a type test each costs more. */
WriteSite WriteSiteOf(int32_t type_index) {
  return ir::MemoizedByTypeIndex<WriteSite, ComputeWriteSite>(type_index);
}

}  // namespace

ParamWrites WalkParamWrites(const PrimFunc& prim_func) {
  Array<ObjectRef> params = prim_func.params();
  const Object* output = !params.empty() && Is<Buffer>(params[params.size() - 1])
                             ? params[params.size() - 1].get()
                             : nullptr;
  std::unordered_set<const Object*> written;
  bool unknown_address = false;  // an address of something we cannot tell: any may be written
  ParamWrites out;
  int output_stores = 0;
  ForEachNode(prim_func.body(), [&](const ObjectRef& node) {
    switch (WriteSiteOf(node->type_index())) {
      case WriteSite::kNone:
        return true;
      case WriteSite::kStore: {
        BufferStore store(node);
        written.insert(store.buffer().get());
        if (store.buffer().get() == output && ++output_stores == 1) out.output_store = store;
        return true;
      }
      case WriteSite::kMatchBuffer:
        written.insert(MatchBufferRegion(node).source().buffer().get());
        return true;
      case WriteSite::kDeclBuffer:
        if (std::optional<Buffer> viewed = DeclBuffer(node).viewed_buffer()) {
          written.insert(viewed->get());
        }
        return true;
      case WriteSite::kCall:
        break;
    }
    Call call(node);
    if (!TakesBufferAddress(call)) return true;
    // The address may reach an extern call that writes through it.
    bool known = false;
    for (const ObjectRef& arg : call.args()) {
      if (std::optional<BufferLoad> load = As<BufferLoad>(arg)) {
        written.insert(load->buffer().get());
        known = true;
      } else if (Is<Buffer>(arg)) {
        written.insert(arg.get());
        known = true;
      }
    }
    unknown_address = unknown_address || !known;
    return true;
  });
  if (output_stores != 1) out.output_store = std::nullopt;
  for (const ObjectRef& param : params) {
    out.written.push_back(unknown_address || !Is<Buffer>(param) || written.count(param.get()) > 0);
  }
  return out;
}

TVM_FFI_STATIC_INIT_BLOCK() {
  // The walk before the proofs, for tests: false where no proof can succeed.
  tvm::ffi::reflection::GlobalDef().def("tvm_memplan.testing.may_be_concatenation",
                                        [](ObjectRef prim_func) {
                                          PrimFunc func(prim_func);
                                          return MayBeConcatenation(func, WalkParamWrites(func));
                                        });
  // The proof alone, for tests: (axis, [byte offset, or None when not sliced], computes) or the
  // reason it fails.
  tvm::ffi::reflection::GlobalDef().def(
      "tvm_memplan.testing.analyze_concatenation", [](ObjectRef prim_func) -> Any {
        auto result = AnalyzeConcatenation(PrimFunc(prim_func));
        if (auto* why = std::get_if<std::string>(&result)) return String(*why);
        const ConcatLayout& layout = std::get<ConcatLayout>(result);
        if (!layout.contiguous) return String(layout.not_contiguous);
        Array<Any> offsets;
        for (size_t j = 0; j < layout.byte_offsets.size(); ++j) {
          offsets.push_back(layout.Sliced(j) ? Any(layout.byte_offsets[j]) : Any(nullptr));
        }
        return Array<Any>{layout.axis, offsets, layout.computes};
      });
}

}  // namespace relax
}  // namespace tvm_memplan
