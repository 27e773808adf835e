/*!
 * \file ir/schema.cc
 * \brief The load-time self-check: every name in schema.def must exist in the running TVM, and
 *        every global with a recorded signature must still have that signature.
 */
#include "ir/schema.h"

#include <tvm/ffi/extra/json.h>
#include <tvm/ffi/reflection/registry.h>

#include <sstream>
#include <unordered_set>

namespace tvm_memplan {
namespace ir {
namespace schema {

namespace {

/*! \brief Render a type-schema JSON node as `key<arg, ...>`, or `ret(arg, ...)` for a function. */
void RenderTypeSchema(const Any& node, std::ostream& os, bool top_level) {
  ffi::json::Object obj = node.cast<ffi::json::Object>();
  String type = obj.at(String("type")).cast<String>();
  ffi::json::Array args;
  if (auto it = obj.find(String("args")); it != obj.end()) {
    args = (*it).second.cast<ffi::json::Array>();
  }
  if (top_level && type == "ffi.Function" && !args.empty()) {
    // A global's own schema: args[0] is the return type, the rest are parameters.
    RenderTypeSchema(args[0], os, false);
    os << "(";
    for (size_t i = 1; i < args.size(); ++i) {
      if (i > 1) os << ", ";
      RenderTypeSchema(args[i], os, false);
    }
    os << ")";
    return;
  }
  os << type;
  if (args.empty()) return;
  os << "<";
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) os << ", ";
    RenderTypeSchema(args[i], os, false);
  }
  os << ">";
}

}  // namespace

std::string GlobalSignature(const std::string& name) {
  if (!Function::GetGlobal(name)) return "";
  String metadata = func::GetGlobalFuncMetadata(String(name)).cast<String>();
  String error;
  Any parsed = ffi::json::Parse(metadata, &error);
  if (!error.empty() || parsed == nullptr) return "";
  auto obj = parsed.try_cast<ffi::json::Object>();
  if (!obj) return "";
  auto it = obj->find(String("type_schema"));
  if (it == obj->end()) return "";
  Any schema = ffi::json::Parse((*it).second.cast<String>(), &error);
  if (!error.empty()) return "";
  std::ostringstream os;
  RenderTypeSchema(schema, os, true);
  return os.str();
}

SchemaQuery BuiltinSchema() {
  SchemaQuery query;
#define TVM_MEMPLAN_TYPE(Name, key) query.types.push_back(key);
#define TVM_MEMPLAN_FIELD(TypeName, field) query.fields.emplace_back(type::TypeName.key(), #field);
#define TVM_MEMPLAN_GLOBAL(Name, name, signature) query.globals.emplace_back(name, signature);
#define TVM_MEMPLAN_OP(Name, name) query.ops.push_back(name);
#define TVM_MEMPLAN_CONFIG(Name, key) query.configs.push_back(key);
#define TVM_MEMPLAN_SYMBOL(Name, mangled, declaration) query.symbols.push_back(mangled);
#include "ir/schema.def"
  return query;
}

std::vector<std::string> CheckSchema(const SchemaQuery& query) {
  std::vector<std::string> problems;
  for (const std::string& key : query.types) {
    if (!TypeKey(key.c_str()).Exists()) problems.push_back("type `" + key + "` is not defined");
  }
  for (const auto& [key, name] : query.fields) {
    TypeKey owner(key.c_str());
    if (!owner.Exists()) {
      problems.push_back("field `" + key + "." + name + "`: type `" + key + "` is not defined");
    } else if (!FieldKey(owner, name.c_str()).Exists()) {
      problems.push_back("field `" + key + "." + name + "` does not exist");
    }
  }
  for (const auto& [name, expected] : query.globals) {
    if (!Function::GetGlobal(name)) {
      problems.push_back("global function `" + name + "` is not registered");
      continue;
    }
    if (expected.empty()) continue;
    std::string actual = GlobalSignature(name);
    if (actual != expected) {
      problems.push_back("global function `" + name + "` has signature `" + actual +
                         "`, expected `" + expected + "`");
    }
  }
  if (!query.ops.empty()) {
    std::unordered_set<std::string> known;
    for (const String& op : func::ListOpNames().cast<Array<String>>()) known.insert(op);
    for (const std::string& op : query.ops) {
      if (!known.count(op)) problems.push_back("operator `" + op + "` is not registered");
    }
  }
  if (!query.configs.empty()) {
    Map<String, Any> known = func::ListConfigs().cast<Map<String, Any>>();
    for (const std::string& key : query.configs) {
      if (!known.count(String(key))) {
        problems.push_back("PassContext option `" + key + "` is not registered");
      }
    }
  }
  for (const std::string& mangled : query.symbols) {
    if (!ExportedSymbol(mangled.c_str()).Exists()) {
      problems.push_back("C++ symbol `" + mangled + "` is not exported by " + kTVMCompilerLibrary);
    }
  }
  return problems;
}

namespace {

SchemaQuery QueryFromFFI(const Array<String>& types, const Array<Array<String>>& fields,
                         const Array<Array<String>>& globals, const Array<String>& ops,
                         const Array<String>& configs, const Array<String>& symbols) {
  SchemaQuery query;
  for (const String& t : types) query.types.emplace_back(t);
  for (const Array<String>& f : fields) {
    if (f.size() != 2) TVM_FFI_THROW(ValueError) << "a field is given as [type_key, field_name]";
    query.fields.emplace_back(f[0], f[1]);
  }
  for (const Array<String>& g : globals) {
    if (g.empty() || g.size() > 2) {
      TVM_FFI_THROW(ValueError) << "a global is given as [name] or [name, signature]";
    }
    query.globals.emplace_back(g[0], g.size() == 2 ? std::string(g[1]) : std::string());
  }
  for (const String& o : ops) query.ops.emplace_back(o);
  for (const String& c : configs) query.configs.emplace_back(c);
  for (const String& s : symbols) query.symbols.emplace_back(s);
  return query;
}

Array<String> ToFFI(const std::vector<std::string>& lines) {
  Array<String> out;
  for (const std::string& line : lines) out.push_back(line);
  return out;
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  namespace refl = tvm::ffi::reflection;
  refl::GlobalDef()
      .def("tvm_memplan.ir.SelfCheck", []() { return ToFFI(CheckSchema(BuiltinSchema())); })
      .def("tvm_memplan.ir.BuiltinSchema",
           []() {
             SchemaQuery query = BuiltinSchema();
             Map<String, Any> out;
             auto names = [](const auto& entries) {
               Array<String> list;
               for (const auto& entry : entries) {
                 if constexpr (std::is_same_v<std::decay_t<decltype(entry)>, std::string>) {
                   list.push_back(entry);
                 } else {
                   list.push_back(entry.first + " " + entry.second);
                 }
               }
               return list;
             };
             out.Set("types", names(query.types));
             out.Set("fields", names(query.fields));
             out.Set("globals", names(query.globals));
             out.Set("ops", names(query.ops));
             out.Set("configs", names(query.configs));
             out.Set("symbols", names(query.symbols));
             return out;
           })
      .def("tvm_memplan.ir.CheckSchema",
           [](Array<String> types, Array<Array<String>> fields, Array<Array<String>> globals,
              Array<String> ops, Array<String> configs, Array<String> symbols) {
             return ToFFI(CheckSchema(QueryFromFFI(types, fields, globals, ops, configs, symbols)));
           })
      .def("tvm_memplan.ir.GlobalSignature",
           [](String name) { return String(GlobalSignature(name)); })
      // Read by _lib.py: the version is written once, as pyproject.toml's pin (CMakeLists.txt).
      .def("tvm_memplan.ir.SupportedTVMVersion", []() { return String(kSupportedTVMVersion); });
}

}  // namespace schema
}  // namespace ir
}  // namespace tvm_memplan
