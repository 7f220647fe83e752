// OpenCL C sources of the built-in kernels, embedded at build time from
// src/kernels/*.cl (cmake/embed_kernels.cmake). Keyed by file name.
#pragma once
#include <map>
#include <string>

namespace texplan::kernels {
const std::map<std::string, std::string>& sources();
}
