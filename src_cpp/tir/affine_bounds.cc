/*!
 * \file tir/affine_bounds.cc
 * \brief Affine forms, bound terms and condition atoms (see affine_bounds.h).
 */
#include "tir/affine_bounds.h"

#include <tvm/ffi/extra/structural_equal.h>
#include <tvm/ffi/extra/structural_visit.h>
#include <tvm/ffi/reflection/registry.h>

#include <algorithm>
#include <string>

#include "ir/node.h"
#include "ir/rewriter.h"
#include "ir/tir.h"

namespace tvm_memplan {
namespace tir {

using namespace ir;
namespace op = ir::schema::op;

bool SameTerm(const ObjectRef& a, const ObjectRef& b) {
  if (a.same_as(b)) return true;
  if (IsVar(a) || IsVar(b)) return false;
  return ffi::StructuralEqual::Equal(a, b);
}

std::optional<Affine> Difference(const Affine& a, const Affine& b) {
  Affine out = a;
  for (const auto& [v, c] : b.terms) {
    if (c == std::numeric_limits<int64_t>::min() || !out.AddTerm(v, -c)) return std::nullopt;
  }
  if (b.constant == std::numeric_limits<int64_t>::min() || !out.AddConstant(-b.constant)) {
    return std::nullopt;
  }
  return out;
}

std::optional<Affine> AffineParser::Parse(const ObjectRef& expr) const {
  Affine out;
  if (!Accumulate(expr, 1, &out, 0)) return std::nullopt;
  return out;
}

bool AffineParser::Accumulate(const ObjectRef& e, int64_t scale, Affine* out, int depth) const {
  constexpr int kMaxDepth = 64;
  if (depth > kMaxDepth || !e.defined()) return false;
  if (IsIntImmNode(e)) {
    std::optional<int64_t> value = AsConstInt(e);
    int64_t product;
    return value && !__builtin_mul_overflow(*value, scale, &product) && out->AddConstant(product);
  }
  if (IsVar(e)) {
    if (subst_) {
      auto it = subst_->find(e.get());
      if (it != subst_->end()) return Accumulate(it->second, scale, out, depth + 1);
    }
    return IsPrimExpr(e) && out->AddTerm(e, scale);
  }
  std::optional<BinaryExpr> binary = AsBinary(e);
  if (!binary) return false;
  const ObjectRef &a = binary->a, &b = binary->b;
  if (binary->kind == BinaryExpr::Kind::kAdd) {
    return Accumulate(a, scale, out, depth + 1) && Accumulate(b, scale, out, depth + 1);
  }
  if (binary->kind == BinaryExpr::Kind::kSub) {
    return scale != std::numeric_limits<int64_t>::min() && Accumulate(a, scale, out, depth + 1) &&
           Accumulate(b, -scale, out, depth + 1);
  }
  if (binary->kind == BinaryExpr::Kind::kMul) {
    std::optional<int64_t> cb = AsConstInt(b), ca = AsConstInt(a);
    int64_t product;
    if (cb && !__builtin_mul_overflow(*cb, scale, &product)) {
      return Accumulate(a, product, out, depth + 1);
    }
    if (ca && !__builtin_mul_overflow(*ca, scale, &product)) {
      return Accumulate(b, product, out, depth + 1);
    }
  }
  return false;
}

ObjectRef ToExpr(const Affine& form, DLDataType dtype) {
  ObjectRef out;
  for (const auto& [var, coeff] : form.terms) {
    ObjectRef term = coeff == 1 ? var : Mul(var, IntConst(DTypeOf(var), coeff));
    out = out.defined() ? Add(out, term) : term;
  }
  if (!out.defined()) return IntConst(dtype, form.constant);
  if (form.constant != 0) out = Add(out, IntConst(DTypeOf(out), form.constant));
  return out;
}

ExprFacts ScanExpr(const ObjectRef& expr) {
  ExprFacts facts;
  if (!expr.defined()) return facts;
  ffi::StructuralVisit(
      expr,
      [&facts](const ObjectRef& node,
               ffi::StructuralVisitorObj* engine) -> Optional<ffi::VisitInterrupt> {
        if (!node.defined()) return std::nullopt;
        if (IsVar(node)) {
          if (!facts.Uses(node.get())) facts.vars.push_back(node);
          return std::nullopt;
        }
        if (IsTypeNode(node) || IsOpNode(node)) return std::nullopt;
        if (IsLoadNode(node)) {
          facts.reads_memory = true;
          ObjectRef buffer = BufferLoad(node).buffer().ref();
          if (std::none_of(facts.loaded.begin(), facts.loaded.end(),
                           [&](const ObjectRef& b) { return b.same_as(buffer); })) {
            facts.loaded.push_back(buffer);
          }
        }
        if (IsCallNode(node)) facts.calls = true;
        engine->DefaultVisitExpected(node).value();
        return std::nullopt;
      });
  return facts;
}

ObjectRef Resolve(const ObjectRef& expr, const Substitution& subst) {
  if (subst.empty()) return expr;
  Map<ObjectRef, ObjectRef> vmap;
  // Substituted values may themselves use substituted vars (nested blocks).
  ObjectRef current = expr;
  for (int round = 0; round < 8; ++round) {
    vmap.clear();
    for (const ObjectRef& v : ScanExpr(current).vars) {
      auto it = subst.find(v.get());
      if (it != subst.end()) vmap.Set(v, it->second);
    }
    if (vmap.empty()) return current;
    current = Substitute(current, vmap);
  }
  return current;
}

namespace {

BoundTerms BoundTermsOf(const ObjectRef& e, int depth);

/*! \brief Sets larger than this are cut: the terms are only candidates for a tighter bound. */
constexpr size_t kMaxBoundTerms = 8;

/*! \brief `a + b`, or nullopt on overflow. */
std::optional<Affine> Sum(const Affine& a, const Affine& b) {
  Affine out = a;
  for (const auto& [v, c] : b.terms) {
    if (!out.AddTerm(v, c)) return std::nullopt;
  }
  if (!out.AddConstant(b.constant)) return std::nullopt;
  return out;
}

/*! \brief {x + y} (or {x - y} when `subtract`) over both sets, cut at kMaxBoundTerms. */
std::vector<Affine> CombineTerms(const std::vector<Affine>& xs, const std::vector<Affine>& ys,
                                 bool subtract) {
  std::vector<Affine> out;
  for (const Affine& x : xs) {
    for (const Affine& y : ys) {
      if (out.size() >= kMaxBoundTerms) return out;
      std::optional<Affine> combined = subtract ? Difference(x, y) : Sum(x, y);
      if (combined) out.push_back(std::move(*combined));
    }
  }
  return out;
}

/*! \brief min (or max) of pairs of forms that differ only in their constant. */
std::vector<Affine> FoldSameTerms(const std::vector<Affine>& xs, const std::vector<Affine>& ys,
                                  bool take_min) {
  std::vector<Affine> out;
  for (const Affine& x : xs) {
    for (const Affine& y : ys) {
      if (!x.SameTerms(y) || out.size() >= kMaxBoundTerms) continue;
      Affine f = x;
      f.constant = take_min ? std::min(x.constant, y.constant) : std::max(x.constant, y.constant);
      out.push_back(std::move(f));
    }
  }
  return out;
}

/*!
 * \brief Any other integer expression is a term of its own: hi and lo of one allocation are
 *        evaluated at the same point, so x * 8 + 8 - (x * 8 - 1) = 9 whatever x = bx % 16 // 4.
 */
BoundTerms OpaqueTerm(const ObjectRef& e) {
  BoundTerms out;
  if (!IsPrimExpr(e)) return out;
  DLDataType dtype = DTypeOf(e);
  if (dtype.code != kDLInt && dtype.code != kDLUInt) return out;
  Affine form;
  form.AddTerm(e, 1);
  out.upper.push_back(form);
  out.lower.push_back(std::move(form));
  return out;
}

BoundTerms BoundTermsOf(const ObjectRef& e, int depth) {
  BoundTerms out;
  if (depth > 16 || !e.defined()) return out;
  if (std::optional<Affine> form = AffineParser(nullptr).Parse(e)) {
    out.upper.push_back(*form);
    out.lower.push_back(*form);
    return out;
  }
  using Kind = BinaryExpr::Kind;
  std::optional<BinaryExpr> expr = AsBinary(e);
  Kind kind = expr ? expr->kind : Kind::kNE;  // kNE: not a term of bounds
  auto operands = [&]() {
    return std::make_pair(BoundTermsOf(expr->a, depth + 1), BoundTermsOf(expr->b, depth + 1));
  };
  if (kind == Kind::kMin) {
    auto [a, b] = operands();
    out.upper = a.upper;
    for (Affine& f : b.upper) {
      if (out.upper.size() < kMaxBoundTerms) out.upper.push_back(std::move(f));
    }
    out.lower = FoldSameTerms(a.lower, b.lower, /*take_min=*/true);
  } else if (kind == Kind::kMax) {
    auto [a, b] = operands();
    out.lower = a.lower;
    for (Affine& f : b.lower) {
      if (out.lower.size() < kMaxBoundTerms) out.lower.push_back(std::move(f));
    }
    out.upper = FoldSameTerms(a.upper, b.upper, /*take_min=*/false);
  } else if (kind == Kind::kAdd) {
    auto [a, b] = operands();
    out.upper = CombineTerms(a.upper, b.upper, /*subtract=*/false);
    out.lower = CombineTerms(a.lower, b.lower, /*subtract=*/false);
  } else if (kind == Kind::kSub) {
    auto [a, b] = operands();
    out.upper = CombineTerms(a.upper, b.lower, /*subtract=*/true);
    out.lower = CombineTerms(a.lower, b.upper, /*subtract=*/true);
  } else if (kind == Kind::kMul) {
    const ObjectRef &a = expr->a, &b = expr->b;
    std::optional<int64_t> c = AsConstInt(b);
    ObjectRef operand = a;
    if (!c) {
      c = AsConstInt(a);
      operand = b;
    }
    if (!c) return OpaqueTerm(e);
    BoundTerms inner = BoundTermsOf(operand, depth + 1);
    auto scale = [&](const std::vector<Affine>& forms) {
      std::vector<Affine> scaled;
      for (const Affine& f : forms) {
        Affine g;
        bool ok = !__builtin_mul_overflow(f.constant, *c, &g.constant);
        for (const auto& [v, k] : f.terms) {
          int64_t product;
          ok = ok && !__builtin_mul_overflow(k, *c, &product) && g.AddTerm(v, product);
        }
        if (ok) scaled.push_back(std::move(g));
      }
      return scaled;
    };
    out.upper = scale(*c >= 0 ? inner.upper : inner.lower);
    out.lower = scale(*c >= 0 ? inner.lower : inner.upper);
  } else {
    return OpaqueTerm(e);
  }
  return out;
}

}  // namespace

BoundTerms BoundTermsOf(const ObjectRef& e) { return BoundTermsOf(e, 0); }

int64_t ConstDifferenceBound(const BoundTerms& hi, const BoundTerms& lo) {
  int64_t best = kNoBound;
  for (const Affine& x : hi.upper) {
    for (const Affine& y : lo.lower) {
      std::optional<Affine> diff = Difference(x, y);
      if (diff && diff->IsConstant()) best = std::min(best, diff->constant);
    }
  }
  return best;
}

int64_t FloorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t CeilDivInt(int64_t a, int64_t b) { return -FloorDivInt(-a, b); }

bool AddScaledRange(int64_t coeff, int64_t lo, int64_t hi, int64_t* min, int64_t* max) {
  int64_t a, b;
  return !__builtin_mul_overflow(coeff, lo, &a) && !__builtin_mul_overflow(coeff, hi, &b) &&
         !__builtin_add_overflow(*min, std::min(a, b), min) &&
         !__builtin_add_overflow(*max, std::max(a, b), max);
}

namespace {

/*! \brief The conjuncts of `cond` (negated when `negated`): a && b, !(a || b), likely(a). */
void SplitConjuncts(const ObjectRef& cond, bool negated,
                    std::vector<std::pair<ObjectRef, bool>>* out) {
  std::optional<BinaryExpr> logic = AsBinary(cond);
  if (logic && ((!negated && logic->kind == BinaryExpr::Kind::kAnd) ||
                (negated && logic->kind == BinaryExpr::Kind::kOr))) {
    SplitConjuncts(logic->a, negated, out);
    SplitConjuncts(logic->b, negated, out);
    return;
  }
  if (std::optional<ObjectRef> operand = AsNot(cond)) {
    SplitConjuncts(*operand, !negated, out);
    return;
  }
  if (std::optional<Call> call = As<Call>(cond); call && call->IsOp(op::Likely)) {
    Array<ObjectRef> args = call->args();
    if (args.size() == 1) {
      SplitConjuncts(args[0], negated, out);
      return;
    }
  }
  out->emplace_back(cond, negated);
}

/*!
 * \brief Recognize `a <cmp> b` (its negation when `negated`, rewritten as the opposite
 *        comparison); when a - b is c * v + k, derive constant bounds of v.
 */
void ParseComparison(const AffineParser& parser, bool negated, Atom* atom) {
  ObjectRef e = atom->expr;
  enum Cmp { kLT, kLE, kGT, kGE, kEQ, kNE } cmp;
  std::optional<BinaryExpr> comparison = AsBinary(e);
  using Kind = BinaryExpr::Kind;
  switch (comparison ? comparison->kind : Kind::kAdd) {
    case Kind::kLT:
      cmp = kLT;
      break;
    case Kind::kLE:
      cmp = kLE;
      break;
    case Kind::kGT:
      cmp = kGT;
      break;
    case Kind::kGE:
      cmp = kGE;
      break;
    case Kind::kEQ:
      cmp = kEQ;
      break;
    case Kind::kNE:
      cmp = kNE;
      break;
    default:
      if (negated) atom->expr = Not(e);
      return;
  }
  ObjectRef lhs = comparison->a, rhs = comparison->b;
  if (negated) {
    static constexpr Cmp kOpposite[] = {kGE, kGT, kLE, kLT, kNE, kEQ};
    cmp = kOpposite[cmp];
    atom->expr = cmp == kGE   ? GE(lhs, rhs)
                 : cmp == kGT ? GT(lhs, rhs)
                 : cmp == kLE ? LE(lhs, rhs)
                 : cmp == kLT ? LT(lhs, rhs)
                 : cmp == kEQ ? EQ(lhs, rhs)
                              : NE(lhs, rhs);
  }
  atom->comparison = cmp != kNE;
  std::optional<Affine> a = parser.Parse(lhs);
  std::optional<Affine> b = parser.Parse(rhs);
  std::optional<Affine> diff = a && b ? Difference(*a, *b) : std::nullopt;
  if (!diff) return;
  // Integer comparisons: a < b is a - b + 1 <= 0, a > b is a - b - 1 >= 0.
  if ((cmp == kLT && !diff->AddConstant(1)) || (cmp == kGT && !diff->AddConstant(-1))) return;
  using R = Atom::Relation;
  atom->relation = cmp == kLT || cmp == kLE   ? R::kLE
                   : cmp == kGT || cmp == kGE ? R::kGE
                   : cmp == kEQ               ? R::kEQ
                                              : R::kNE;
  atom->form = std::move(diff);
}

}  // namespace

std::vector<Atom> ParseConditionAtoms(const ObjectRef& cond, const Substitution& subst) {
  std::vector<std::pair<ObjectRef, bool>> conjuncts;
  SplitConjuncts(cond, /*negated=*/false, &conjuncts);
  AffineParser parser(&subst);
  std::vector<Atom> atoms;
  for (const auto& [c, negated] : conjuncts) {
    Atom atom;
    atom.expr = Resolve(c, subst);
    ParseComparison(parser, negated, &atom);
    atom.facts = ScanExpr(atom.expr);
    atoms.push_back(std::move(atom));
  }
  return atoms;
}

namespace {

std::string Describe(const Affine& form) {
  std::string out;
  for (const auto& [term, coeff] : form.terms) {
    out += (out.empty() ? "" : " + ") + std::to_string(coeff) + "*" + ToString(term);
  }
  return out + (out.empty() ? "" : " + ") + std::to_string(form.constant);
}

}  // namespace

// Hooks for tests/tir/test_affine_bounds.py.
TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef()
      .def("tvm_memplan.testing.const_difference_bound",
           [](ObjectRef hi, ObjectRef lo) -> ffi::Any {
             int64_t bound = ConstDifferenceBound(BoundTermsOf(hi), BoundTermsOf(lo));
             return bound == kNoBound ? ffi::Any() : ffi::Any(bound);
           })
      .def("tvm_memplan.testing.condition_atoms", [](ObjectRef cond) {
        static const char* kRelations[] = {"", " <= 0", " >= 0", " == 0", " != 0"};
        ffi::Array<ffi::String> out;
        for (const Atom& atom : ParseConditionAtoms(cond, Substitution{})) {
          out.push_back(atom.form
                            ? Describe(*atom.form) + kRelations[static_cast<int>(atom.relation)]
                            : "opaque " + ToString(atom.expr));
        }
        return out;
      });
}

}  // namespace tir
}  // namespace tvm_memplan
