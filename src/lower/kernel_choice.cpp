#include "lower/kernel_choice.h"

#include "lower/mma.h"
#include "lower/opencl_cpu/lowerings.h"
#include "lower/ops.h"

namespace texplan::lower {

void check_kernel_choice(const KernelChoice& c) {
  check_conv_variant(c.conv);
  check_conv_maxpool_variant(c.conv_maxpool);
  check_mma_variant(c.mma);
  check_cpu_winograd_variant(c.cpu_winograd);
  check_attention_blocks(c.attention);
  check_recurrent_form(c.recurrent);
  if (c.tf32_splits < 0) throw Error("tf32 split-K into " + std::to_string(c.tf32_splits) + " slices");
}

}  // namespace texplan::lower
