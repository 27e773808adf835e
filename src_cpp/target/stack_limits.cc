/*!
 * \file target/stack_limits.cc
 * \brief Resolution of the stack options (PassContext > target > target kind > default), their
 *        registration with TVM, and the `tvm_memplan.target.*` functions.
 */
#include "target/stack_limits.h"

#include <tvm/ffi/reflection/registry.h>

#include <atomic>
#include <sstream>

#include "ir/pass.h"
#include "ir/target.h"
#include "target/registration.h"

namespace tvm_memplan {
namespace target {

namespace func = ir::schema::func;

namespace {

/*!
 * \brief The kinds whose code runs on the CPU in TVM 0.27 (default device kDLCPU); each gets
 *        `max_stack_alloca` = 1024 as a kind attribute at import. Others can be added with
 *        SetKindStackOption.
 */
constexpr const char* kCPUTargetKinds[] = {"llvm", "c", "cuda_host", "composite", "test"};
/*! \brief The C backend's kind: it rejects an allocation in any scope but "global". */
constexpr const char* kCTargetKind = "c";

/*! \brief Whether any target kind has the option as an attribute (TVM throws on unknown ones). */
std::atomic<bool>& KindAttrRegistered(const StackOption& option) {
  static std::atomic<bool> alloca_registered{false}, bytes_registered{false};
  return &option == &kMaxStackAlloca ? alloca_registered : bytes_registered;
}

/*!
 * \brief `value` as bytes; ValueError naming where it was set (`where()`, only built for the
 *        message) unless it is an integer >= 0.
 */
template <typename Where>
int64_t CheckBytes(const ffi::AnyView& value, const StackOption& option, Where where) {
  // Exactly an integer: a Python bool would convert silently.
  if (value.type_index() == ffi::TypeIndex::kTVMFFIInt) {
    int64_t bytes = value.cast<int64_t>();
    if (bytes >= 0) return bytes;
  }
  TVM_FFI_THROW(ValueError) << option.name << " must be an integer >= 0 (bytes), but " << where()
                            << " sets it to " << ir::ToString(value);
  TVM_FFI_UNREACHABLE();
}

std::string PassConfigPlace(const StackOption& option) {
  return std::string("PassContext option ") + option.pass_config;
}

ffi::ObjectRef KindOf(const ffi::ObjectRef& target) { return ir::Target(target).kind(); }

std::string KindName(const ffi::ObjectRef& target) { return ir::Target(target).kind_name(); }

ffi::ObjectRef CheckTarget(const ffi::ObjectRef& target, const char* context) {
  if (!ir::Is<ir::Target>(target)) {
    TVM_FFI_THROW(TypeError) << context << ": expected a tvm.target.Target, got `"
                             << ir::TypeKeyOf(target) << "`";
  }
  return target;
}

ResolvedLimit Resolve(const StackOption& option, const ffi::ObjectRef& target,
                      const ffi::ObjectRef& pass_context) {
  if (std::optional<ffi::Any> value = ir::PassConfigValue(pass_context, option.pass_config)) {
    int64_t bytes = CheckBytes(*value, option, [&]() { return PassConfigPlace(option); });
    return {&option, bytes, LimitSource::kPassContext};
  }
  if (!target.defined()) return {&option, option.default_value, LimitSource::kDefault};
  ffi::Map<ffi::String, ffi::Any> attrs = ir::Target(target).attrs();
  if (auto it = attrs.find(ffi::String(option.target_attr)); it != attrs.end()) {
    int64_t bytes = CheckBytes((*it).second, option, [&]() {
      return "target attribute " + std::string(option.target_attr) + " of " + ir::ToString(target);
    });
    return {&option, bytes, LimitSource::kTarget};
  }
  if (KindAttrRegistered(option).load()) {
    ffi::Any value = func::TargetKindGetAttr(KindOf(target), ffi::String(option.name));
    if (value != nullptr) {
      int64_t bytes = CheckBytes(
          value, option, [&]() { return "the attribute of target kind " + KindName(target); });
      return {&option, bytes, LimitSource::kTargetKind};
    }
  }
  return {&option, option.default_value, LimitSource::kDefault};
}

ffi::Any LegalizeOption(const StackOption& option, ffi::Any value) {
  return CheckBytes(value, option, [&]() { return PassConfigPlace(option); });
}

ffi::Optional<int64_t> ToFFI(const ResolvedLimit& limit) {
  return limit.bytes ? ffi::Optional<int64_t>(*limit.bytes) : std::nullopt;
}

ffi::Array<ffi::Map<ffi::String, ffi::Any>> ListOptions() {
  ffi::Array<ffi::Map<ffi::String, ffi::Any>> out;
  for (const StackOption* option : kStackOptions) {
    ffi::Map<ffi::String, ffi::Any> entry;
    entry.Set("name", ffi::String(option->name));
    entry.Set("pass_config", ffi::String(option->pass_config));
    entry.Set("target_attr", ffi::String(option->target_attr));
    entry.Set("kind_attr", ffi::String(option->name));
    entry.Set("default", option->default_value ? ffi::Any(*option->default_value) : ffi::Any());
    entry.Set("doc", ffi::String(option->doc));
    out.push_back(entry);
  }
  return out;
}

StackLimits LimitsOf(const ffi::ObjectRef& target, const char* context) {
  CheckTarget(target, context);
  if (TargetDeviceType(target) != kDLCPU) {
    TVM_FFI_THROW(ValueError) << context << ": target kind `" << KindName(target)
                              << "` does not run on the CPU; stack limits apply to CPU targets "
                              << "(for a device target, ask about its host)";
  }
  return ResolveStackLimits(target, func::GetCurrentPassContext().cast<ffi::ObjectRef>());
}

}  // namespace

std::string ResolvedLimit::Describe() const {
  std::ostringstream os;
  os << option->name << " ";
  if (bytes) {
    os << *bytes;
  } else {
    os << "unlimited";
  }
  switch (source) {
    case LimitSource::kPassContext:
      os << " (PassContext option " << option->pass_config << ")";
      break;
    case LimitSource::kTarget:
      os << " (target attribute " << option->target_attr << ")";
      break;
    case LimitSource::kTargetKind:
      os << " (target-kind attribute " << option->name << ")";
      break;
    case LimitSource::kDefault:
      os << " (default)";
      break;
  }
  return os.str();
}

bool TargetHasKey(const ffi::ObjectRef& target, const char* key) {
  return ir::Target(target).HasKey(key);
}

int64_t TargetDeviceType(const ffi::ObjectRef& target) { return ir::Target(target).device_type(); }

StackLimits ResolveStackLimits(const ffi::ObjectRef& target, const ffi::ObjectRef& pass_context) {
  if (target.defined()) CheckTarget(target, "stack limits");
  StackLimits limits{Resolve(kMaxStackAlloca, target, pass_context),
                     Resolve(kMaxStackBytes, target, pass_context), std::nullopt};
  if (target.defined()) {
    limits.device_type = TargetDeviceType(target);
    limits.unlowered_needs_global_scope = ir::Target(target).kind_name() == kCTargetKind;
  }
  return limits;
}

void RegisterStackOptions() {
  for (const StackOption* option : kStackOptions) {
    ir::RegisterPassConfigOption(option->pass_config, "int", [option](ffi::Any value) {
      return LegalizeOption(*option, std::move(value));
    });
  }
  if (KindAttrRegistered(kMaxStackAlloca).exchange(true)) return;
  for (const char* kind : kCPUTargetKinds) {
    if (TargetKindExists(kind)) {
      SetTargetKindAttr(kind, kMaxStackAlloca.name, *kMaxStackAlloca.default_value);
    }
  }
}

void SetKindStackOption(const StackOption& option, const std::string& kind_name, ffi::Any nbytes) {
  int64_t bytes =
      CheckBytes(nbytes, option, [&]() { return "set_kind_" + std::string(option.name); });
  if (!TargetKindExists(kind_name)) {
    TVM_FFI_THROW(ValueError) << "set_kind_" << option.name << ": TVM has no target kind `"
                              << kind_name << "`";
  }
  ffi::Map<ffi::String, ffi::Any> config{{"kind", ffi::String(kind_name)}};
  ffi::ObjectRef target = func::MakeTarget(config).cast<ffi::ObjectRef>();
  if (TargetDeviceType(target) != kDLCPU) {
    TVM_FFI_THROW(ValueError) << "set_kind_" << option.name << ": target kind `" << kind_name
                              << "` does not run on the CPU (its default device type is "
                              << TargetDeviceType(target) << "); stack limits apply to CPU kinds";
  }
  SetTargetKindAttr(kind_name, option.name, bytes);
  KindAttrRegistered(option).store(true);
  // TVM keeps the value set at the highest priority level: make sure ours is the one it kept.
  ffi::Any kept = func::TargetKindGetAttr(KindOf(target), ffi::String(option.name));
  if (kept.type_index() != ffi::TypeIndex::kTVMFFIInt || kept.cast<int64_t>() != bytes) {
    TVM_FFI_THROW(RuntimeError) << "set_kind_" << option.name << ": TVM kept " << ir::ToString(kept)
                                << " for target kind `" << kind_name
                                << "` (set elsewhere at a higher priority level)";
  }
}

TVM_FFI_STATIC_INIT_BLOCK() {
  namespace refl = tvm::ffi::reflection;
  refl::GlobalDef()
      .def("tvm_memplan.target.RegisterOptions", RegisterStackOptions)
      .def("tvm_memplan.target.ListOptions", ListOptions)
      .def("tvm_memplan.target.max_stack_alloca",
           [](ffi::ObjectRef target) -> int64_t {
             return *LimitsOf(target, "max_stack_alloca").max_stack_alloca.bytes;
           })
      .def("tvm_memplan.target.max_stack_bytes",
           [](ffi::ObjectRef target) {
             return ToFFI(LimitsOf(target, "max_stack_bytes").max_stack_bytes);
           })
      .def("tvm_memplan.target.set_kind_max_stack_alloca",
           [](ffi::String kind, ffi::Any nbytes) {
             SetKindStackOption(kMaxStackAlloca, kind, std::move(nbytes));
           })
      .def("tvm_memplan.target.set_kind_max_stack_bytes", [](ffi::String kind, ffi::Any nbytes) {
        SetKindStackOption(kMaxStackBytes, kind, std::move(nbytes));
      });
}

}  // namespace target
}  // namespace tvm_memplan
