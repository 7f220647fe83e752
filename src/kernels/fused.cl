// FusedElementwise: y[i] = program(x0[i], x1[i], ...), the operands and the
// program generated into the prelude as EPI and EPI_PARAMS
// (runtime/epilogue_cl.h). Each work-item reads its operands before writing
// y[i]: y may share storage with an input. A file of its own, so each
// program builds only this kernel.
__kernel void fused_elementwise(__global float* y, int yo, int n EPI_PARAMS) {
  int i = get_global_id(0);
  if (i >= n) return;
  y[yo + i] = EPI(0.0f, i);
}
