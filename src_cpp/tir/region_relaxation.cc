/*!
 * \file tir/region_relaxation.cc
 * \brief Relaxing one access over the loops entered after the allocation (see
 *        region_relaxation.h).
 */
#include "tir/region_relaxation.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

namespace tvm_memplan {
namespace tir {

using namespace ir;

namespace {

constexpr int64_t kNoLowerBound = std::numeric_limits<int64_t>::min();

/*! \brief The first line of an error message, for a reason that fits on one line. */
std::string FirstLine(const std::string& message) { return message.substr(0, message.find('\n')); }

/*! \brief (base, span) of one index: a ramp covers base + [0, span]; nullopt span when unknown. */
std::pair<ObjectRef, std::optional<int64_t>> IndexBase(const ObjectRef& index) {
  if (std::optional<Ramp> ramp = As<Ramp>(index)) {
    std::optional<int64_t> stride = AsConstInt(ramp->stride());
    std::optional<int64_t> lanes = AsConstInt(ramp->lanes());
    if (stride && lanes && *lanes > 0) return {ramp->base(), *stride * (*lanes - 1)};
    return {index, std::nullopt};
  }
  if (std::optional<Broadcast> broadcast = As<Broadcast>(index)) return {broadcast->value(), 0};
  return {index, 0};
}

/*!
 * \brief The fast path: every index affine, every relaxed variable with a constant range.
 * \return false when some index does not qualify.
 */
bool AffineRanges(const LoopRanges& loops, const RelaxationScope& scope,
                  const Array<ObjectRef>& items, bool is_region, std::vector<DimRange>* out) {
  AffineParser parser(scope.subst);
  for (size_t d = 0; d < items.size(); ++d) {
    ObjectRef base;
    int64_t span = 0;
    if (is_region) {
      Range range(items[d]);
      std::optional<int64_t> extent = AsConstInt(range.extent());
      if (!extent || *extent < 1) return false;
      base = range.min();
      span = *extent - 1;
    } else {
      auto [b, s] = IndexBase(items[d]);
      if (!s) return false;
      base = b;
      span = *s;
    }
    std::optional<Affine> form = parser.Parse(base);
    if (!form) return false;
    Affine lo, hi;
    lo.constant = hi.constant = form->constant;
    if (span < 0) {
      lo.constant += span;
    } else {
      hi.constant += span;
    }
    for (const auto& [var, coeff] : form->terms) {
      int k = loops.IndexOf(var.get());
      if (k >= 0 && loops.relaxed[k]) {
        if (!loops.constant[k] ||
            !AddScaledRange(coeff, loops.lo[k], loops.hi[k], &lo.constant, &hi.constant)) {
          return false;
        }
      } else if (k >= 0 || scope.function_vars->count(var.get())) {
        lo.AddTerm(var, coeff);
        hi.AddTerm(var, coeff);
      } else {
        return false;  // a variable not visible at the allocation
      }
    }
    (*out)[d] = DimRange{Bound{std::move(lo), {}}, Bound{std::move(hi), {}}};
  }
  return true;
}

/*! \brief Whether every variable of `expr` (loaded buffers too) is visible at the allocation
 *         and not relaxed. */
bool VisibleAtAllocation(const ObjectRef& expr, const LoopRanges& loops,
                         const RelaxationScope& scope) {
  ExprFacts facts = ScanExpr(expr);
  if (facts.calls) return false;
  for (const ObjectRef& v : facts.vars) {
    int k = loops.IndexOf(v.get());
    if (k >= 0 ? loops.relaxed[k] : !scope.function_vars->count(v.get())) return false;
  }
  return true;
}

/*! \brief The general path: TVM's region estimate with the pending conditions. */
void EstimatedRanges(const LoopRanges& ranges, const RelaxationScope& scope,
                     const Array<ObjectRef>& items, bool is_region, RelaxedAccess* out) {
  const std::vector<LoopScope>& loops = *ranges.loops;
  Analyzer* analyzer = scope.analyzer;
  Array<ObjectRef> region;
  std::vector<ObjectRef> region_vars;
  std::vector<bool> reads_memory(items.size(), false);
  for (size_t d = 0; d < items.size(); ++d) {
    ObjectRef min, extent;
    if (is_region) {
      Range range(items[d]);
      min = Resolve(range.min(), *scope.subst);
      extent = Resolve(range.extent(), *scope.subst);
    } else {
      auto [base, span] = IndexBase(items[d]);
      min = Resolve(base, *scope.subst);
      extent = span ? IntConst(min, *span + 1) : ObjectRef();
      if (span && *span < 0) {
        min = Add(min, IntConst(min, *span));
        extent = IntConst(min, -*span + 1);
      }
    }
    ExprFacts facts = ScanExpr(min);
    if (extent.defined()) {
      ExprFacts more = ScanExpr(extent);
      facts.reads_memory |= more.reads_memory;
      facts.calls |= more.calls;
      for (const ObjectRef& v : more.vars) {
        if (!facts.Uses(v.get())) facts.vars.push_back(v);
      }
      facts.loaded.insert(facts.loaded.end(), more.loaded.begin(), more.loaded.end());
    }
    if (!extent.defined() || facts.calls) {
      out->unknown[d] =
          !extent.defined() ? "vector index without constant lanes" : "index depends on a call";
      region.push_back(MakeRange(IntConst(DLDataType{kDLInt, 32, 1}, 0),
                                 IntConst(DLDataType{kDLInt, 32, 1}, 1)));
      continue;
    }
    // An index that loads memory (`A[B[i] + k]`): the loaded values are fixed while the
    // allocation lives unless its scope writes them (the collector checks when it ends).
    reads_memory[d] = facts.reads_memory;
    out->loaded.insert(out->loaded.end(), facts.loaded.begin(), facts.loaded.end());
    for (const ObjectRef& v : facts.vars) region_vars.push_back(v);
    region.push_back(MakeRange(min, extent));
  }
  // Relaxed variables and their ranges.
  std::vector<bool> used(loops.size(), false);
  auto mark = [&](const ObjectRef& v) {
    int k = ranges.IndexOf(v.get());
    if (k >= 0 && ranges.relaxed[k]) used[k] = true;
  };
  for (const ObjectRef& v : region_vars) mark(v);
  ObjectRef predicate = BoolConst(true);
  for (const Atom* atom : ranges.pending) {
    predicate = And(predicate, atom->expr);
    for (const ObjectRef& v : atom->facts.vars) mark(v);
  }
  // Ranges of the relaxed loops, outermost first: a range that names an outer relaxed loop
  // (a triangular nest) is relaxed over that loop's range.
  Map<ObjectRef, ObjectRef> var_dom;
  // The same, with each loop whose constant range is the analyzer's bound of a symbolic one
  // (LoopRanges::BoundSymbolicRanges) at its own symbolic range instead.
  Map<ObjectRef, ObjectRef> symbolic_dom;
  bool bounded_symbolic = false;
  std::vector<std::pair<ObjectRef, Interval>> relaxed_dom;
  for (size_t k = 0; k < loops.size(); ++k) {
    if (!ranges.relaxed[k]) continue;
    const LoopScope& loop = loops[k];
    Interval range;
    if (ranges.constant[k]) {
      range = Interval{IntConst(loop.min, ranges.lo[k]), IntConst(loop.min, ranges.hi[k])};
    } else {
      ObjectRef last = Sub(Add(loop.min, loop.extent), IntConst(loop.extent, 1));
      bool nested = false;
      for (const ObjectRef& e : {loop.min, loop.extent}) {
        for (const ObjectRef& v : ScanExpr(e).vars) nested |= ranges.IsRelaxed(v.get());
      }
      if (nested) {
        range.min = analyzer->Relax(loop.min, relaxed_dom).min;
        range.max = analyzer->Relax(last, relaxed_dom).max;
      } else {
        range = Interval{loop.min, last};
      }
    }
    if (!range.bounded()) {
      if (!used[k]) continue;
      for (size_t d = 0; d < items.size(); ++d) {
        if (out->unknown[d].empty()) out->unknown[d] = "loop range is unbounded";
      }
      return;
    }
    relaxed_dom.emplace_back(loop.var, range);
    if (used[k]) {
      ObjectRef extent = Add(Sub(*range.max, *range.min), IntConst(loop.extent, 1));
      var_dom.Set(loop.var, MakeRange(*range.min, extent));
      bool bound_of_symbolic =
          ranges.constant[k] && !(AsConstInt(loop.min) && AsConstInt(loop.extent));
      bounded_symbolic |= bound_of_symbolic;
      symbolic_dom.Set(loop.var, bound_of_symbolic ? MakeRange(loop.min, loop.extent)
                                                   : MakeRange(*range.min, extent));
    }
  }
  std::optional<std::vector<Interval>> box;
  // What TVM's estimator raised, when it did: every dimension then keeps its extent.
  std::string failure;
  try {
    box = analyzer->EstimateRegion(region, var_dom, predicate, Analyzer::RegionBound::kUpper);
  } catch (const ffi::Error& error) {
    // TVM's estimator computes a region's extent in the index's type. A constant range that is
    // only the bound of a symbolic one by its variables' types (a GEMV over an int32
    // `vocab_size`, tiled by 64, spans [0, 2^31 - 1]) can overflow it ("Literal value 2147483648
    // exceeds range of int32"): then the loops' own symbolic ranges, as TVM's pass relaxes them.
    // It also fails outright on indices whose loop terms cancel (`t[i // 4 - i // 4]` reaches
    // "Divide by zero" in its iter-map detection).
    failure = error.kind() + ": " + FirstLine(error.message());
    if (bounded_symbolic && error.kind() == "ValueError") {
      try {
        box = analyzer->EstimateRegion(region, symbolic_dom, predicate,
                                       Analyzer::RegionBound::kUpper);
        failure.clear();
      } catch (const ffi::Error& retry) {
        failure = retry.kind() + ": " + FirstLine(retry.message());
      }
    }
  }
  for (size_t d = 0; d < items.size(); ++d) {
    if (!out->unknown[d].empty()) continue;
    if (!failure.empty()) {
      out->unknown[d] = "TVM's region estimate raised " + failure;
      continue;
    }
    if (!box || d >= box->size() || !(*box)[d].bounded()) {
      out->unknown[d] = reads_memory[d] ? "index depends on data" : "index is unbounded";
      continue;
    }
    const Interval& interval = (*box)[d];
    if (!VisibleAtAllocation(*interval.min, ranges, scope) ||
        !VisibleAtAllocation(*interval.max, ranges, scope)) {
      out->unknown[d] = reads_memory[d]
                            ? "index depends on data that changes while it is allocated"
                            : "bound uses a variable that is not visible at the allocation";
      continue;
    }
    out->ranges[d] = DimRange{MakeBound(analyzer->Simplify(*interval.min)),
                              MakeBound(analyzer->Simplify(*interval.max))};
  }
}

/*!
 * \brief Turn a range of flat indices into the range of rows it touches: floor(i / row_size)
 *        of an affine bound whose variable coefficients are multiples of row_size.
 */
bool RowsOf(DimRange* range, int64_t row_size) {
  for (Bound* b : {&range->lo, &range->hi}) {
    if (!b->affine) return false;
    for (auto& [var, coeff] : b->affine->terms) {
      if (coeff % row_size != 0) return false;
      coeff /= row_size;
    }
    b->affine->constant = FloorDivInt(b->affine->constant, row_size);
  }
  return true;
}

}  // namespace

LoopRanges::LoopRanges(const std::vector<LoopScope>& loops, std::vector<bool> relaxed_loops)
    : loops(&loops), relaxed(std::move(relaxed_loops)) {
  size_t n = loops.size();
  relaxed.resize(n, false);
  constant.resize(n, false);
  lo.resize(n, 0);
  hi.resize(n, 0);
  for (size_t k = 0; k < n; ++k) {
    std::optional<int64_t> min = AsConstInt(loops[k].min), extent = AsConstInt(loops[k].extent);
    if (min && extent) {
      constant[k] = true;
      lo[k] = *min;
      hi[k] = *min + *extent - 1;
      // A loop of one iteration (a vthread of extent 1 in scheduled GPU code) is its one
      // value: relaxing it over its range loses nothing, on every path below.
      if (*extent == 1) relaxed[k] = true;
    }
  }
}

bool LoopRanges::HasSymbolicRelaxedRange() const {
  for (size_t k = 0; k < relaxed.size(); ++k) {
    if (relaxed[k] && !constant[k]) return true;
  }
  return false;
}

void LoopRanges::BoundSymbolicRanges(const Analyzer& analyzer) {
  for (size_t k = 0; k < relaxed.size(); ++k) {
    if (!relaxed[k] || constant[k]) continue;
    auto [l, h] = analyzer.ConstBound((*loops)[k].var);
    // A data-dependent extent (the difference of two int32 loads) can be bounded past what the
    // variable's type holds: such a bound is no constant of that type, so the range stays
    // symbolic (it would not be written as one).
    DLDataType dtype = DTypeOf((*loops)[k].var);
    if (l != kNoLowerBound && h != kNoBound && FitsIn(dtype, l) && FitsIn(dtype, h)) {
      constant[k] = true;
      lo[k] = l;
      hi[k] = h;
    }
  }
}

int LoopRanges::IndexOf(const Object* var) const {
  for (size_t k = loops->size(); k-- > 0;) {
    if ((*loops)[k].var.get() == var) return static_cast<int>(k);
  }
  return -1;
}

Tightened TightenRange(const Atom& atom, LoopRanges* ranges) {
  if (!atom.form) return Tightened::kNo;
  int target = -1;
  int64_t c = 0, rest_lo = atom.form->constant, rest_hi = atom.form->constant;
  for (const auto& [var, coeff] : atom.form->terms) {
    int k = ranges->IndexOf(var.get());
    if (k < 0 || !ranges->constant[k]) return Tightened::kNo;
    if (ranges->relaxed[k]) {
      if (target >= 0) return Tightened::kNo;  // two relaxed variables: iter-map analysis
      target = k;
      c = coeff;
      continue;
    }
    if (!AddScaledRange(coeff, ranges->lo[k], ranges->hi[k], &rest_lo, &rest_hi)) {
      return Tightened::kNo;
    }
  }
  if (target < 0 || rest_lo == kNoLowerBound || rest_hi == kNoBound) return Tightened::kNo;
  int64_t& lo = ranges->lo[target];
  int64_t& hi = ranges->hi[target];
  using R = Atom::Relation;
  // c * v <= -rest holds for some rest in [rest_lo, rest_hi]: c * v <= -rest_lo.
  if (atom.relation == R::kLE || atom.relation == R::kEQ) {
    if (c > 0) {
      hi = std::min(hi, FloorDivInt(-rest_lo, c));
    } else {
      lo = std::max(lo, CeilDivInt(-rest_lo, c));
    }
  }
  // c * v >= -rest: c * v >= -rest_hi.
  if (atom.relation == R::kGE || atom.relation == R::kEQ) {
    if (c > 0) {
      lo = std::max(lo, CeilDivInt(-rest_hi, c));
    } else {
      hi = std::min(hi, FloorDivInt(-rest_hi, c));
    }
  }
  if (atom.relation == R::kNE) {
    // v != value trims a range that starts or ends at value.
    if (rest_lo != rest_hi || rest_lo % c != 0) return Tightened::kNo;
    int64_t value = -rest_lo / c;
    if (value == lo) ++lo;
    if (value == hi) --hi;
  }
  return lo > hi ? Tightened::kEmpty : Tightened::kYes;
}

RelaxedAccess RelaxAccess(const LoopRanges& loops, const RelaxationScope& scope,
                          const Array<ObjectRef>& items, bool is_region, int64_t row_size) {
  RelaxedAccess out;
  out.ranges.resize(items.size());
  out.unknown.resize(items.size());
  if (!(loops.pending.empty() && AffineRanges(loops, scope, items, is_region, &out.ranges))) {
    EstimatedRanges(loops, scope, items, is_region, &out);
  }
  if (row_size > 0 && out.unknown[0].empty() && !RowsOf(&out.ranges[0], row_size)) {
    out.unknown[0] = "flat index is not a whole number of rows";
  }
  return out;
}

}  // namespace tir
}  // namespace tvm_memplan
