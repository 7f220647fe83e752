// A tensor held in a device's memory, for runs whose inputs and outputs stay
// on the device (what ONNX Runtime calls IO binding): a pipeline whose data
// its own OpenCL kernels produce or consume skips the host copies that
// Session::run(HostTensors) makes every run.
//
//   DeviceTensor x(device, DataType::Float32, {1, 3, 224, 224});
//   x.write(input);                   // or fill x.buffer() with your kernels
//   DeviceTensor y(device, DataType::Float32, {1, 1000});
//   session.run({&x}, {&y});          // copies on the device only
//   HostTensor out = y.read();
#pragma once
#include <CL/cl.h>

#include <memory>

#include "device/device.h"
#include "graph/graph.h"

namespace texplan::runtime {

class DeviceTensor {
 public:
  // One buffer of `device`'s context; throws Error when it cannot be allocated.
  DeviceTensor(std::shared_ptr<Device> device, DataType dtype, Shape shape);
  ~DeviceTensor();
  DeviceTensor(DeviceTensor&& o) noexcept;
  DeviceTensor& operator=(DeviceTensor&& o) noexcept;
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t bytes() const { return element_count(shape_) * int64_t(element_size(dtype_)); }
  const Device& device() const { return *device_; }
  // The buffer (null for an empty tensor). The caller's commands on another
  // queue must finish before a run that reads it, as OpenCL requires.
  cl_mem buffer() const { return mem_; }

  // Blocking copies through device().queue(). write throws Error when `value`
  // has another dtype or shape.
  void write(const HostTensor& value);
  HostTensor read() const;

 private:
  std::shared_ptr<Device> device_;
  DataType dtype_;
  Shape shape_;
  cl_mem mem_ = nullptr;
};

}  // namespace texplan::runtime
