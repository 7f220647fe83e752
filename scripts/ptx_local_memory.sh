#!/usr/bin/env bash
# Which GPU kernels keep private arrays in local memory (the stack), checked
# here without a GPU: each build of a kernel file (common.cl prepended, as
# Device::program does) compiled by Debian's clang to NVPTX, and per kernel
# the bytes of its local depot. NVIDIA's OpenCL compiler is LLVM-based too,
# and agrees where it was compared: gemm.cl's 8x8 blocks (128x128v, the 64x64
# k-groups) keep their 64 accumulators there (256 bytes of stack,
# -cl-nv-verbose) and here, the 4x4 ones none (docs/kernel-choices.md#k-groups).
# clang has no library for vstore4, so here it is an external call and the
# private array it writes stays on the stack too: those 32-64 bytes more
# (320 for the 8x8 gemm) are this tool's, not NVIDIA's.
#   scripts/ptx_local_memory.sh [FILE.cl] ["DEFINES" ...]
#   e.g. scripts/ptx_local_memory.sh gemm.cl "-DWPTM=8 -DWPTN=8 -DVEC"
#        scripts/ptx_local_memory.sh gemm_kgroups.cl      (its default builds: the k-groups forms)
set -euo pipefail
cd "$(dirname "$0")/.."
file=${1:-gemm.cl}
shift || true
builds=("$@")
if ((${#builds[@]} == 0)); then
  if [[ $file == gemm_kgroups.cl ]]; then
    builds=("-DKGROUPS=2 -DKG_TM=32 -DKG_TN=32 -DKG_WM=4 -DKG_WN=4 -DKG_A4 -DKG_B4N"
            "-DKGROUPS=4 -DKG_TM=64 -DKG_TN=64 -DKG_WM=8 -DKG_WN=8"
            "-DKGROUPS=2 -DKG_TM=32 -DKG_TN=64 -DKG_WM=8 -DKG_WN=4 -DKG_DB -DKG_A4 -DKG_B4K")
  else
    builds=("-DWPTM=4 -DWPTN=4 -DVEC" "-DWPTM=8 -DWPTN=8 -DVEC")
  fi
fi
clang=$(command -v clang-15 || command -v clang)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{ cat src/kernels/common.cl; echo; cat "src/kernels/$file"; } >"$tmp/k.cl"
for d in "${builds[@]}"; do
  # shellcheck disable=SC2086
  "$clang" -x cl -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -O3 $d -S -o "$tmp/k.ptx" "$tmp/k.cl"
  echo "== $file $d"
  awk '/\.entry /{ name = $0; sub(/.*\.entry /, "", name); sub(/\(.*/, "", name) }
       /__local_depot[0-9]+\[/{ n = $0; sub(/.*\[/, "", n); sub(/\].*/, "", n); print "  " name ": " n " bytes of local memory" }' "$tmp/k.ptx"
done
