/*!
 * \file target/planning_devices.cc
 * \brief Resolving the devices of a module for the memory planner.
 */
#include "target/planning_devices.h"

#include <dlpack/dlpack.h>

#include "ir/target.h"

namespace tvm_memplan {
namespace target {

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
  ffi::Map<ffi::String, ffi::Array<ffi::ObjectRef>> infos = ir::IRModule(mod).global_infos();
  auto vdevices = infos.find(ffi::String(ir::schema::attr::VDeviceGlobalInfo));
  if (vdevices != infos.end() && !(*vdevices).second.empty()) {
    devices.source = "from the module's vdevices";
    for (const ffi::ObjectRef& vdevice : (*vdevices).second) {
      devices.device_types.push_back(ir::VDevice(vdevice).target().device_type());
    }
    return devices;
  }
  if (std::optional<ir::Target> target = ir::CurrentTarget()) {
    devices.source = "from target " + target->kind_name();
    devices.device_types.push_back(target->device_type());
  } else {
    devices.source = "no target: assumed the VM's default, the CPU";
    devices.device_types.push_back(kDLCPU);
  }
  return devices;
}

}  // namespace target
}  // namespace tvm_memplan
