#include "runtime/device_tensor.h"

#include <utility>

namespace texplan::runtime {

namespace {
std::string describe(DataType dtype, const Shape& shape) { return std::string(to_string(dtype)) + " " + to_string(shape); }
}  // namespace

DeviceTensor::DeviceTensor(std::shared_ptr<Device> device, DataType dtype, Shape shape)
    : device_(std::move(device)), dtype_(dtype), shape_(std::move(shape)) {
  if (!device_) throw Error("device tensor " + describe(dtype_, shape_) + ": no device");
  for (int64_t d : shape_)
    if (d < 0) throw Error("device tensor " + describe(dtype_, shape_) + ": negative dimension");
  if (bytes() == 0) return;
  cl_int s = CL_SUCCESS;
  mem_ = clCreateBuffer(device_->context(), CL_MEM_READ_WRITE, size_t(bytes()), nullptr, &s);
  if (s != CL_SUCCESS)
    throw Error("device tensor " + describe(dtype_, shape_) + ": allocating " + std::to_string(bytes()) +
                " bytes on " + device_->info().name + ": " + cl_error_name(s));
}

DeviceTensor::~DeviceTensor() {
  if (mem_) clReleaseMemObject(mem_);
}

DeviceTensor::DeviceTensor(DeviceTensor&& o) noexcept
    : device_(std::move(o.device_)), dtype_(o.dtype_), shape_(std::move(o.shape_)), mem_(std::exchange(o.mem_, nullptr)) {}

DeviceTensor& DeviceTensor::operator=(DeviceTensor&& o) noexcept {
  if (this != &o) {
    if (mem_) clReleaseMemObject(mem_);
    device_ = std::move(o.device_), dtype_ = o.dtype_, shape_ = std::move(o.shape_);
    mem_ = std::exchange(o.mem_, nullptr);
  }
  return *this;
}

void DeviceTensor::write(const HostTensor& value) {
  if (value.dtype != dtype_ || value.shape != shape_ || int64_t(value.bytes.size()) != bytes())
    throw Error("device tensor " + describe(dtype_, shape_) + ": cannot write a " + describe(value.dtype, value.shape) +
                " value into it");
  if (!mem_) return;
  cl_int s = clEnqueueWriteBuffer(device_->queue(), mem_, CL_TRUE, 0, size_t(bytes()), value.bytes.data(), 0,
                                  nullptr, nullptr);
  if (s != CL_SUCCESS)
    throw Error("device tensor " + describe(dtype_, shape_) + ": writing it: " + cl_error_name(s));
}

HostTensor DeviceTensor::read() const {
  HostTensor out(dtype_, shape_);
  if (!mem_) return out;
  cl_int s = clEnqueueReadBuffer(device_->queue(), mem_, CL_TRUE, 0, size_t(bytes()), out.bytes.data(), 0, nullptr,
                                 nullptr);
  if (s != CL_SUCCESS)
    throw Error("device tensor " + describe(dtype_, shape_) + ": reading it: " + cl_error_name(s));
  return out;
}

}  // namespace texplan::runtime
