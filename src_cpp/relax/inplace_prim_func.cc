/*!
 * \file relax/inplace_prim_func.cc
 * \brief The access proof for writing a PrimFunc's output into one of its inputs.
 */
#include "relax/inplace_prim_func.h"

#include <tvm/ffi/extra/structural_equal.h>

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "ir/visitor.h"

namespace tvm_memplan {
namespace relax {

using namespace ir;

namespace {

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

/*!
 * \brief Whether a PrimFunc may store its output into one of its inputs. Sound for any order
 *        of element updates within the writing block: each element of the output is written by
 *        one block instance that reads the input only at that element; other reads of the
 *        input happen in blocks that finish before the writing block starts.
 */
class InplaceAccessCheck : public ScopedVisitor {
 public:
  InplaceAccessCheck(Analyzer* analyzer, std::vector<Buffer> inputs, const Buffer& output)
      : ScopedVisitor(analyzer), inputs_(std::move(inputs)), output_(output) {}

  std::optional<std::string> Check(const PrimFunc& func) {
    for (const Buffer& input : inputs_) {
      if (!SameBufferType(input, output_)) {
        return "the input and output buffers differ in shape, dtype or layout";
      }
    }
    std::string input = Quoted(inputs_[0].name());
    Run(func);
    if (failure_) return failure_;
    if (output_block_ < 0) return "the PrimFunc does not write its output";
    for (const Access& load : input_loads_) {
      if (load.block == output_block_) {
        if (!ffi::StructuralEqual::Equal(load.indices, output_indices_)) {
          return "the writing block reads " + input + " at another element than it writes";
        }
        continue;
      }
      if (load.order > first_output_store_) return input + " is read after the output is written";
      for (const Object* loop : load.loops) {
        if (std::count(output_loops_.begin(), output_loops_.end(), loop)) {
          return "a block reading " + input + " shares a loop with the block writing the output";
        }
      }
    }
    return std::nullopt;
  }

 private:
  struct Access {
    int block;
    int64_t order;
    std::vector<const Object*> loops;
    Array<ObjectRef> indices;
  };
  struct BlockScope {
    int id;
    SBlockRealize realize;
  };

  bool IsInput(const Buffer& buffer) const {
    return std::any_of(inputs_.begin(), inputs_.end(),
                       [&](const Buffer& input) { return input.same_as(buffer); });
  }

  void Fail(const std::string& why) {
    if (!failure_) failure_ = why;
  }

  std::vector<const Object*> LoopNodes() const {
    std::vector<const Object*> nodes;
    for (const LoopScope& loop : loops()) nodes.push_back(loop.node.get());
    return nodes;
  }

  void OnBlockEnter(const SBlockRealize& realize) override {
    blocks_.push_back(BlockScope{next_block_++, realize});
  }
  void OnBlockExit(const SBlockRealize& /*realize*/) override { blocks_.pop_back(); }

  void OnStore(const BufferStore& store) override {
    ++order_;
    if (IsInput(store.buffer())) return Fail("the PrimFunc writes its input");
    if (!store.buffer().same_as(output_)) return;
    int block = blocks_.empty() ? -1 : blocks_.back().id;
    if (output_block_ >= 0) {
      if (block != output_block_ ||
          !ffi::StructuralEqual::Equal(store.indices(), output_indices_)) {
        Fail("the output is written by more than one statement");
      }
      return;
    }
    output_block_ = block;
    output_indices_ = store.indices();
    output_loops_ = LoopNodes();
    first_output_store_ = order_;
    if (blocks_.empty()) return Fail("the output is written outside a block");
    CheckOneWritePerElement(blocks_.back().realize, store);
  }

