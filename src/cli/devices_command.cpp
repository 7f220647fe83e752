#include <CLI/CLI.hpp>
#include <iomanip>
#include <iostream>

#include "cli/commands.h"
#include "device/device.h"

namespace texplan::cli {

int devices_command(bool as_json) {
  auto devices = runtime::list_devices();
  if (as_json) {
    json out = json::array();
    for (const auto& d : devices)
      out.push_back({{"index", d.index},
                     {"platform", d.platform},
                     {"name", d.name},
                     {"vendor", d.vendor},
                     {"version", d.version},
                     {"driver", d.driver},
                     {"type", d.type},
                     {"compute_units", d.compute_units},
                     {"profile", json::parse(d.profile.to_json())}});
    std::cout << out.dump(1) << "\n";
    return 0;
  }
  if (devices.empty()) {
    std::cout << "no OpenCL devices (is an ICD installed? PoCL: apt-get install pocl-opencl-icd)\n";
    return 1;
  }
  for (const auto& d : devices) {
    const auto& p = d.profile;
    std::cout << "opencl:" << d.index << "  " << d.name << "  (" << d.type << ", " << d.platform << ", " << d.version
              << ", driver " << d.driver << ")\n";
    std::cout << "    compute units " << d.compute_units << ", memory " << human_bytes(p.global_mem_bytes)
              << ", max allocation " << human_bytes(p.max_alloc_bytes) << "\n";
    std::cout << "    images " << (p.image_support ? "yes" : "no") << ", image2d max " << p.max_image2d_width << "x"
              << p.max_image2d_height << ", image1d_buffer max " << p.max_image1d_buffer_pixels << " px"
              << ", image2d_from_buffer " << (p.image2d_from_buffer ? "yes" : "no");
    if (p.image2d_from_buffer)
      std::cout << " (pitch " << p.image_pitch_alignment << " B, base " << p.image_base_address_alignment << " B)";
    std::cout << "\n    base address alignment " << p.mem_base_addr_align << " B, fp16 " << (p.fp16 ? "yes" : "no")
              << "\n";
  }
  return 0;
}

}  // namespace texplan::cli
