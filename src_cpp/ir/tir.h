/*!
 * \file ir/tir.h
 * \brief Views over TVM 0.27 TIR: low-level `tirx` statements and schedulable `s_tir` blocks.
 *
 * In 0.27 a buffer is an `ir.Var` whose type is a `tirx.BufferType`; `AllocBuffer` and
 * `DeclBuffer` are flat statements whose scope is the rest of the enclosing sequence:
 *
 * \code
 *   # TVMScript                              C++
 *   B = T.alloc_buffer((16, 16))             AllocBuffer alloc;  alloc.buffer().shape()
 *   V = T.decl_buffer((256,), data=B.data)   DeclBuffer decl;    decl.viewed_buffer() == B
 *   B[i, j] = A[i, j]                        BufferStore / BufferLoad over buffer vars
 * \endcode
 */
#ifndef TVM_MEMPLAN_IR_TIR_H_
#define TVM_MEMPLAN_IR_TIR_H_

#include <functional>
#include <optional>
#include <string>

#include "ir/expr.h"
#include "ir/node.h"

namespace tvm_memplan {
namespace ir {

/*! \brief A buffer: an ir.Var typed by a tirx.BufferType. */
class Buffer : public NodeView {
 public:
  explicit Buffer(ObjectRef var, const char* context = "Buffer");
  static bool Matches(const ObjectRef& node);
  static const TypeKey& Type() { return schema::type::Var; }

  std::string name() const { return schema::field::Var_name.Get<String>(ref_); }
  /*! \brief The tirx.BufferType. */
  ObjectRef type() const { return schema::field::Expr_ty.Get<ObjectRef>(ref_); }
  DLDataType dtype() const;
  Array<ObjectRef> shape() const;
  Array<ObjectRef> strides() const;
  ObjectRef elem_offset() const;
  /*! \brief Storage scope; "" means "global" as in TVM. */
  std::string scope() const;
  /*! \brief The tirx.TileLayout, or nullptr. */
  Any layout() const { return schema::field::BufferType_layout.Get(type()); }

  /*! \brief Product of the shape when every extent is a constant. */
  std::optional<int64_t> ConstNumElements() const;
  /*! \brief Bytes the buffer's allocation takes when its shape and strides are constant
   *         (AllocatedBytes). */
  std::optional<int64_t> ConstSizeBytes() const;

  /*!
   * \brief A new buffer var of the same name, dtype and scope with `new_shape`, its layout
   *        rebuilt for the new shape. nullopt when the buffer has strides or a layout other
   *        than the default row-major one, which a plain reshape would break.
   */
  std::optional<Buffer> WithShape(const Array<ObjectRef>& new_shape) const;

