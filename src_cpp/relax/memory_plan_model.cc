/*!
 * \file relax/memory_plan_model.cc
 * \brief The StaticPlanBlockMemory model. The steps are compiled once into flat arrays of
 *        token ids, so that each TotalBytes query (the in-place pass makes one per candidate,
 *        and a few more) is a linear scan: token creation and reference counting, then greedy
 *        reuse in program order, as in TVM's static_plan_block_memory.cc.
 */
#include "relax/memory_plan_model.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "relax/ir_names.h"

namespace tvm_memplan {
namespace relax {

namespace {

/*! \brief A binding whose value is not a call. */
PlanStep NonCallStep(const Step& step, PlanStep plan) {
  plan.kind = PlanStep::Kind::kAlias;
  plan.reads = step.uses;
  if (step.binding->is_match_cast()) return plan;
  if (IsVar(step.expr) || ir::relax::IsConstant(step.expr) || Is<ir::relax::Tuple>(step.expr) ||
      Is<ir::relax::TupleGetItem>(step.expr)) {
    plan.value = step.expr;
  } else if (Is<ir::relax::Function>(step.expr)) {
    plan.kind = PlanStep::Kind::kOpaque;
  }
  return plan;
}

/*! \brief A call binding, by what the planner sees of it. */
PlanStep CallStep(const Step& step, const Call& call, const MemoryEffect& effect, PlanStep plan) {
  using Planned = MemoryEffect::Planned;
  plan.reads = step.uses;
  Planned planned = effect.planned;
  if (planned == Planned::kCopy) {
    bool rewritten =
        step.dataflow && ir::relax::IsDataflowVar(step.var) && effect.planned_source >= 0;
    if (!rewritten) planned = Planned::kAllocates;
  }
  switch (planned) {
    case Planned::kAllocates:
      plan.kind = PlanStep::Kind::kAllocate;
      plan.type = ir::relax::TypeOf(call.ref());
      break;
    case Planned::kAllocTensor:
      plan.kind = PlanStep::Kind::kAllocate;
      plan.type = ir::relax::TypeOf(call.ref());
      plan.reads.clear();
      plan.counts_own_output = false;
      plan.scope = StringValue(call.args()[3], "alloc_tensor scope");
      break;
    case Planned::kCopy:
      plan.kind = PlanStep::Kind::kView;
      plan.value = CallOperands(call)[effect.planned_source];
      break;
    case Planned::kView:
      plan.kind = PlanStep::Kind::kView;
      plan.value = call.args()[effect.planned_source];
      break;
    case Planned::kInplace:
      plan.kind = PlanStep::Kind::kAllocate;
      plan.inplace_source = CallOperands(call)[effect.planned_source].get();
      break;
    case Planned::kUses:
      plan.kind = PlanStep::Kind::kAllocate;
      plan.counts_own_output = false;
      break;
    case Planned::kOpaque:
      plan.kind = PlanStep::Kind::kOpaque;
      plan.escapes = effect.escapes;
      break;
  }
  return plan;
}

}  // namespace

std::vector<PlanStep> PlanSteps(const std::vector<Step>& steps,
                                const std::vector<std::optional<MemoryEffect>>& effects,
                                PlanBlocks blocks) {
  std::vector<PlanStep> out;
  out.reserve(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    PlanStep plan;
    plan.block = blocks == PlanBlocks::kPerSeqExpr ? step.block : step.binding_block;
    switch (step.kind) {
      case Step::Kind::kBinding: {
        plan.var = step.var.get();
        std::optional<Call> call = As<Call>(step.expr);
        out.push_back(call && effects[i] ? CallStep(step, *call, *effects[i], std::move(plan))
                                         : NonCallStep(step, std::move(plan)));
        continue;
      }
      case Step::Kind::kIfResult:
        // Either branch result: their storage, which the stock planner gave up on at the
        // branch results already.
        plan.kind = PlanStep::Kind::kJoin;
        plan.var = step.var.get();
        plan.value = step.true_result;
        plan.alternative = step.false_result;
        break;
      default:
        // Conditions, branch results and the function result: what they read is not planned.
        plan.kind = PlanStep::Kind::kEscape;
        plan.reads = step.uses;
        plan.returns = step.kind == Step::Kind::kReturn;
        break;
    }
    out.push_back(std::move(plan));
  }
  return out;
}

namespace {

// StaticPlanBlockMemory reuses a free token whose size is within this factor of the request.
constexpr int64_t kMatchRange = 16;

/*! \brief The tokens of a value, with its tuple structure (a value that may be either of
 *         two values holds the tokens of both). */
struct TokenTree {
  std::vector<int> tokens;
  std::shared_ptr<const std::vector<TokenTree>> fields;
};

template <typename F>
void ForEachToken(const TokenTree& tree, const F& f) {
  for (int token : tree.tokens) f(token);
  if (tree.fields) {
    for (const TokenTree& field : *tree.fields) ForEachToken(field, f);
  }
}

/*! \brief A value that may be `a` or `b`. */
TokenTree Join(const TokenTree& a, const TokenTree& b) {
  if (a.fields && b.fields && a.fields->size() == b.fields->size()) {
    auto fields = std::make_shared<std::vector<TokenTree>>();
    for (size_t i = 0; i < a.fields->size(); ++i) {
      fields->push_back(Join((*a.fields)[i], (*b.fields)[i]));
    }
    return TokenTree{{}, std::move(fields)};
  }
  TokenTree joined;
  ForEachToken(a, [&](int t) { joined.tokens.push_back(t); });
  ForEachToken(b, [&](int t) { joined.tokens.push_back(t); });
  std::sort(joined.tokens.begin(), joined.tokens.end());
  joined.tokens.erase(std::unique(joined.tokens.begin(), joined.tokens.end()), joined.tokens.end());
  return joined;
}

/*! \brief The pool a token is reused from: its storage scope and dtype. */
using PoolKey = std::tuple<std::string, uint8_t, uint8_t, uint16_t>;

}  // namespace

/*! \brief A storage token of the planner's input: one `builtin.alloc_tensor`. */
struct MemoryPlanModel::Token {
  /*! \brief TokenSize::bytes (its static bytes where every token's shape is static). */
  int64_t bytes;
  int size_class;
  ObjectRef size;
  int64_t static_bytes;
  ObjectRef own_size;
  /*! \brief The pool (scope and dtype) it is reused from. */
  int pool;
  int block;
  /*! \brief The event that allocates it. */
  int event;
};

/*! \brief One step over token ids. */
struct MemoryPlanModel::Event {
  PlanStep::Kind kind = PlanStep::Kind::kOpaque;
  int block = -1;
  /*! \brief kAllocate: tokens read as PrimFunc arguments; kOpaque/kEscape: tokens unplanned. */
  std::vector<int> reads;
  /*! \brief kAllocate: the tokens of the outputs (one, for an in-place candidate). */
  std::vector<int> outputs;
  int candidate = -1;
  /*!
   * \brief In place: the tokens the output shares (resolved through earlier in-place steps):
   *        several when the reused tensor may be either of several (an `if` result), none when
   *        it is not one the planner manages (then neither is the output).
   */
  std::vector<int> sources;
  bool always_in_place = false;
  bool counts_own_output = true;
  bool returns = false;
  bool escapes = false;
};

namespace {

/*! \brief The default sizer: static shapes alone. */
std::optional<TokenSize> StaticTokenSize(const ir::relax::TensorType& tensor) {
  std::optional<int64_t> bytes = tensor.static_bytes();
  if (!bytes) return std::nullopt;
  return TokenSize{*bytes, -1, ObjectRef(), *bytes, ObjectRef()};
}

}  // namespace

MemoryPlanModel::MemoryPlanModel(const std::vector<PlanStep>& steps, const TokenSizer& sizer) {
  std::unordered_map<const Object*, TokenTree> env;
  std::map<PoolKey, int> pools;
  const TokenTree none;
  // References into `env` stay valid as it grows.
  auto lookup = [&](const Object* var) -> const TokenTree& {
    auto it = env.find(var);
    return it == env.end() ? none : it->second;
  };
  std::function<TokenTree(const ObjectRef&)> eval = [&](const ObjectRef& expr) -> TokenTree {
    if (!expr.defined()) return {};
    if (IsVar(expr)) return lookup(expr.get());
    if (std::optional<ir::relax::Tuple> tuple = As<ir::relax::Tuple>(expr)) {
      auto fields = std::make_shared<std::vector<TokenTree>>();
      for (const ObjectRef& field : tuple->fields()) fields->push_back(eval(field));
      return TokenTree{{}, std::move(fields)};
    }
    if (std::optional<ir::relax::TupleGetItem> get = As<ir::relax::TupleGetItem>(expr)) {
      TokenTree tuple = eval(get->tuple());
      int64_t index = get->index();
      if (tuple.fields && index >= 0 && index < static_cast<int64_t>(tuple.fields->size())) {
        return (*tuple.fields)[index];
      }
    }
    return {};  // constants, shapes: no storage the planner manages
  };
  // New tokens for a result of `type`. A symbolic size leaves the static figures unknown
  // (valid_), a size the sizer cannot tell every figure (sized_), not which storage each value
  // holds.
  std::function<void(const ObjectRef&, int64_t, const PlanStep&, TokenTree*)> make_tokens =
      [&](const ObjectRef& type, int64_t index, const PlanStep& step, TokenTree* tree) {
        if (std::optional<ir::relax::TupleType> tuple = As<ir::relax::TupleType>(type)) {
          auto fields = std::make_shared<std::vector<TokenTree>>();
          for (const ObjectRef& field : tuple->fields()) {
            fields->emplace_back();
            make_tokens(field, index, step, &fields->back());
          }
          tree->fields = std::move(fields);
          return;
        }
        std::optional<ir::relax::TensorType> tensor = As<ir::relax::TensorType>(type);
        if (!tensor) return;  // not a tensor: nothing allocated
        std::optional<TokenSize> size = sizer ? sizer(index, *tensor) : StaticTokenSize(*tensor);
        if (!size) {
          sized_ = false;
          size = TokenSize{0, -1, ObjectRef(), 0, ObjectRef()};
        }
        if (size->static_bytes < 0) valid_ = false;
        DLDataType dtype = tensor->dtype().value_or(DLDataType{kDLOpaqueHandle, 0, 0});
        PoolKey key{step.scope, dtype.code, dtype.bits, dtype.lanes};
        int pool = pools.emplace(key, static_cast<int>(pools.size())).first->second;
        tokens_.push_back(Token{size->bytes, size->size_class, size->size, size->static_bytes,
                                size->own_size, pool, step.block,
                                static_cast<int>(events_.size())});
        tree->tokens = {static_cast<int>(tokens_.size() - 1)};
      };
  auto leaves = [](const TokenTree& tree, std::vector<int>* out) {
    ForEachToken(tree, [&](int t) { out->push_back(t); });
  };

  for (size_t index = 0; index < steps.size(); ++index) {
    const PlanStep& step = steps[index];
    Event event;
    event.kind = step.kind;
    event.block = step.block;
    event.counts_own_output = step.counts_own_output;
    event.returns = step.returns;
    event.escapes = step.escapes;
    switch (step.kind) {
      case PlanStep::Kind::kAllocate: {
        for (const Object* read : step.reads) leaves(lookup(read), &event.reads);
        event.candidate = step.candidate;
        if (step.inplace_source) {
          leaves(lookup(step.inplace_source), &event.sources);
          std::sort(event.sources.begin(), event.sources.end());
          event.sources.erase(std::unique(event.sources.begin(), event.sources.end()),
                              event.sources.end());
          event.always_in_place = step.candidate < 0;
          // The output then keeps every tensor it may be alive: the peak may grow.
          if (step.candidate >= 0 && event.sources.size() > 1) bound_monotone_ = false;
        }
        if (event.always_in_place) {
          env[step.var] = lookup(step.inplace_source);
          break;
        }
        TokenTree result;
        make_tokens(step.type, static_cast<int64_t>(index), step, &result);
        leaves(result, &event.outputs);
        if (event.candidate >= 0 && event.outputs.size() != 1) {
          event.candidate = -1;  // not a single tensor: the pass never rewrites it
        }
        env[step.var] = result;
        break;
      }
      case PlanStep::Kind::kView:
      case PlanStep::Kind::kAlias:
        // Reads that keep a tensor alive (our planner), but are no call argument (TVM's).
        for (const Object* read : step.reads) leaves(lookup(read), &event.reads);
        env[step.var] = eval(step.value);
        break;
      case PlanStep::Kind::kJoin:
        env[step.var] = Join(eval(step.value), eval(step.alternative));
        break;
      case PlanStep::Kind::kOpaque:
      case PlanStep::Kind::kEscape:
        for (const Object* read : step.reads) leaves(lookup(read), &event.reads);
        if (step.var) env[step.var] = TokenTree();
        break;
    }
    events_.push_back(std::move(event));
  }
  num_pools_ = static_cast<int>(pools.size());
}

MemoryPlanModel::~MemoryPlanModel() = default;

bool MemoryPlanModel::IsInPlace(const Event& e, const std::vector<bool>& in_place) const {
  return e.always_in_place ||
         (e.candidate >= 0 && e.candidate < static_cast<int>(in_place.size()) &&
          in_place[e.candidate]);
}

MemoryPlanModel::Representatives MemoryPlanModel::Represent(
    const std::vector<bool>& in_place) const {
  // An in-place output is the token of its source (itself maybe an in-place output), or the
  // set of tokens its source may be, or none when the source is storage the planner does not
  // manage.
  Representatives reps;
  reps.rep.resize(tokens_.size());
  for (size_t t = 0; t < reps.rep.size(); ++t) reps.rep[t] = static_cast<int>(t);
  for (const Event& e : events_) {
    if (e.always_in_place || !IsInPlace(e, in_place)) continue;
    std::vector<int> set;
    for (int source : e.sources) reps.ForEach(source, [&](int t) { set.push_back(t); });
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    int& rep = reps.rep[e.outputs[0]];
    if (set.size() <= 1) {
      rep = set.empty() ? -1 : set[0];
    } else {
      rep = -2 - static_cast<int>(reps.sets.size());
      reps.sets.push_back(std::move(set));
    }
  }
  return reps;
}

std::optional<int64_t> MemoryPlanModel::TotalBytes(const std::vector<bool>& in_place) const {
  if (!valid_) return std::nullopt;
  return Plan(in_place, /*plan_dynamic_output=*/false, /*with_size=*/false).bytes;
}

std::optional<StockPlanFigures> MemoryPlanModel::StockPlan(const std::vector<bool>& in_place,
                                                           bool plan_dynamic_output) const {
  if (!sized_) return std::nullopt;
  return Plan(in_place, plan_dynamic_output, /*with_size=*/true);
}

StockPlanFigures MemoryPlanModel::Plan(const std::vector<bool>& in_place, bool plan_dynamic_output,
                                       bool with_size) const {
  size_t n = tokens_.size();
  Representatives reps = Represent(in_place);

  // Stage 1: reference counts over PrimFunc arguments, and tokens left unplanned.
  std::vector<int> refs(n, 0);
  std::vector<char> planned(n, 1);
  for (const Event& e : events_) {
    switch (e.kind) {
      case PlanStep::Kind::kAllocate:
        for (int read : e.reads) {
          reps.ForEach(read, [&](int t) {
            // The planner plans one block at a time: a token read in another block is given up.
            if (tokens_[t].block != e.block) planned[t] = 0;
            ++refs[t];
          });
        }
        if (!IsInPlace(e, in_place) && e.counts_own_output) {
          for (int t : e.outputs) ++refs[t];  // the output is an argument of its own call
        }
        break;
      case PlanStep::Kind::kOpaque:
      case PlanStep::Kind::kEscape:
        for (int read : e.reads) reps.ForEach(read, [&](int t) { planned[t] = 0; });
        break;
      default:
        break;
    }
  }

  // Stage 2: greedy reuse in program order. A storage of symbolic size is reused only for a
  // token of its size class, the earliest freed first.
  struct Storage {
    int64_t bytes;
    int size_class;
    ObjectRef size;
    int refs;
  };
  std::vector<Storage> storages;
  std::vector<int> storage_of(n, -1);
  std::vector<std::multimap<int64_t, int>> pools(num_pools_);
  std::vector<std::multimap<int, int>> symbolic_pools(num_pools_);
  StockPlanFigures figures;
  std::vector<ObjectRef> sizes;  // with_size: each allocation's
  auto add_size = [&](int64_t bytes, const ObjectRef& size) {
    if (with_size) sizes.push_back(bytes >= 0 ? IntConst(kInt64, bytes) : size);
  };
  auto allocate = [&](int t) {
    std::multimap<int64_t, int>& pool = pools[tokens_[t].pool];
    int64_t bytes = tokens_[t].bytes;
    int storage = -1;
    // A tensor nothing reads gets storage of its own, never released (as in TVM).
    if (refs[t] > 0 && bytes < 0) {
      std::multimap<int, int>& symbolic = symbolic_pools[tokens_[t].pool];
      auto found = symbolic.lower_bound(tokens_[t].size_class);
      if (found != symbolic.end() && found->first == tokens_[t].size_class) {
        storage = found->second;
        symbolic.erase(found);
      }
    } else if (refs[t] > 0) {
      auto begin = pool.lower_bound(bytes / kMatchRange);
      auto mid = pool.lower_bound(bytes);
      auto end = pool.upper_bound(bytes * kMatchRange);
      if (mid != end) {
        storage = mid->second;
        pool.erase(mid);
      } else if (mid != begin) {
        --mid;
        storage = mid->second;
        storages[storage].bytes = bytes;  // grown to fit
        pool.erase(mid);
      }
    }
    if (storage < 0) {
      storages.push_back(Storage{bytes, tokens_[t].size_class, tokens_[t].size, 0});
      storage = static_cast<int>(storages.size() - 1);
    }
    storages[storage].refs = refs[t];
    storage_of[t] = storage;
  };
  auto use = [&](int t) {
    if (!planned[t] || storage_of[t] < 0) return;
    Storage& storage = storages[storage_of[t]];
    if (--storage.refs > 0) return;
    if (storage.bytes >= 0) {
      pools[tokens_[t].pool].emplace(storage.bytes, storage_of[t]);
    } else {
      symbolic_pools[tokens_[t].pool].emplace(storage.size_class, storage_of[t]);
    }
  };
  // A tensor left unplanned is allocated at its shape, or (planning dynamic outputs) at its
  // bounds where its shape is symbolic.
  auto leave_unplanned = [&](const Token& token) {
    if (token.static_bytes >= 0) {
      figures.bytes += token.static_bytes;
      add_size(token.static_bytes, token.own_size);
    } else if (plan_dynamic_output && token.bytes >= 0) {
      figures.bytes += token.bytes;
      add_size(token.bytes, token.size);
    } else {
      ++figures.symbolic;
      add_size(-1, plan_dynamic_output ? token.size : token.own_size);
    }
  };
  for (const Event& e : events_) {
    if (e.kind != PlanStep::Kind::kAllocate) continue;
    bool fresh = !IsInPlace(e, in_place);
    if (fresh) {
      for (int t : e.outputs) {
        if (planned[t]) {
          allocate(t);
        } else {
          leave_unplanned(tokens_[t]);
        }
      }
    }
    for (int read : e.reads) reps.ForEach(read, use);
    if (fresh && e.counts_own_output) {
      for (int t : e.outputs) use(t);
    }
  }
  for (const Storage& storage : storages) {
    if (storage.bytes >= 0) {
      figures.bytes += storage.bytes;
    } else {
      ++figures.symbolic;
    }
    add_size(storage.bytes, storage.size);
  }
  if (with_size) {
    figures.size = IntConst(kInt64, 0);
    for (const ObjectRef& size : sizes) figures.size = Add(figures.size, size);
  }
  return figures;
}

MemoryPlanModel::MemplanItems MemoryPlanModel::MemplanInput(
    const std::vector<bool>& in_place) const {
  size_t n = tokens_.size();
  Representatives reps = Represent(in_place);
  // Lifetimes over event indices, and the tokens that leave planning.
  std::vector<int64_t> first(n, -1), last(n, -1);
  std::vector<char> planned(n, 1);
  for (size_t t = 0; t < n; ++t) {
    int64_t step = tokens_[t].event;
    reps.ForEach(static_cast<int>(t), [&](int r) {
      first[r] = first[r] < 0 ? step : std::min(first[r], step);
      last[r] = std::max(last[r], step);
    });
  }
  for (size_t i = 0; i < events_.size(); ++i) {
    const Event& e = events_[i];
    // An `if` condition or branch result is a read like any other: the `if` variable is
    // either branch result (kJoin), so its later reads extend what both refer to.
    bool leaves_planning = (e.kind == PlanStep::Kind::kEscape && e.returns) ||
                           (e.kind == PlanStep::Kind::kOpaque && e.escapes);
    for (int read : e.reads) {
      reps.ForEach(read, [&](int t) {
        last[t] = std::max(last[t], static_cast<int64_t>(i));
        if (leaves_planning) planned[t] = 0;
      });
    }
  }
  MemplanItems out;
  for (size_t t = 0; t < n; ++t) {
    if (reps.rep[t] != static_cast<int>(t)) continue;  // shares its source's storage
    if (!planned[t]) {
      out.unplanned += tokens_[t].bytes;
    } else {
      out.items.push_back(PackItem{tokens_[t].bytes, first[t], last[t]});
    }
  }
  return out;
}

std::optional<int64_t> MemoryPlanModel::MemplanBytes(const std::vector<bool>& in_place,
                                                     int64_t alignment, int64_t search_ms) const {
  if (!valid_) return std::nullopt;
  MemplanItems input = MemplanInput(in_place);
  SearchBudget budget = SearchBudget::ForMs(search_ms);
  PackOptions options;
  options.alignment = alignment;
  options.budget = search_ms > 0 ? &budget : nullptr;
  return input.unplanned + PackOffsets(input.items, options).bytes;
}

std::vector<int> MemoryPlanModel::WritesIntoResult(
    const std::vector<bool>& in_place, const std::function<bool(int)>& refusable) const {
  // Per representative token, the last event that reads it as the function result, or -1.
  auto returned = [&](const std::vector<bool>& chosen) {
    Representatives reps = Represent(chosen);
    std::vector<char> out(tokens_.size(), 0);
    for (const Event& e : events_) {
      if (e.kind != PlanStep::Kind::kEscape || !e.returns) continue;
      for (int read : e.reads) reps.ForEach(read, [&](int t) { out[t] = 1; });
    }
    return std::make_pair(reps, out);
  };
  std::vector<bool> chosen = in_place;
  std::vector<int> refused;
  // Latest first: in a chain of in-place calls ending in the result, refusing the last one
  // gives the result storage of its own and leaves the earlier ones where they were.
  for (auto e = events_.rbegin(); e != events_.rend(); ++e) {
    if (e->always_in_place || !IsInPlace(*e, chosen) || !refusable(e->candidate)) continue;
    auto [reps, with] = returned(chosen);
    bool writes_result = false;
    reps.ForEach(e->outputs[0], [&](int t) { writes_result = writes_result || with[t]; });
    if (!writes_result) continue;
    chosen[e->candidate] = false;
    auto [reps_without, without] = returned(chosen);
    // Only where the call alone makes the storage the result: else the storage leaves
    // planning anyway, and refusing the call would only cost its bytes.
    bool still_returned = false;
    for (int source : e->sources) {
      reps_without.ForEach(source, [&](int t) { still_returned = still_returned || without[t]; });
    }
    if (still_returned) {
      chosen[e->candidate] = true;
    } else {
      refused.push_back(e->candidate);
    }
  }
  return refused;
}

std::optional<int64_t> MemoryPlanModel::MemplanLowerBound(const std::vector<bool>& in_place) const {
  if (!valid_ || !bound_monotone_) return std::nullopt;
  MemplanItems input = MemplanInput(in_place);
  return input.unplanned + PeakLiveBytes(input.items);
}

}  // namespace relax
}  // namespace tvm_memplan
