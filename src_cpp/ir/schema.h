/*!
 * \file ir/schema.h
 * \brief Handles for every TVM name listed in schema.def, and the self-check over them.
 *
 * \code
 *   if (schema::type::For.IsInstance(node)) {
 *     ObjectRef body = schema::field::For_body.Get<ObjectRef>(node);
 *   }
 *   ObjectRef sum = schema::func::OpAdd(a, b, nullptr).cast<ObjectRef>();
 *   auto update = schema::symbol::TargetKindRegEntryUpdateAttr.As<void (*)(...)>();
 * \endcode
 *
 * Pass code should prefer the typed views (tir.h, relax.h), which are written on these handles.
 */
#ifndef TVM_MEMPLAN_IR_SCHEMA_H_
#define TVM_MEMPLAN_IR_SCHEMA_H_

#include <string>
#include <vector>

#include "ir/reflection.h"

namespace tvm_memplan {
namespace ir {
namespace schema {

namespace type {
#define TVM_MEMPLAN_TYPE(Name, key) inline const TypeKey Name(key);
#include "ir/schema.def"
}  // namespace type

namespace field {
#define TVM_MEMPLAN_FIELD(TypeName, field) \
  inline const FieldKey TypeName##_##field(type::TypeName, #field);
#include "ir/schema.def"
}  // namespace field

namespace func {
#define TVM_MEMPLAN_GLOBAL(Name, name, signature) inline const GlobalFunc Name(name);
#include "ir/schema.def"
}  // namespace func

/*! \brief Operator names (ir.Op.name); compare against `OpName(call_op)`. */
namespace op {
#define TVM_MEMPLAN_OP(Name, name) inline constexpr const char* Name = name;
#include "ir/schema.def"
}  // namespace op

/*! \brief PassContext option keys that TVM registers. */
namespace config {
#define TVM_MEMPLAN_CONFIG(Name, key) inline constexpr const char* Name = key;
#include "ir/schema.def"
}  // namespace config

/*! \brief Attribute and annotation keys TVM reads (function attrs, AttrStmt keys, annotations). */
namespace attr {
#define TVM_MEMPLAN_ATTR(Name, key) inline constexpr const char* Name = key;
#include "ir/schema.def"
}  // namespace attr

/*! \brief C++ functions exported by libtvm_compiler.so (see ExportedSymbol). */
namespace symbol {
#define TVM_MEMPLAN_SYMBOL(Name, mangled, declaration) inline const ExportedSymbol Name(mangled);
#include "ir/schema.def"
}  // namespace symbol

/*! \brief What the self-check may be asked about: names that need not be in schema.def. */
struct SchemaQuery {
  std::vector<std::string> types;
  std::vector<std::pair<std::string, std::string>> fields;   // (type key, field name)
  std::vector<std::pair<std::string, std::string>> globals;  // (name, signature or "")
  std::vector<std::string> ops;
  std::vector<std::string> configs;
  std::vector<std::string> symbols;  // mangled C++ names
};

/*! \brief The query that covers every entry of schema.def. */
SchemaQuery BuiltinSchema();

/*!
 * \brief Check names against the running TVM.
 * \return One human-readable line per problem (missing type, field, global, op, PassContext
 *         option or exported C++ symbol, or a global whose registered signature differs); empty
 *         when everything matches.
 */
std::vector<std::string> CheckSchema(const SchemaQuery& query);

/*! \brief The registered signature of a global, rendered as in schema.def ("" if unknown). */
std::string GlobalSignature(const std::string& name);

}  // namespace schema
}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_SCHEMA_H_
