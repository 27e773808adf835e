/*!
 * \file ir/node.h
 * \brief Typed views: a small class per TVM node type that holds the node and reads its fields
 *        by name, so pass code reads `loop->body()` instead of reflection calls.
 *
 * \code
 *   if (std::optional<For> loop = As<For>(stmt)) {
 *     Visit(loop->body());
 *     stmt = loop->WithBody(new_body);             // copy-on-write
 *   }
 *   Buffer buffer = Cast<Buffer>(var, "AllocBuffer.buffer");   // TypeError when it is not
 * \endcode
 *
 * A view is not an ffi::ObjectRef subclass on purpose: declaring TVM's type keys in C++ would
 * let a missing key be silently re-registered by us. Collections therefore come back as
 * `Array<ObjectRef>`; wrap elements with As/Cast where a typed view helps.
 */
#ifndef TVM_MEMPLAN_IR_NODE_H_
#define TVM_MEMPLAN_IR_NODE_H_

#include <optional>
#include <string>
#include <utility>

#include "ir/schema.h"

namespace tvm_memplan {
namespace ir {

/*! \brief Base of all views: a non-null node known to be an instance of the view's type. */
class NodeView {
 public:
  const ObjectRef& ref() const { return ref_; }
  const Object* get() const { return ref_.get(); }
  bool same_as(const ObjectRef& other) const { return ref_.same_as(other); }
  bool same_as(const NodeView& other) const { return ref_.same_as(other.ref_); }
  operator const ObjectRef&() const { return ref_; }  // NOLINT(runtime/explicit)

 protected:
  NodeView(ObjectRef ref, const TypeKey& type, const char* context);
  ObjectRef ref_;
};

/*! \brief Whether `node` can be viewed as `View`. */
template <typename View>
bool Is(const ObjectRef& node) {
  return View::Matches(node);
}

/*! \brief `node` as a `View`, or nullopt. */
template <typename View>
std::optional<View> As(const ObjectRef& node) {
  if (!View::Matches(node)) return std::nullopt;
  return View(node);
}

/*! \brief `node` as a `View`; a TypeError naming `context` when it is something else. */
template <typename View>
View Cast(const ObjectRef& node, const char* context) {
  return View(node, context);
}

// Declares the constructors and the type test of a view over exactly one TVM type.
#define TVM_MEMPLAN_VIEW(View, TypeHandle)                                           \
 public:                                                                             \
  explicit View(ObjectRef ref, const char* context = #View)                          \
      : NodeView(std::move(ref), TypeHandle, context) {}                             \
  static bool Matches(const ObjectRef& node) { return TypeHandle.IsInstance(node); } \
  static const TypeKey& Type() { return TypeHandle; }

/*! \brief ir.Var: a scalar variable (loop var, size var, handle) or a buffer. */
class Var : public NodeView {
  TVM_MEMPLAN_VIEW(Var, schema::type::Var)
  std::string name() const { return schema::field::Var_name.Get<String>(ref_); }
  ObjectRef type() const { return schema::field::Expr_ty.Get<ObjectRef>(ref_); }
};

/*! \brief ir.Call: a call to an ir.Op (builtins, intrinsics, Relax operators) or a function. */
class Call : public NodeView {
  TVM_MEMPLAN_VIEW(Call, schema::type::Call)
  ObjectRef op() const { return schema::field::Call_op.Get<ObjectRef>(ref_); }
  Array<ObjectRef> args() const { return schema::field::Call_args.Get<Array<ObjectRef>>(ref_); }
  Any attrs() const { return schema::field::Call_attrs.Get(ref_); }
  /*! \brief Type arguments (a Relax call's `ty_args`, e.g. call_tir's output types). */
  Array<ObjectRef> ty_args() const {
    return schema::field::Call_ty_args.Get<Array<ObjectRef>>(ref_);
  }
  /*! \brief The operator name, or "" when the callee is not an ir.Op. */
  std::string op_name() const;
  /*! \brief Whether the callee is the operator `name` (an identity test: ops are singletons). */
  bool IsOp(const char* name) const;
  /*! \brief The same call with return type `type`. */
  Call WithType(const ObjectRef& type) const;
  /*! \brief The same call (operator, attributes, type) with arguments `args`. */
  Call WithArgs(const Array<ObjectRef>& args) const;
};

/*! \brief The name of an ir.Op, or "" for anything else. */
std::string OpName(const ObjectRef& op);

/*! \brief ir.IRModule. */
class IRModule : public NodeView {
  TVM_MEMPLAN_VIEW(IRModule, schema::type::IRModule)
  /*! \brief GlobalVar -> function. */
  Map<ObjectRef, ObjectRef> functions() const {
    return schema::field::IRModule_functions.Get<Map<ObjectRef, ObjectRef>>(ref_);
  }
  /*! \brief A module with the same attributes and these functions. */
  IRModule WithFunctions(const Map<ObjectRef, ObjectRef>& functions) const;
  /*! \brief `global_infos`: name -> infos (e.g. "vdevice" -> the virtual devices). */
  Map<String, Array<ObjectRef>> global_infos() const {
    return schema::field::IRModule_global_infos.Get<Map<String, Array<ObjectRef>>>(ref_);
  }
};

/*! \brief The name_hint of a GlobalVar. */
std::string GlobalVarName(const ObjectRef& global_var);

/*! \brief Function attributes (`func.attrs`) as a map; empty when there are none. */
Map<String, Any> FuncAttrs(const ObjectRef& func);
/*! \brief One function attribute, or nullopt. */
std::optional<Any> FuncAttr(const ObjectRef& func, const char* key);
/*! \brief `func` with attribute `key` set (copy-on-write, as BaseFunc::WithAttr). */
ObjectRef WithFuncAttr(const ObjectRef& func, const char* key, Any value);
/*! \brief `func` without attribute `key`. */
ObjectRef WithoutFuncAttr(const ObjectRef& func, const char* key);

}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_NODE_H_