  /*! \brief A new buffer var of the same name, dtype, shape and layout in storage `scope`. */
  Buffer WithScope(const std::string& scope) const;
  /*!
   * \brief As WithShape, and the strides replaced by `new_strides` (empty: row-major), so a
   *        strided buffer can be re-laid out too. nullopt for a layout other than the default
   *        row-major one of the current shape.
   */
  std::optional<Buffer> WithShape(const Array<ObjectRef>& new_shape,
                                  const Array<ObjectRef>& new_strides) const;
};

/*!
 * \brief The bytes an allocation of `shape` elements of `dtype` takes, with `strides` (empty:
 *        row-major) counting the elements up to the last one; nullopt when an extent or stride
 *        is symbolic. Every element takes whole bytes, as TVM allocates them (a bool or an int4
 *        takes one byte: DTypeBytes). The one count of buffer bytes: placement, compaction
 *        records, summaries and the report all use it.
 */
std::optional<int64_t> AllocatedBytes(const Array<ObjectRef>& shape,
                                      const Array<ObjectRef>& strides, DLDataType dtype);

/*!
 * \brief AllocatedBytes as an int64 expression of the shape's variables (an IntImm when
 *        static), for sizes that are symbolic; nullopt when a stride is symbolic.
 */
std::optional<ObjectRef> AllocatedBytesExpr(const Array<ObjectRef>& shape,
                                            const Array<ObjectRef>& strides, DLDataType dtype);

/*! \brief tirx.PrimFunc. Params are ir.Vars; buffer params are Buffers. */
class PrimFunc : public NodeView {
  TVM_MEMPLAN_VIEW(PrimFunc, schema::type::PrimFunc)
  Array<ObjectRef> params() const {
    return schema::field::PrimFunc_params.Get<Array<ObjectRef>>(ref_);
  }
  ObjectRef body() const { return schema::field::PrimFunc_body.Get<ObjectRef>(ref_); }
  /*! \brief The return type; an empty ir.TupleType when the function returns nothing. */
  ObjectRef ret_type() const { return schema::field::PrimFunc_ret_type.Get<ObjectRef>(ref_); }
  bool ReturnsNothing() const;
  PrimFunc WithBody(const ObjectRef& body) const;
  /*!
   * \brief A function with other parameters and body, same attributes and return type (built
   *        by the constructor, which recomputes the function's type from the parameters).
   */
  PrimFunc WithParamsAndBody(const Array<ObjectRef>& params, const ObjectRef& body) const;
  PrimFunc WithRetType(const ObjectRef& ret_type) const;
  /*! \brief The `global_symbol` attribute, or "". */
  std::string global_symbol() const;
};

class SeqStmt : public NodeView {
  TVM_MEMPLAN_VIEW(SeqStmt, schema::type::SeqStmt)
  Array<ObjectRef> seq() const { return schema::field::SeqStmt_seq.Get<Array<ObjectRef>>(ref_); }
};
/*! \brief A SeqStmt of `stmts`, or the single statement when there is one. */
ObjectRef MakeSeq(const Array<ObjectRef>& stmts);

class AllocBuffer : public NodeView {
  TVM_MEMPLAN_VIEW(AllocBuffer, schema::type::AllocBuffer)
  Buffer buffer() const {
    return Buffer(schema::field::AllocBuffer_buffer.Get<ObjectRef>(ref_), "AllocBuffer.buffer");
  }
  Map<String, Any> annotations() const {
    return schema::field::AllocBuffer_annotations.Get<Map<String, Any>>(ref_);
  }
  AllocBuffer WithBuffer(const Buffer& buffer) const;
  AllocBuffer WithAnnotations(const Map<String, Any>& annotations) const;
};
AllocBuffer MakeAllocBuffer(const Buffer& buffer, const Map<String, Any>& annotations = {});

/*! \brief `B.data`: the data pointer of buffer B, typed with B's dtype and scope. */
ObjectRef BufferDataPointer(const Buffer& buffer);

/*! \brief tirx.DeclBuffer: declares `buffer` over the memory of `data`. */
class DeclBuffer : public NodeView {
  TVM_MEMPLAN_VIEW(DeclBuffer, schema::type::DeclBuffer)
  Buffer buffer() const {
    return Buffer(schema::field::DeclBuffer_buffer.Get<ObjectRef>(ref_), "DeclBuffer.buffer");
  }
  ObjectRef data() const { return schema::field::DeclBuffer_data.Get<ObjectRef>(ref_); }
  /*! \brief B when the data is `B.data` (a view of buffer B), else nullopt. */
  std::optional<Buffer> viewed_buffer() const;
  DeclBuffer WithBufferAndData(const Buffer& buffer, const ObjectRef& data) const;
};

/*! \brief B when `expr` is `B.data` (tirx.buffer_data(B)), else nullopt. */
std::optional<Buffer> BufferOfDataPointer(const ObjectRef& expr);

/*! \brief Whether `call` takes a buffer's address (buffer_data, tvm_access_ptr, address_of):
 *         memory then reachable by accesses no buffer load or store shows. */
bool TakesBufferAddress(const Call& call);

class BufferStore : public NodeView {
  TVM_MEMPLAN_VIEW(BufferStore, schema::type::BufferStore)
  Buffer buffer() const {
    return Buffer(schema::field::BufferStore_buffer.Get<ObjectRef>(ref_), "BufferStore.buffer");
  }
  ObjectRef value() const { return schema::field::BufferStore_value.Get<ObjectRef>(ref_); }
  Array<ObjectRef> indices() const {
    return schema::field::BufferStore_indices.Get<Array<ObjectRef>>(ref_);
  }
  BufferStore WithAccess(const Buffer& buffer, const Array<ObjectRef>& indices) const;
};

/*! \brief A buffer load (ir.TensorLoad, built by tirx.BufferLoad). */
class BufferLoad : public NodeView {
  TVM_MEMPLAN_VIEW(BufferLoad, schema::type::TensorLoad)
  Buffer buffer() const {
    return Buffer(schema::field::TensorLoad_source.Get<ObjectRef>(ref_), "BufferLoad.source");
  }
  Array<ObjectRef> indices() const {
    return schema::field::TensorLoad_indices.Get<Array<ObjectRef>>(ref_);
  }
  BufferLoad WithAccess(const Buffer& buffer, const Array<ObjectRef>& indices) const;
};

/*! \brief ForKind as TVM numbers it. */
enum class ForKind : int64_t {
  kSerial = 0,
  kParallel = 1,
  kVectorized = 2,
  kUnrolled = 3,
  kThreadBinding = 4
};

class For : public NodeView {
  TVM_MEMPLAN_VIEW(For, schema::type::For)
  Var loop_var() const { return Var(schema::field::For_loop_var.Get<ObjectRef>(ref_)); }
  ObjectRef min() const { return schema::field::For_min.Get<ObjectRef>(ref_); }
  ObjectRef extent() const { return schema::field::For_extent.Get<ObjectRef>(ref_); }
  ForKind kind() const;
  /*! \brief The step of `range(min, min + extent, step)`, or a null ref for step 1. */
  ObjectRef step() const {
    return schema::field::For_step.Get(ref_).cast<Optional<ObjectRef>>().value_or(ObjectRef());
  }
  ObjectRef body() const { return schema::field::For_body.Get<ObjectRef>(ref_); }
  /*! \brief The thread tag ("threadIdx.x", "vthread", ...) of a thread-binding loop, or "". */
  std::string thread_tag() const;
  Map<String, Any> annotations() const {
    return schema::field::For_annotations.Get<Map<String, Any>>(ref_);
  }
  For WithBody(const ObjectRef& body) const;
  For WithKind(ForKind kind) const;
};

class IterVar : public NodeView {
  TVM_MEMPLAN_VIEW(IterVar, schema::type::IterVar)
  Var var() const { return Var(schema::field::IterVar_var.Get<ObjectRef>(ref_)); }
  /*! \brief ir.Range, or nullptr. */
  ObjectRef dom() const { return schema::field::IterVar_dom.Get<ObjectRef>(ref_); }
  std::string thread_tag() const { return schema::field::IterVar_thread_tag.Get<String>(ref_); }
};

class AttrStmt : public NodeView {
  TVM_MEMPLAN_VIEW(AttrStmt, schema::type::AttrStmt)
  AttrStmt(Any node, const std::string& attr_key, const ObjectRef& value, const ObjectRef& body);
  Any node() const { return schema::field::AttrStmt_node.Get(ref_); }
  std::string attr_key() const { return schema::field::AttrStmt_attr_key.Get<String>(ref_); }
  ObjectRef value() const { return schema::field::AttrStmt_value.Get<ObjectRef>(ref_); }
  ObjectRef body() const { return schema::field::AttrStmt_body.Get<ObjectRef>(ref_); }
  AttrStmt WithBody(const ObjectRef& body) const;
};

class IfThenElse : public NodeView {
  TVM_MEMPLAN_VIEW(IfThenElse, schema::type::IfThenElse)
  ObjectRef condition() const { return schema::field::IfThenElse_condition.Get<ObjectRef>(ref_); }
  ObjectRef then_case() const { return schema::field::IfThenElse_then_case.Get<ObjectRef>(ref_); }
  /*! \brief The else branch, or a null ref. */
  ObjectRef else_case() const { return schema::field::IfThenElse_else_case.Get<ObjectRef>(ref_); }
  IfThenElse WithCondition(const ObjectRef& condition) const;
};

class Evaluate : public NodeView {
  TVM_MEMPLAN_VIEW(Evaluate, schema::type::Evaluate)
  ObjectRef value() const { return schema::field::Evaluate_value.Get<ObjectRef>(ref_); }
};

/*! \brief `T.evaluate(value)`. */
ObjectRef MakeEvaluate(const ObjectRef& value);
/*! \brief `if cond: then_case [else: else_case]`. */
ObjectRef MakeIfThenElse(const ObjectRef& cond, const ObjectRef& then_case,
                         const ObjectRef& else_case = ObjectRef());
/*! \brief `return value` (tirx.Return). */
ObjectRef MakeReturn(const ObjectRef& value);

/*! \brief tirx.Bind: `var = value` for the rest of the enclosing sequence (0.27's LetStmt). */
class Bind : public NodeView {
  TVM_MEMPLAN_VIEW(Bind, schema::type::Bind)
  Var var() const { return Var(schema::field::Bind_var.Get<ObjectRef>(ref_)); }
  ObjectRef value() const { return schema::field::Bind_value.Get<ObjectRef>(ref_); }
};

class While : public NodeView {
  TVM_MEMPLAN_VIEW(While, schema::type::While)
  ObjectRef condition() const { return schema::field::While_condition.Get<ObjectRef>(ref_); }
  ObjectRef body() const { return schema::field::While_body.Get<ObjectRef>(ref_); }
};

/*! \brief A buffer region: a buffer and one ir.Range per dimension. */
class BufferRegion : public NodeView {
  TVM_MEMPLAN_VIEW(BufferRegion, schema::type::TensorRegion)
  Buffer buffer() const {
    return Buffer(schema::field::TensorRegion_source.Get<ObjectRef>(ref_), "BufferRegion.source");
  }
  Array<ObjectRef> region() const {
    return schema::field::TensorRegion_region.Get<Array<ObjectRef>>(ref_);
  }
  BufferRegion WithRegion(const Array<ObjectRef>& region) const;
};

class MatchBufferRegion : public NodeView {
  TVM_MEMPLAN_VIEW(MatchBufferRegion, schema::type::MatchBufferRegion)
  Buffer buffer() const {
    return Buffer(schema::field::MatchBufferRegion_buffer.Get<ObjectRef>(ref_),
                  "MatchBufferRegion.buffer");
  }
  BufferRegion source() const {
    return BufferRegion(schema::field::MatchBufferRegion_source.Get<ObjectRef>(ref_));
  }
};

/*! \brief s_tir.SBlock: a schedulable block with its own buffer allocations. */
class SBlock : public NodeView {
  TVM_MEMPLAN_VIEW(SBlock, schema::type::SBlock)
  std::string name_hint() const { return schema::field::SBlock_name_hint.Get<String>(ref_); }
  Array<ObjectRef> iter_vars() const {
    return schema::field::SBlock_iter_vars.Get<Array<ObjectRef>>(ref_);
  }
  Array<ObjectRef> reads() const { return schema::field::SBlock_reads.Get<Array<ObjectRef>>(ref_); }
  Array<ObjectRef> writes() const {
    return schema::field::SBlock_writes.Get<Array<ObjectRef>>(ref_);
  }
  /*! \brief Buffers allocated by this block (ir.Vars). */
  Array<ObjectRef> alloc_buffers() const {
    return schema::field::SBlock_alloc_buffers.Get<Array<ObjectRef>>(ref_);
  }
  Array<ObjectRef> match_buffers() const {
    return schema::field::SBlock_match_buffers.Get<Array<ObjectRef>>(ref_);
  }
  Map<String, Any> annotations() const {
    return schema::field::SBlock_annotations.Get<Map<String, Any>>(ref_);
  }
  /*! \brief The init statement of a reduction block, or a null ref. */
  ObjectRef init() const { return schema::field::SBlock_init.Get<ObjectRef>(ref_); }
  ObjectRef body() const { return schema::field::SBlock_body.Get<ObjectRef>(ref_); }
};

class SBlockRealize : public NodeView {
  TVM_MEMPLAN_VIEW(SBlockRealize, schema::type::SBlockRealize)
  Array<ObjectRef> iter_values() const {
    return schema::field::SBlockRealize_iter_values.Get<Array<ObjectRef>>(ref_);
  }
  ObjectRef predicate() const {
    return schema::field::SBlockRealize_predicate.Get<ObjectRef>(ref_);
  }
  SBlock block() const { return SBlock(schema::field::SBlockRealize_block.Get<ObjectRef>(ref_)); }
};

/*!
 * \brief Calls `visit` on each statement directly inside `stmt`, in order: the elements of a
 *        sequence, the body of a loop or an attribute, the branches of an `if`, a realized block
 *        and a block's init and body. Expressions are not looked into (none holds a statement),
 *        so walking a function's statements this way costs a fraction of a full walk.
 *
 * \code
 *   void Walk(const ObjectRef& stmt) {
 *     if (std::optional<AllocBuffer> alloc = As<AllocBuffer>(stmt)) Record(*alloc);
 *     ForEachChildStmt(stmt, Walk);
 *   }
 * \endcode
 *
 * A statement type this function does not know is searched field by field for the statements
 * it holds, so no statement is ever missed.
 */
void ForEachChildStmt(const ObjectRef& stmt, const std::function<void(const ObjectRef&)>& visit);

/*!
 * \brief `stmt` with each statement directly inside it (those ForEachChildStmt visits) replaced by
 *        `rewrite(child)`, copied on write: `stmt` itself when every child comes back unchanged.
 */
ObjectRef MapChildStmts(const ObjectRef& stmt,
                        const std::function<ObjectRef(const ObjectRef&)>& rewrite);

/*!
 * \brief Calls `visit` on `node` and every statement and expression inside it, parents first,
 *        until it returns false: one plain walk, without scopes or an analyzer. Variables
 *        (buffers among them), constants, types and operators are visited but not looked
 *        into: their fields are declarations and literals, not code. False when `visit`
 *        stopped the walk.
 */
bool ForEachNode(const ObjectRef& node, const std::function<bool(const ObjectRef&)>& visit);

}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_TIR_H_
