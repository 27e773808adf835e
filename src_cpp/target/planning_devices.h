/*!
 * \file target/planning_devices.h
 * \brief The devices a Relax function allocates on, as the memory planner needs to know them:
 *        whether a tensor may start at a nonzero offset of a storage for free.
 *
 * \code
 *   # the module's virtual devices, else the target tvm.compile builds for
 *   I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("opencl")]})
 *   PlanningDevices devices = ResolvePlanningDevices(mod);
 *   devices.OffsetsAreFree(0);   // true: the CPU
 *   devices.OffsetsAreFree(1);   // false: OpenCL copies in vm.builtin.ensure_zero_offset
 * \endcode
 *
 * A PrimFunc rejects an argument with a `byte_offset`, so a tensor placed at a nonzero offset
 * reaches its callees through `R.memory.ensure_zero_offset`, which moves the data pointer
 * instead of copying only where the device API supports pointer arithmetic on the host (the
 * CPU and CUDA in TVM 0.27).
 */
#ifndef TVM_MEMPLAN_TARGET_PLANNING_DEVICES_H_
#define TVM_MEMPLAN_TARGET_PLANNING_DEVICES_H_

#include <optional>
#include <string>
#include <vector>

#include "ir/reflection.h"

namespace tvm_memplan {
namespace target {

struct PlanningDevices {
  /*! \brief Per virtual device index (a module vdevice, or 0: the build target), its DLPack
   *         device type; nullopt when nothing names the device. */
  std::vector<std::optional<int64_t>> device_types;
  /*! \brief Where the devices come from, for messages ("the module's vdevices", "target llvm",
   *         "no target: assumed the CPU"). */
  std::string source;

  /*! \brief The device type of virtual device `index`, or nullopt. */
  std::optional<int64_t> DeviceType(int64_t index) const;
  /*! \brief Whether a tensor of virtual device `index` may start at an offset of a storage
   *         without a copy. */
  bool OffsetsAreFree(int64_t index) const;
  /*! \brief "device 0 (cpu, from target llvm)", for decision reasons. */
  std::string Describe(int64_t index) const;
};

/*!
 * \brief The devices of `mod` (an ir.IRModule): its `vdevice` global infos when it has them,
 *        else the current target (tvm.target.Target.current(), which tvm.compile sets) as
 *        device 0. Without either, device 0 is assumed to be the CPU, the VM's default device
 *        (a wrong guess costs a copy in ensure_zero_offset, never a wrong result).
 */
PlanningDevices ResolvePlanningDevices(const ffi::ObjectRef& mod);

}  // namespace target
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TARGET_PLANNING_DEVICES_H_
