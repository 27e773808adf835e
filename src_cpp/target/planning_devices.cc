/*!
 * \file target/planning_devices.cc
 * \brief Resolving the devices of a module for the memory planner.
 */
#include "target/planning_devices.h"

#include <dlpack/dlpack.h>

#include "ir/schema.h"
#include "target/stack_limits.h"

namespace tvm_memplan {
namespace target {

using namespace ir::schema;

namespace {

std::string DeviceName(int64_t device_type) {
  switch (device_type) {
    case kDLCPU:
      return "cpu";
    case kDLCUDA:
      return "cuda";
    case kDLCUDAHost:
      return "cuda_host";
    case kDLOpenCL:
      return "opencl";
    case kDLVulkan:
      return "vulkan";
    case kDLMetal:
      return "metal";
    case kDLROCM:
      return "rocm";
    case kDLHexagon:
      return "hexagon";
    case kDLWebGPU:
      return "webgpu";
    default:
      return "device type " + std::to_string(device_type);
  }
}

std::string TargetKindName(const ffi::ObjectRef& target) {
  return field::TargetKind_name.Get<ffi::String>(field::Target_kind.Get<ffi::ObjectRef>(target));
}

}  // namespace

std::optional<int64_t> PlanningDevices::DeviceType(int64_t index) const {
  if (index < 0 || index >= static_cast<int64_t>(device_types.size())) return std::nullopt;
  return device_types[index];
}

bool PlanningDevices::OffsetsAreFree(int64_t index) const {
  // vm.builtin.ensure_zero_offset moves the pointer where DeviceAPI
  // SupportsDevicePointerArithmeticsOnHost(): the CPU and CUDA device APIs.
  std::optional<int64_t> type = DeviceType(index);
  return type && (*type == kDLCPU || *type == kDLCUDA);
}

std::string PlanningDevices::Describe(int64_t index) const {
  std::optional<int64_t> type = DeviceType(index);
  return "device " + std::to_string(index) + " (" +
         (type ? DeviceName(*type) : std::string("unknown")) + ", " + source + ")";
}

PlanningDevices ResolvePlanningDevices(const ffi::ObjectRef& mod) {
  PlanningDevices devices;
  ffi::Map<ffi::String, ffi::Array<ffi::ObjectRef>> infos =
      field::IRModule_global_infos.Get<ffi::Map<ffi::String, ffi::Array<ffi::ObjectRef>>>(mod);
  auto vdevices = infos.find(ffi::String(attr::VDeviceGlobalInfo));
  if (vdevices != infos.end() && !(*vdevices).second.empty()) {
    devices.source = "from the module's vdevices";
    for (const ffi::ObjectRef& vdevice : (*vdevices).second) {
      ffi::ObjectRef target = field::VDevice_target.Get<ffi::ObjectRef>(vdevice);
      devices.device_types.push_back(TargetDeviceType(target));
    }
    return devices;
  }
  ffi::Any current = func::TargetCurrent(/*allow_none=*/true);
  if (current != nullptr) {
    ffi::ObjectRef target = current.cast<ffi::ObjectRef>();
    devices.source = "from target " + TargetKindName(target);
    devices.device_types.push_back(TargetDeviceType(target));
  } else {
    devices.source = "no target: assumed the VM's default, the CPU";
    devices.device_types.push_back(kDLCPU);
  }
  return devices;
}

}  // namespace target
}  // namespace tvm_memplan
