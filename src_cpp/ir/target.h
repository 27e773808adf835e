/*!
 * \file ir/target.h
 * \brief Views over tvm.target: targets, their kinds, and Relax's virtual devices.
 *
 * \code
 *   Target target(ir::CurrentTarget().value());
 *   target.kind_name();        // "llvm"
 *   target.device_type();      // kDLCPU
 *   target.HasKey("cpu");      // true
 * \endcode
 */
#ifndef TVM_MEMPLAN_IR_TARGET_H_
#define TVM_MEMPLAN_IR_TARGET_H_

#include <optional>
#include <string>

#include "ir/node.h"

namespace tvm_memplan {
namespace ir {

/*! \brief target.Target. */
class Target : public NodeView {
  TVM_MEMPLAN_VIEW(Target, schema::type::Target)
  /*! \brief The target.TargetKind. */
  ObjectRef kind() const { return schema::field::Target_kind.Get<ObjectRef>(ref_); }
  std::string kind_name() const;
  Array<String> keys() const { return schema::field::Target_keys.Get<Array<String>>(ref_); }
  Map<String, Any> attrs() const { return schema::field::Target_attrs.Get<Map<String, Any>>(ref_); }
  bool HasKey(const char* key) const;
  /*! \brief The DLPack device type of the target's kind. */
  int64_t device_type() const;
};

/*! \brief The name of a target.TargetKind. */
std::string TargetKindName(const ObjectRef& kind);

/*! \brief relax.VDevice: a target and a device of it, indexed by runtime_device_index. */
class VDevice : public NodeView {
  TVM_MEMPLAN_VIEW(VDevice, schema::type::VDevice)
  Target target() const { return Target(schema::field::VDevice_target.Get<ObjectRef>(ref_)); }
};

/*! \brief tvm.target.Target.current(), or nullopt outside a target scope. */
std::optional<Target> CurrentTarget();

}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_TARGET_H_
