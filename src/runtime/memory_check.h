// Whether a pool can be allocated on a device, asked before allocating it:
// a pool larger than the device's largest allocation or its global memory,
// or (on CPU devices, whose device memory is host memory that drivers such
// as PoCL allocate lazily and abort on failing to get) more than the host
// can give this process, is refused with texplan's out-of-memory message
// instead of a driver error later or an abort inside the driver.
#pragma once
#include <cstdint>
#include <string>

#include "device/device.h"

namespace texplan::runtime {


// "<model>: out of memory: pool <id> (<kind>, <size>) does not fit device
// '<name>': <reason>".
std::string pool_out_of_memory(const std::string& model, int pool_id, const std::string& kind, int64_t bytes,
                               const DeviceInfo& device, const std::string& reason);

// Throws Error (pool_out_of_memory) when the pool cannot be had:
// over CL_DEVICE_MAX_MEM_ALLOC_SIZE, over CL_DEVICE_GLOBAL_MEM_SIZE together
// with `allocated` bytes already held, or, on a CPU device, beyond the
// address space the host grants this process (probed by reserving the bytes
// and releasing them at once).
void check_pool_fits(const std::string& model, int pool_id, const std::string& kind, int64_t bytes, int64_t allocated,
                     const DeviceInfo& device);

}  // namespace texplan::runtime
