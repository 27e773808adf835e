/*!
 * \file relax/storage_flow.h
 * \brief Which storage each Relax value may refer to, and where that storage is read: a
 *        points-to analysis over storage roots, run forward over a function's program points.
 *
 * \code
 *   a = R.exp(x)             # kAllocate: a -> {r1}                 (x -> {r0}, a parameter)
 *   t = (a, x)               # t -> ({r1}, {r0})
 *   v = R.reshape(t[0], s)   # kView: v -> {r1}
 *   c = R.add(v, a)          # reads r1 here; c -> {r2}
 *   return c                 # r2 reaches the result
 *   // root r1: defined at step 0, read at steps 1, 2, 3 (through t and v)
 * \endcode
 *
 * A storage root is one allocation (or a parameter, a constant, storage of unknown origin).
 * Each step that reads a variable reads every root the variable may refer to, so a root's
 * reads cover all its aliases: tuples, tuple items, views, match_cast, `if` results, results
 * of calls that may return an argument. What a call does comes from MemoryEffects, decided
 * once per binding by the caller. The in-place analysis asks whether a root is read after a
 * step; the memory planner asks for its first and last step.
 */
#ifndef TVM_MEMPLAN_RELAX_STORAGE_FLOW_H_
#define TVM_MEMPLAN_RELAX_STORAGE_FLOW_H_

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "relax/memory_effects.h"
#include "relax/program_points.h"

namespace tvm_memplan {
namespace relax {

using RootId = int32_t;

/*!
 * \brief A sorted set of roots, without repeats, its first two held in place. Most values refer
 *        to one storage or two, and the flow makes and copies a set for each value it meets: on
 *        a 24-block transformer the planner pass called malloc about 60,000 times, a third of
 *        them in this flow, where TVM's planner calls it 35,500 times.
 */
class RootSet {
 public:
  using value_type = RootId;
  using const_iterator = const RootId*;

  RootSet() = default;
  RootSet(std::initializer_list<RootId> ids) {  // NOLINT(runtime/explicit)
    for (RootId id : ids) push_back(id);
  }
  RootSet(const RootSet& other) { *this = other; }
  RootSet(RootSet&& other) noexcept { *this = std::move(other); }
  RootSet& operator=(const RootSet& other) {
    if (this == &other) return *this;
    size_ = 0;
    reserve(other.size_);
    std::copy(other.begin(), other.end(), data());
    size_ = other.size_;
    return *this;
  }
  RootSet& operator=(RootSet&& other) noexcept {
    if (this == &other) return *this;
    if (other.heap_) {
      heap_ = std::move(other.heap_);
      capacity_ = other.capacity_;
      size_ = other.size_;
    } else {
      // In place there: copied, whatever this holds (its own bytes are enough).
      std::copy(other.begin(), other.end(), data());
      size_ = other.size_;
    }
    other.capacity_ = kInPlace;
    other.size_ = 0;
    return *this;
  }

  const RootId* begin() const { return data(); }
  const RootId* end() const { return data() + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  RootId operator[](size_t i) const { return data()[i]; }
  RootId front() const { return data()[0]; }
  RootId back() const { return data()[size_ - 1]; }

  /*! \brief Append `id` (the caller keeps the set sorted). */
  void push_back(RootId id) {
    if (size_ == capacity_) reserve(2 * capacity_);
    data()[size_++] = id;
  }
  void reserve(size_t capacity) {
    if (capacity <= capacity_) return;
    std::unique_ptr<RootId[]> grown(new RootId[capacity]);
    std::copy(begin(), end(), grown.get());
    heap_ = std::move(grown);
    capacity_ = static_cast<uint32_t>(capacity);
  }

 private:
  static constexpr uint32_t kInPlace = 2;
  RootId* data() { return heap_ ? heap_.get() : in_place_; }
  const RootId* data() const { return heap_ ? heap_.get() : in_place_; }

  RootId in_place_[kInPlace] = {};
  std::unique_ptr<RootId[]> heap_;
  uint32_t size_ = 0;
  uint32_t capacity_ = kInPlace;
};

RootSet Union(const RootSet& a, const RootSet& b);
bool Intersects(const RootSet& a, const RootSet& b);

/*!
 * \brief What a value may refer to: `roots` holds every storage reachable from it (through
 *        tuple fields too); `fields` is the tuple structure when it is known.
 */
struct Value {
  RootSet roots;
  std::shared_ptr<const std::vector<Value>> fields = nullptr;
};

Value TupleOf(std::vector<Value> fields);
/*! \brief A value that may be either `a` or `b`. */
Value Join(const Value& a, const Value& b);

/*! \brief Who owns a storage root. */
enum class RootKind {
  /*! \brief Allocated by a call of this function. */
  kAllocated,
  /*! \brief A function parameter: the caller owns it. */
  kParam,
  /*! \brief A constant, or computed from constants only (FoldConstant may make it one). */
  kConstant,
  /*! \brief Returned by a call of a function or an opaque operator: may be anything. */
  kForeign,
};

/*!
 * \brief Where the analysis stands, for messages: the binding of a step (written "`x`"), or a
 *        phrase. Written out only when a message needs it (StorageFlow::Text), not per step.
 */
class Where {
 public:
  Where(std::string phrase) : phrase_(std::move(phrase)) {}  // NOLINT(runtime/explicit)
  Where(const char* phrase) : phrase_(phrase) {}             // NOLINT(runtime/explicit)
  /*! \brief The binding (or `if` merge) of step `step`. */
  static Where BindingOf(int64_t step) {
    Where where("");
    where.step_ = step;
    return where;
  }