  /*!
   * \brief The store's indices are distinct iteration vars of its block, bound to distinct
   *        enclosing loops, and no other loop encloses the store: one write per element.
   */
  void CheckOneWritePerElement(const SBlockRealize& realize, const BufferStore& store) {
    SBlock block = realize.block();
    if (block.init().defined()) return Fail("the writing block is a reduction");
    // Its loads are then all inside the store: read before the element is written.
    if (!block.body().same_as(store.ref())) return Fail("the writing block is not a single store");
    Array<ObjectRef> iter_vars = block.iter_vars();
    Array<ObjectRef> values = realize.iter_values();
    Array<ObjectRef> indices = store.indices();
    if (loops().size() != indices.size()) {
      return Fail("the writing block runs under loops that do not index the output");
    }
    std::unordered_set<const Object*> used_vars, used_loops;
    for (const ObjectRef& index : indices) {
      int position = -1;
      for (size_t k = 0; k < iter_vars.size(); ++k) {
        if (IterVar(iter_vars[k]).var().same_as(index)) position = static_cast<int>(k);
      }
      if (position < 0 || !used_vars.insert(index.get()).second) {
        return Fail("the output is not indexed by distinct block iteration variables");
      }
      const ObjectRef& value = values[position];
      bool is_loop = std::any_of(loops().begin(), loops().end(),
                                 [&](const LoopScope& loop) { return loop.var.same_as(value); });
      if (!is_loop || !used_loops.insert(value.get()).second) {
        return Fail("the writing block's iteration is not a one-to-one map of its loops");
      }
    }
  }

  void OnLoad(const BufferLoad& load) override {
    ++order_;
    if (load.buffer().same_as(output_)) return Fail("the PrimFunc reads its output");
    if (!IsInput(load.buffer())) return;
    input_loads_.push_back(
        Access{blocks_.empty() ? -1 : blocks_.back().id, order_, LoopNodes(), load.indices()});
  }

  void OnCall(const Call& call) override {
    if (call.IsOp(schema::op::BufferData) || call.IsOp(schema::op::AccessPtr) ||
        call.IsOp(schema::op::AddressOf)) {
      Fail("the PrimFunc takes a buffer's address (" + call.op_name() + ")");
    }
  }

  void OnMatchBuffer(const MatchBufferRegion& match, const SBlock& /*block*/) override {
    Buffer source = match.source().buffer();
    if (IsInput(source) || source.same_as(output_)) {
      Fail("a block matches a sub-buffer of " + Quoted(source.name()));
    }
  }

  void OnAllocation(const AllocationSite& site) override {
    if (site.kind != AllocationSite::Kind::kDeclBuffer) return;
    std::optional<Buffer> viewed = DeclBuffer(site.node).viewed_buffer();
    if (viewed && (IsInput(*viewed) || viewed->same_as(output_))) {
      Fail("the PrimFunc declares a view of " + Quoted(viewed->name()));
    }
  }

  std::vector<Buffer> inputs_;
  Buffer output_;
  std::optional<std::string> failure_;
  std::vector<BlockScope> blocks_;
  int next_block_ = 0;
  int64_t order_ = 0;
  int output_block_ = -1;
  int64_t first_output_store_ = -1;
  Array<ObjectRef> output_indices_;
  std::vector<const Object*> output_loops_;
  std::vector<Access> input_loads_;
};

}  // namespace

std::optional<std::string> CheckInplacePrimFunc(const PrimFunc& prim_func,
                                                const std::vector<int64_t>& inputs) {
  Array<ObjectRef> params = prim_func.params();
  std::optional<std::string> result;
  std::vector<Buffer> buffers;
  for (int64_t input : inputs) {
    if (input < 0 || input + 1 >= static_cast<int64_t>(params.size()) ||
        !Is<Buffer>(params[input])) {
      result = "the PrimFunc's parameters are not the expected buffers";
      break;
    }
    buffers.push_back(Buffer(params[input]));
  }
  if (!result && (buffers.empty() || !Is<Buffer>(params[params.size() - 1]))) {
    result = "the PrimFunc's parameters are not the expected buffers";
  }
  if (result) return result;
  Analyzer analyzer;
  return InplaceAccessCheck(&analyzer, buffers, Buffer(params[params.size() - 1])).Check(prim_func);
}

}  // namespace relax
}  // namespace tvm_memplan
