/*!
 * \file ir/tir.cc
 * \brief TIR views: buffer facts, copy-on-write updates and constructors that keep TVM's
 *        invariants (a buffer's layout follows its shape; spans are kept on updates).
 */
#include "ir/tir.h"

#include <tvm/ffi/extra/structural_equal.h>
#include <tvm/ffi/extra/structural_mutate.h>
#include <tvm/ffi/extra/structural_visit.h>

#include <utility>

#include "ir/node_kind.h"

namespace tvm_memplan {
namespace ir {

using namespace schema;

// ---- buffers ---------------------------------------------------------------------------------

Buffer::Buffer(ObjectRef var, const char* context) : NodeView(std::move(var), Type(), context) {
  if (!type::BufferType.IsInstance(field::Expr_ty.Borrow(ref_.get()))) {
    TVM_FFI_THROW(TypeError) << context << ": `" << name()
                             << "` is a variable, not a buffer (its type is `"
                             << TypeKeyOf(field::Expr_ty.Get<ObjectRef>(ref_)) << "`)";
  }
}

bool Buffer::Matches(const ObjectRef& node) {
  return type::Var.IsInstance(node) &&
         type::BufferType.IsInstance(field::Expr_ty.Borrow(node.get()));
}

DLDataType Buffer::dtype() const {
  return field::PrimType_dtype.Get<DLDataType>(field::BufferType_dtype.Get<ObjectRef>(type()));
}

Array<ObjectRef> Buffer::shape() const {
  return field::BufferType_shape.Get<Array<ObjectRef>>(type());
}

Array<ObjectRef> Buffer::strides() const {
  return field::BufferType_strides.Get<Array<ObjectRef>>(type());
}

ObjectRef Buffer::elem_offset() const {
  return field::BufferType_elem_offset.Get<ObjectRef>(type());
}

std::string Buffer::scope() const { return field::BufferType_storage_scope.Get<String>(type()); }

std::optional<int64_t> Buffer::ConstNumElements() const {
  int64_t count = 1;
  for (const ObjectRef& extent : shape()) {
    std::optional<int64_t> value = AsConstInt(extent);
    if (!value) return std::nullopt;
    count *= *value;
  }
  return count;
}

std::optional<int64_t> AllocatedBytes(const Array<ObjectRef>& shape,
                                      const Array<ObjectRef>& strides, DLDataType dtype) {
  int64_t elements = 1;
  if (strides.empty()) {
    for (const ObjectRef& extent : shape) {
      std::optional<int64_t> value = AsConstInt(extent);
      if (!value) return std::nullopt;
      elements *= *value;
    }
  } else {
    // The last element's offset, plus one: 1 + sum((extent - 1) * stride).
    bool empty = false;
    for (size_t d = 0; d < shape.size(); ++d) {
      std::optional<int64_t> extent = AsConstInt(shape[d]);
      std::optional<int64_t> stride = d < strides.size() ? AsConstInt(strides[d]) : std::nullopt;
      if (!extent || !stride) return std::nullopt;
      if (*extent == 0) empty = true;
      elements += (*extent - 1) * *stride;
    }
    if (empty) elements = 0;
  }
  return elements * DTypeBytes(dtype);
}

std::optional<ObjectRef> AllocatedBytesExpr(const Array<ObjectRef>& shape,
                                            const Array<ObjectRef>& strides, DLDataType dtype) {
  if (std::optional<int64_t> bytes = AllocatedBytes(shape, strides, dtype)) {
    return IntConst(kInt64, *bytes);
  }
  if (!strides.empty()) return std::nullopt;
  ObjectRef bytes = IntConst(kInt64, DTypeBytes(dtype));
  for (const ObjectRef& extent : shape) bytes = Mul(bytes, extent);
  return bytes;
}

std::optional<int64_t> Buffer::ConstSizeBytes() const {
  return AllocatedBytes(shape(), strides(), dtype());
}

namespace {

bool SameExpr(const ObjectRef& a, const ObjectRef& b) {
  if (a.same_as(b)) return true;
  std::optional<int64_t> ca = AsConstInt(a), cb = AsConstInt(b);
  if (ca && cb) return *ca == *cb;
  return ffi::StructuralEqual::Equal(a, b);
}

/*!
 * \brief The layout for `new_shape` when `layout` is the default row-major layout of
 *        `old_shape`; nullopt for any other layout (swizzles, replicas, offsets, strides).
 */
std::optional<Any> RowMajorLayoutFor(const Any& layout, const Array<ObjectRef>& old_shape,
                                     const Array<ObjectRef>& new_shape) {
  if (layout == nullptr) return Any(nullptr);
  ObjectRef tile = layout.cast<ObjectRef>();
  if (!type::TileLayout.IsInstance(tile)) return std::nullopt;
  Array<ObjectRef> shard = field::TileLayout_shard.Get<Array<ObjectRef>>(tile);
  if (shard.size() != old_shape.size() || new_shape.size() != old_shape.size() ||
      !field::TileLayout_replica.Get<Array<Any>>(tile).empty() ||
      !field::TileLayout_offset.Get<Map<Any, Any>>(tile).empty()) {
    return std::nullopt;
  }
  if (shard.empty()) return layout;
  ObjectRef stride = IntConst(old_shape[0], 1);
  for (int d = static_cast<int>(shard.size()) - 1; d >= 0; --d) {
    if (!SameExpr(field::LayoutIter_stride.Get<ObjectRef>(shard[d]), stride) ||
        !SameExpr(field::LayoutIter_extent.Get<ObjectRef>(shard[d]), old_shape[d])) {
      return std::nullopt;
    }
    stride = Mul(stride, old_shape[d]);
  }
  Array<ObjectRef> new_shard;
  new_shard.resize(new_shape.size());
  stride = IntConst(new_shape[0], 1);
  for (int d = static_cast<int>(new_shape.size()) - 1; d >= 0; --d) {
    new_shard.Set(d,
                  func::MakeLayoutIter(new_shape[d], stride, field::LayoutIter_axis.Get(shard[d]))
                      .cast<ObjectRef>());
    stride = Mul(stride, new_shape[d]);
  }
  return func::MakeTileLayout(new_shard, Array<ObjectRef>{}, Map<ObjectRef, ObjectRef>{});
}

}  // namespace

std::optional<Buffer> Buffer::WithShape(const Array<ObjectRef>& new_shape) const {
  if (!strides().empty()) return std::nullopt;
  return WithShape(new_shape, Array<ObjectRef>{});
}

std::optional<Buffer> Buffer::WithShape(const Array<ObjectRef>& new_shape,
                                        const Array<ObjectRef>& new_strides) const {
  // TVMScript gives a strided buffer the row-major layout of its shape; rebuild that one.
  std::optional<Any> layout = RowMajorLayoutFor(this->layout(), shape(), new_shape);
  if (!layout) return std::nullopt;
  ObjectRef new_type = WithFields(type(), {{&field::BufferType_shape, new_shape},
                                           {&field::BufferType_strides, new_strides},
                                           {&field::BufferType_layout, *layout}});
  return Buffer(
      func::MakeBufferVar(String(name()), new_type, field::Expr_span.Get(ref_)).cast<ObjectRef>());
}

Buffer Buffer::WithScope(const std::string& scope) const {
  ObjectRef new_type = WithFields(type(), {{&field::BufferType_storage_scope, String(scope)}});
  return Buffer(
      func::MakeBufferVar(String(name()), new_type, field::Expr_span.Get(ref_)).cast<ObjectRef>());
}

ObjectRef BufferDataPointer(const Buffer& buffer) {
  return func::MakeBufferData(buffer.ref()).cast<ObjectRef>();
}

std::optional<Buffer> BufferOfDataPointer(const ObjectRef& expr) {
  std::optional<Call> call = As<Call>(expr);
  if (!call || !call->IsOp(op::BufferData)) return std::nullopt;
  Array<ObjectRef> args = call->args();
  if (args.size() != 1) return std::nullopt;
  return As<Buffer>(args[0]);
}

bool TakesBufferAddress(const Call& call) {
  return call.IsOp(op::BufferData) || call.IsOp(op::AccessPtr) || call.IsOp(op::AddressOf);
}

// ---- statements ------------------------------------------------------------------------------

PrimFunc PrimFunc::WithBody(const ObjectRef& body) const {
  return PrimFunc(WithFields(ref_, {{&field::PrimFunc_body, body}}));
}

PrimFunc PrimFunc::WithParamsAndBody(const Array<ObjectRef>& params, const ObjectRef& body) const {
  return PrimFunc(func::MakePrimFunc(params, body, field::PrimFunc_ret_type.Get(ref_),
                                     field::BaseFunc_attrs.Get(ref_), field::Expr_span.Get(ref_))
                      .cast<ObjectRef>());
}

bool PrimFunc::ReturnsNothing() const {
  ObjectRef type = ret_type();
  if (type::TupleType.IsInstance(type)) {
    return field::TupleType_fields.Get<Array<ObjectRef>>(type).empty();
  }
  if (type::PrimType.IsInstance(type)) {
    DLDataType dtype = field::PrimType_dtype.Get<DLDataType>(type);
    return dtype.code == kDLOpaqueHandle && dtype.bits == 0;  // void
  }
  return false;
}

PrimFunc PrimFunc::WithRetType(const ObjectRef& ret_type) const {
  return PrimFunc(WithFields(ref_, {{&field::PrimFunc_ret_type, ret_type}}));
}

std::string PrimFunc::global_symbol() const {
  std::optional<Any> symbol = FuncAttr(ref_, attr::GlobalSymbol);
  if (!symbol) return "";
  auto name = symbol->try_cast<String>();
  return name ? std::string(*name) : std::string();
}

ObjectRef MakeSeq(const Array<ObjectRef>& stmts) {
  if (stmts.size() == 1) return stmts[0];
  return func::MakeSeqStmt(stmts, nullptr).cast<ObjectRef>();
}

AllocBuffer AllocBuffer::WithBuffer(const Buffer& buffer) const {
  return AllocBuffer(WithFields(ref_, {{&field::AllocBuffer_buffer, buffer.ref()}}));
}

AllocBuffer AllocBuffer::WithAnnotations(const Map<String, Any>& annotations) const {
  return AllocBuffer(WithFields(ref_, {{&field::AllocBuffer_annotations, annotations}}));
}

AllocBuffer MakeAllocBuffer(const Buffer& buffer, const Map<String, Any>& annotations) {
  return AllocBuffer(func::MakeAllocBuffer(buffer.ref(), annotations, nullptr).cast<ObjectRef>());
}

std::optional<Buffer> DeclBuffer::viewed_buffer() const { return BufferOfDataPointer(data()); }

DeclBuffer DeclBuffer::WithBufferAndData(const Buffer& buffer, const ObjectRef& data) const {
  return DeclBuffer(WithFields(
      ref_, {{&field::DeclBuffer_buffer, buffer.ref()}, {&field::DeclBuffer_data, data}}));
}

BufferStore BufferStore::WithAccess(const Buffer& buffer, const Array<ObjectRef>& indices) const {
  return BufferStore(WithFields(
      ref_, {{&field::BufferStore_buffer, buffer.ref()}, {&field::BufferStore_indices, indices}}));
}

BufferLoad BufferLoad::WithAccess(const Buffer& buffer, const Array<ObjectRef>& indices) const {
  return BufferLoad(WithFields(
      ref_, {{&field::TensorLoad_source, buffer.ref()}, {&field::TensorLoad_indices, indices}}));
}

BufferRegion BufferRegion::WithRegion(const Array<ObjectRef>& region) const {
  return BufferRegion(WithFields(ref_, {{&field::TensorRegion_region, region}}));
}

ForKind For::kind() const { return static_cast<ForKind>(field::For_kind.Get<int64_t>(ref_)); }

std::string For::thread_tag() const {
  Any binding = field::For_thread_binding.Get(ref_);
  if (binding == nullptr) return "";
  return IterVar(binding.cast<ObjectRef>()).thread_tag();
}

For For::WithBody(const ObjectRef& body) const {
  return For(WithFields(ref_, {{&field::For_body, body}}));
}

For For::WithKind(ForKind kind) const {
  return For(WithFields(ref_, {{&field::For_kind, static_cast<int64_t>(kind)}}));
}

IfThenElse IfThenElse::WithCondition(const ObjectRef& condition) const {
  return IfThenElse(WithFields(ref_, {{&field::IfThenElse_condition, condition}}));
}

ObjectRef MakeEvaluate(const ObjectRef& value) {
  return func::MakeEvaluate(value, nullptr).cast<ObjectRef>();
}

ObjectRef MakeIfThenElse(const ObjectRef& cond, const ObjectRef& then_case,
                         const ObjectRef& else_case) {
  return func::MakeIfThenElse(cond, then_case, else_case, nullptr).cast<ObjectRef>();
}

ObjectRef MakeReturn(const ObjectRef& value) {
  return func::MakeReturn(value, nullptr).cast<ObjectRef>();
}

AttrStmt::AttrStmt(Any node, const std::string& attr_key, const ObjectRef& value,
                   const ObjectRef& body)
    : AttrStmt(func::MakeAttrStmt(node, String(attr_key), value, body, nullptr).cast<ObjectRef>()) {
}

AttrStmt AttrStmt::WithBody(const ObjectRef& body) const {
  return AttrStmt(WithFields(ref_, {{&field::AttrStmt_body, body}}));
}

// ---- walking statements ------------------------------------------------------------------------

namespace {

/*! \brief Where a statement type keeps its child statements. */
enum class StmtShape : uint8_t {
  kSeq = 1,
  kFor,
  kWhile,
  kAttr,
  kIf,
  kBlockRealize,
  kBlock,
  /*! \brief Known to hold no statement. */
  kLeaf,
  /*! \brief Not known here: searched field by field. */
  kOther,
};

StmtShape ComputeStmtShape(int32_t t) {
  if (type::SeqStmt.IsInstance(t)) return StmtShape::kSeq;
  if (type::For.IsInstance(t)) return StmtShape::kFor;
  if (type::While.IsInstance(t)) return StmtShape::kWhile;
  if (type::AttrStmt.IsInstance(t)) return StmtShape::kAttr;
  if (type::IfThenElse.IsInstance(t)) return StmtShape::kIf;
  if (type::SBlockRealize.IsInstance(t)) return StmtShape::kBlockRealize;
  if (type::SBlock.IsInstance(t)) return StmtShape::kBlock;
  for (const TypeKey* leaf : {&type::AllocBuffer, &type::DeclBuffer, &type::BufferStore,
                              &type::Evaluate, &type::Bind, &type::AssertStmt, &type::Return}) {
    if (leaf->IsInstance(t)) return StmtShape::kLeaf;
  }
  return StmtShape::kOther;
}

StmtShape StmtShapeOf(int32_t t) { return MemoizedByTypeIndex<StmtShape, ComputeStmtShape>(t); }

/*! \brief A new reference to a borrowed object (a null ref for nullptr). */
ObjectRef Ref(const Object* obj) { return obj ? ffi::GetRef<ObjectRef>(obj) : ObjectRef(); }

/*! \brief The elements of a SeqStmt, borrowed from it. */
const ffi::ArrayObj& SeqElements(const ObjectRef& seq) {
  const Object* elements = field::SeqStmt_seq.Borrow(seq.get());
  if (elements == nullptr || elements->type_index() != ffi::TypeIndex::kTVMFFIArray) {
    TVM_FFI_THROW(TypeError) << "SeqStmt.seq: expected an array, got `"
                             << (elements ? TypeKeyOf(elements->type_index()) : "None") << "`";
  }
  return *static_cast<const ffi::ArrayObj*>(elements);
}

/*! \brief Calls `visit` on the statement in `field` of `stmt`, unless it is null. */
void VisitField(const ObjectRef& stmt, const FieldKey& field,
                const std::function<void(const ObjectRef&)>& visit) {
  if (const Object* child = field.Borrow(stmt.get())) visit(Ref(child));
}

/*! \brief `stmt` with its statement field `field` (unless null) replaced by its rewrite. */
ObjectRef MapField(const ObjectRef& stmt, const FieldKey& field,
                   const std::function<ObjectRef(const ObjectRef&)>& rewrite) {
  const Object* child = field.Borrow(stmt.get());
  if (child == nullptr) return stmt;
  ObjectRef rewritten = rewrite(Ref(child));
  if (rewritten.get() == child) return stmt;
  ObjectRef copy = ShallowCopy(stmt);
  field.SetOnFresh(const_cast<Object*>(copy.get()), rewritten);
  return copy;
}

/*! \brief The statements anywhere inside the fields of `stmt`, not inside one another. */
void ForEachNestedStmt(const ObjectRef& stmt, const std::function<void(const ObjectRef&)>& visit) {
  ffi::StructuralVisit(
      stmt, [&](AnyView value, ffi::StructuralVisitorObj* engine) -> Optional<ffi::VisitInterrupt> {
        NodeKind kind = NodeKindOf(value.type_index());
        if (kind == NodeKind::kStmt && value.as<Object>() != stmt.get()) {
          visit(value.cast<ObjectRef>());
          return std::nullopt;
        }
        if (kind == NodeKind::kOpaque || kind == NodeKind::kVar || kind == NodeKind::kConstant) {
          return std::nullopt;
        }
        return engine->DefaultVisitExpected(value).value();
      });
}

/*! \brief MapChildStmts for statement types whose fields are not known here. */
ObjectRef MapNestedStmts(const ObjectRef& stmt,
                         const std::function<ObjectRef(const ObjectRef&)>& rewrite) {
  Any result = ffi::StructuralMutate(
      Any(stmt), [&](AnyView value, ffi::StructuralMutatorObj* mutator) -> Any {
        NodeKind kind = NodeKindOf(value.type_index());
        if (kind == NodeKind::kStmt && value.as<Object>() != stmt.get()) {
          ObjectRef child = value.cast<ObjectRef>();
          ObjectRef out = rewrite(child);
          return out.same_as(child) ? Any(ffi::Unchanged()) : Any(out);
        }
        if (kind == NodeKind::kOpaque || kind == NodeKind::kVar || kind == NodeKind::kConstant) {
          return ffi::Unchanged();
        }
        return Any(mutator->DefaultMutateExpected(value).value());
      });
  return result.cast<ObjectRef>();
}

}  // namespace

void ForEachChildStmt(const ObjectRef& stmt, const std::function<void(const ObjectRef&)>& visit) {
  switch (StmtShapeOf(stmt->type_index())) {
    case StmtShape::kSeq:
      for (const Any& child : SeqElements(stmt)) visit(child.cast<ObjectRef>());
      return;
    case StmtShape::kFor:
      return VisitField(stmt, field::For_body, visit);
    case StmtShape::kWhile:
      return VisitField(stmt, field::While_body, visit);
    case StmtShape::kAttr:
      return VisitField(stmt, field::AttrStmt_body, visit);
    case StmtShape::kIf:
      VisitField(stmt, field::IfThenElse_then_case, visit);
      return VisitField(stmt, field::IfThenElse_else_case, visit);
    case StmtShape::kBlockRealize:
      return VisitField(stmt, field::SBlockRealize_block, visit);
    case StmtShape::kBlock:
      VisitField(stmt, field::SBlock_init, visit);
      return VisitField(stmt, field::SBlock_body, visit);
    case StmtShape::kLeaf:
      return;
    case StmtShape::kOther:
      return ForEachNestedStmt(stmt, visit);
  }
}

ObjectRef MapChildStmts(const ObjectRef& stmt,
                        const std::function<ObjectRef(const ObjectRef&)>& rewrite) {
  switch (StmtShapeOf(stmt->type_index())) {
    case StmtShape::kSeq: {
      const ffi::ArrayObj& seq = SeqElements(stmt);
      Array<ObjectRef> out;
      bool changed = false;
      for (size_t i = 0; i < seq.size(); ++i) {
        ObjectRef child = seq[i].cast<ObjectRef>();
        ObjectRef rewritten = rewrite(child);
        if (!changed && !rewritten.same_as(child)) {
          changed = true;
          out.reserve(seq.size());
          for (size_t j = 0; j < i; ++j) out.push_back(seq[j].cast<ObjectRef>());
        }
        if (changed) out.push_back(rewritten);
      }
      return changed ? WithFields(stmt, {{&field::SeqStmt_seq, out}}) : stmt;
    }
    case StmtShape::kFor:
      return MapField(stmt, field::For_body, rewrite);
    case StmtShape::kWhile:
      return MapField(stmt, field::While_body, rewrite);
    case StmtShape::kAttr:
      return MapField(stmt, field::AttrStmt_body, rewrite);
    case StmtShape::kIf:
      return MapField(MapField(stmt, field::IfThenElse_then_case, rewrite),
                      field::IfThenElse_else_case, rewrite);
    case StmtShape::kBlockRealize:
      return MapField(stmt, field::SBlockRealize_block, rewrite);
    case StmtShape::kBlock:
      return MapField(MapField(stmt, field::SBlock_init, rewrite), field::SBlock_body, rewrite);
    case StmtShape::kLeaf:
      return stmt;
    case StmtShape::kOther:
      return MapNestedStmts(stmt, rewrite);
  }
  return stmt;
}

bool ForEachNode(const ObjectRef& node, const std::function<bool(const ObjectRef&)>& visit) {
  Optional<ffi::VisitInterrupt> stopped = ffi::StructuralVisit(
      node,
      [&](const ObjectRef& n, ffi::StructuralVisitorObj* engine) -> Optional<ffi::VisitInterrupt> {
        if (!n.defined()) return std::nullopt;
        if (!visit(n)) return ffi::VisitInterrupt();
        switch (NodeKindOf(n->type_index())) {
          case NodeKind::kOpaque:
          case NodeKind::kVar:
          case NodeKind::kConstant:
            return std::nullopt;
          default:
            return engine->DefaultVisitExpected(n).value();
        }
      });
  return !stopped.has_value();
}

}  // namespace ir
}  // namespace tvm_memplan
