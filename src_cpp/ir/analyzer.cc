/*!
 * \file ir/analyzer.cc
 * \brief The analyzer facade on the `sym.*` globals.
 */
#include "ir/analyzer.h"

#include "ir/expr.h"
#include "ir/schema.h"

namespace tvm_memplan {
namespace ir {

using namespace schema;

namespace {
// sym.Analyzer proof strength: 0 is the default rewrite-based prover.
constexpr int kDefaultProofStrength = 0;
// Simplify step count used by sym.AnalyzerSimplify when called from Python (`steps=2`).
constexpr int kSimplifySteps = 2;
// DetectIterMap check levels (sym.IterMapLevel): 0 bijective, 1 surjective.
constexpr int kIterMapBijective = 0;
constexpr int kIterMapSurjective = 1;

/*! \brief An interval end that is not +-inf (TVM marks those with the `pos_inf`/`neg_inf` vars). */
std::optional<ObjectRef> FiniteEnd(const ObjectRef& end) {
  if (type::Var.IsInstance(end)) {
    std::string name = field::Var_name.Get<String>(end);
    if (name == "pos_inf" || name == "neg_inf") return std::nullopt;
  }
  return end;
}
/*! \brief The ends of an IntSet; an end is missing when it is unbounded. */
Interval IntervalOf(const ObjectRef& set) {
  Interval out;
  if (type::IntervalSet.IsInstance(set)) {
    out.min = FiniteEnd(field::IntervalSet_min_value.Get<ObjectRef>(set));
    out.max = FiniteEnd(field::IntervalSet_max_value.Get<ObjectRef>(set));
    return out;
  }
  if (func::IntSetIsEverything(set).cast<bool>()) return out;
  out.min = FiniteEnd(func::IntervalSetGetMin(set).cast<ObjectRef>());
  out.max = FiniteEnd(func::IntervalSetGetMax(set).cast<ObjectRef>());
  return out;
}
}  // namespace

Analyzer::Analyzer() : self_(func::MakeAnalyzer().cast<ObjectRef>()) {}

void Analyzer::Reset() { self_ = func::MakeAnalyzer().cast<ObjectRef>(); }

void Analyzer::BindExpr(const ObjectRef& var, const ObjectRef& expr, bool allow_override) {
  func::AnalyzerBind(self_, var, expr, allow_override);
}

void Analyzer::BindRange(const ObjectRef& var, const ObjectRef& min, const ObjectRef& extent,
                         bool allow_override) {
  func::AnalyzerBind(self_, var, MakeRange(min, extent), allow_override);
}

ObjectRef Analyzer::Simplify(const ObjectRef& expr) const {
  return func::AnalyzerSimplify(self_, expr, kSimplifySteps).cast<ObjectRef>();
}

bool Analyzer::CanProve(const ObjectRef& cond) const {
  if (std::optional<int64_t> c = AsConstInt(cond)) return *c != 0;
  return func::AnalyzerCanProve(self_, cond, kDefaultProofStrength).cast<bool>();
}

bool Analyzer::CanProveEqual(const ObjectRef& a, const ObjectRef& b) const {
  if (a.same_as(b)) return true;
  return CanProve(EQ(a, b));
}

std::pair<int64_t, int64_t> Analyzer::ConstBound(const ObjectRef& expr) const {
  ObjectRef bound = func::AnalyzerConstIntBound(self_, expr).cast<ObjectRef>();
  return {field::ConstIntBound_min_value.Get<int64_t>(bound),
          field::ConstIntBound_max_value.Get<int64_t>(bound)};
}

Interval Analyzer::Relax(const ObjectRef& expr,
                         const std::vector<std::pair<ObjectRef, Interval>>& relaxed) const {
  Map<ObjectRef, ObjectRef> dom;
  for (const auto& [var, interval] : relaxed) {
    if (!interval.bounded()) {
      TVM_FFI_THROW(ValueError) << "internal error: relaxing " << ToString(var)
                                << " over an unbounded interval";
    }
    dom.Set(var, func::MakeIntervalSet(*interval.min, *interval.max).cast<ObjectRef>());
  }
  ObjectRef set = func::AnalyzerIntSet(self_, expr, dom).cast<ObjectRef>();
  Interval out;
  if (func::IntSetIsEverything(set).cast<bool>()) return out;
  out.min = FiniteEnd(func::IntervalSetGetMin(set).cast<ObjectRef>());
  out.max = FiniteEnd(func::IntervalSetGetMax(set).cast<ObjectRef>());
  if (out.min) out.min = Simplify(*out.min);
  if (out.max) out.max = Simplify(*out.max);
  return out;
}

std::optional<Array<ObjectRef>> Analyzer::DetectIterMap(const Array<ObjectRef>& indices,
                                                        const Map<ObjectRef, ObjectRef>& iters,
                                                        const ObjectRef& predicate,
                                                        bool require_bijective) const {
  ObjectRef result = func::DetectIterMap(indices, iters, predicate,
                                         require_bijective ? kIterMapBijective : kIterMapSurjective,
                                         /*simplify_trivial_iterators=*/true, self_)
                         .cast<ObjectRef>();
  Array<ObjectRef> sums = field::IterMapResult_indices.Get<Array<ObjectRef>>(result);
  if (sums.empty() && !indices.empty()) return std::nullopt;
  return sums;
}

Map<ObjectRef, ObjectRef> Analyzer::InverseIterMap(const Array<ObjectRef>& sums,
                                                   const Array<ObjectRef>& outputs) const {
  return func::InverseAffineIterMap(sums, outputs).cast<Map<ObjectRef, ObjectRef>>();
}

std::optional<std::vector<Interval>> Analyzer::EstimateRegion(
    const Array<ObjectRef>& region, const Map<ObjectRef, ObjectRef>& var_dom,
    const ObjectRef& predicate, RegionBound bound) const {
  const GlobalFunc& estimate = bound == RegionBound::kStrict ? func::EstimateRegionStrictBound
                                                             : func::EstimateRegionUpperBound;
  Any sets = estimate(region, var_dom, predicate, self_);
  if (sets == nullptr) return std::nullopt;
  std::vector<Interval> out;
  for (const ObjectRef& set : sets.cast<Array<ObjectRef>>()) out.push_back(IntervalOf(set));
  return out;
}

Analyzer::ConstraintScope::ConstraintScope(Analyzer* analyzer, const ObjectRef& condition)
    : exit_(func::AnalyzerEnterConstraintContext(analyzer->handle(), condition).cast<Function>()) {}

Analyzer::ConstraintScope::~ConstraintScope() { exit_(); }

}  // namespace ir
}  // namespace tvm_memplan
