/*!
 * \file target/registration.cc
 * \brief Target-kind attributes and PassContext options through TVM's exported C++ registry.
 */
#include "target/registration.h"

#include <atomic>

#include "ir/schema.h"

namespace tvm_memplan {
namespace target {

namespace func = ir::schema::func;
namespace symbol = ir::schema::symbol;

namespace {

// The declarations recorded in schema.def. Member functions take `this` first in the Itanium ABI;
// ffi::Any is passed as TVM passes it, by value.
using RegisterOrGetFn = void* (*)(const ffi::String&);
using UpdateAttrFn = void (*)(void* entry, const ffi::String&, ffi::Any, int);

/*!
 * \brief TVM keeps an attribute value only when it is set at a higher priority level than the
 *        current one (and refuses an equal level), so every update this library makes uses the next
 *        level. TVM's own registrations use level 10.
 */
int NextPriorityLevel() {
  static std::atomic<int> next_level{11};
  return next_level.fetch_add(1);
}

}  // namespace

bool TargetKindExists(const std::string& kind_name) {
  for (const ffi::String& kind : func::ListTargetKinds().cast<ffi::Array<ffi::String>>()) {
    if (kind == kind_name) return true;
  }
  return false;
}

void SetTargetKindAttr(const std::string& kind_name, const std::string& attr_name, ffi::Any value) {
  // RegisterOrGet creates a kind that does not exist: refuse instead.
  if (!TargetKindExists(kind_name)) {
    TVM_FFI_THROW(ValueError) << "TVM has no target kind `" << kind_name << "`";
  }
  static auto register_or_get = symbol::TargetKindRegEntryRegisterOrGet.As<RegisterOrGetFn>();
  static auto update_attr = symbol::TargetKindRegEntryUpdateAttr.As<UpdateAttrFn>();
  void* entry = register_or_get(ffi::String(kind_name));
  update_attr(entry, ffi::String(attr_name), std::move(value), NextPriorityLevel());
}

}  // namespace target
}  // namespace tvm_memplan