 private:
  friend class StorageFlow;
  int64_t step_ = -1;
  std::string phrase_;
};

/*! \brief How a root's origin reads, around its Where. */
enum class OriginForm {
  /*! \brief The Where itself. */
  kAt,
  /*! \brief "the result of <where>". */
  kResultOf,
  /*! \brief "<where>, computed from constants only". */
  kFromConstants,
};

struct Root {
  RootKind kind;
  /*! \brief Where the storage comes from, for messages (StorageFlow::Origin writes it out). */
  OriginForm form = OriginForm::kAt;
  Where where;
  /*! \brief Non-empty once the storage escaped (impure call, closure): why. */
  std::string escape;
  /*! \brief The step that created the root (-1: a parameter). */
  int64_t step = -1;
  /*! \brief Steps reading a variable that may refer to this storage, in no particular order. */
  std::vector<int64_t> uses;
};

class StorageFlow {
 public:
  /*! \brief Over the program points of one function (kept by reference). */
  explicit StorageFlow(const std::vector<Step>& steps);

  /*! \brief A new root created at `step`. */
  RootId NewRoot(RootKind kind, Where origin, int64_t step, OriginForm form = OriginForm::kAt);
  /*! \brief Bind `var` to `value`: its roots are read wherever the var is. */
  void Define(const ObjectRef& var, Value value);
  /*! \brief Mark `roots` as escaped, for `why` (the first reason is kept). */
  void Escape(const RootSet& roots, const std::string& why);

  /*!
   * \brief The value of `expr` evaluated at `step`: variables, constants, tuples and tuple
   *        items, shapes; closures (what they capture escapes) and anything else (opaque).
   *        Calls go through CallResult.
   */
  Value Eval(const ObjectRef& expr, int64_t step, const Where& where);
  /*! \brief The value of `call`, whose effect is `effect`, at `step` (arguments that escape
   *         are marked). */
  Value CallResult(const ir::Call& call, const MemoryEffect& effect, int64_t step,
                   const Where& where);
  /*! \brief The value the binding or `if` merge of kBinding / kIfResult `step` defines. */
  Value StepValue(int64_t step, const MemoryEffect* effect);

  /*! \brief Fresh storage for a result of type `type` (one root per tensor of a tuple). */
  Value Fresh(const ObjectRef& type, RootKind kind, const Where& origin, OriginForm form,
              int64_t step);
  /*! \brief A result that may be any of `args` or storage of unknown origin. */
  Value Opaque(const RootSet& args, const Where& origin, int64_t step);

  const Value* Find(const Object* var) const;
  const Root& root(RootId id) const { return roots_[id]; }
  /*! \brief Where root `id`'s storage comes from: "the result of `x`", "a parameter", ... */
  std::string Origin(RootId id) const;
  /*! \brief `where` written out. */
  std::string Text(const Where& where) const;
  bool OnlyConstants(const RootSet& roots) const;

 private:
  const std::vector<Step>& steps_;
  /*! \brief Variable -> the steps reading it. */
  std::unordered_map<const Object*, std::vector<int64_t>> uses_;
  std::unordered_map<const Object*, Value> env_;
  std::vector<Root> roots_;
};

/*!
 * \brief The flow of storage through one function, followed once (FollowStorage): the in-place
 *        guard judges writes by it, and the planner's analysis reads it again for each function
 *        the guard left as it was.
 */
struct FunctionFlow {
  explicit FunctionFlow(std::shared_ptr<const std::vector<Step>> program_points)
      : steps(std::move(program_points)), values(*steps) {}
  /*! \brief The function's program points (FlattenFunction). */
  std::shared_ptr<const std::vector<Step>> steps;
  /*! \brief Per step, what its call does to memory (steps binding no call: none). */
  std::vector<std::optional<MemoryEffect>> effects;
  /*! \brief The value of every parameter, binding and `if` merge. */
  StorageFlow values;
};

/*! \brief The flow of `func` over its program points `steps`: the parameters first, then each
 *         binding and `if` merge in program order, each call as `classifier` classifies it. */
std::shared_ptr<FunctionFlow> FollowStorage(const ir::relax::Function& func,
                                            std::shared_ptr<const std::vector<Step>> steps,
                                            MemoryEffects* classifier);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_STORAGE_FLOW_H_
