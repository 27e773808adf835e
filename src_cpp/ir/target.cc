/*!
 * \file ir/target.cc
 * \brief Target views.
 */
#include "ir/target.h"

namespace tvm_memplan {
namespace ir {

using namespace schema;

std::string TargetKindName(const ObjectRef& kind) {
  return std::string(field::TargetKind_name.Get<String>(kind));
}

std::string Target::kind_name() const { return TargetKindName(kind()); }

bool Target::HasKey(const char* key) const {
  for (const String& k : keys()) {
    if (k == key) return true;
  }
  return false;
}

int64_t Target::device_type() const {
  return field::TargetKind_default_device_type.Get<int64_t>(kind());
}

std::optional<Target> CurrentTarget() {
  Any current = func::TargetCurrent(/*allow_none=*/true);
  if (current == nullptr) return std::nullopt;
  return Target(current.cast<ObjectRef>());
}

}  // namespace ir
}  // namespace tvm_memplan
