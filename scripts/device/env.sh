# Source THERE, on the GPU machine, from the repo root: `source scripts/device/env.sh`.
# Puts .dev/bin on PATH and .dev/lib on LD_LIBRARY_PATH (both made by pack.sh), and
# registers NVIDIA's OpenCL driver with the ICD loader (the image ships no .icd file),
# beside the drivers the system lists in /etc/OpenCL/vendors.
# The LD_LIBRARY_PATH it found is kept in TEXPLAN_SYSTEM_LD_LIBRARY_PATH, for programs
# (python, torch) that must not see .dev/lib's Debian libraries.
# No `set -e` here: it would leak into the shell that sources this file.

TEXPLAN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$TEXPLAN_ROOT/scripts/device/models.sh"   # runnable_models
export TEXPLAN_ROOT TEXPLAN_DEV=$TEXPLAN_ROOT/.dev
if [ ! -d "$TEXPLAN_DEV/lib" ]; then
  echo "env.sh: $TEXPLAN_DEV/lib missing: run scripts/device/pack.sh here first and carry .dev" >&2
  return 1 2>/dev/null || exit 1
fi
# Python (torch) with the machine's own libraries, not .dev/lib's.
syspython() { env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 "$@"; }
if [ -z "${TEXPLAN_SYSTEM_LD_LIBRARY_PATH+set}" ]; then   # idempotent when sourced twice
  export TEXPLAN_SYSTEM_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
  export LD_LIBRARY_PATH=$TEXPLAN_DEV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=$TEXPLAN_DEV/bin:$PATH
fi

TEXPLAN_NVIDIA_OPENCL=/usr/local/nvidia/lib64/libnvidia-opencl.so.1
if [ -e "$TEXPLAN_NVIDIA_OPENCL" ]; then
  mkdir -p /tmp/v
  echo "$TEXPLAN_NVIDIA_OPENCL" >/tmp/v/nvidia.icd
  # The system's own drivers too (PoCL where installed): `--device pocl` and
  # test_runtime's PoCL test work there; `--device gpu` takes the GPU.
  for icd in /etc/OpenCL/vendors/*.icd; do [[ -e $icd ]] && cp "$icd" /tmp/v/; done
  if command -v clinfo >/dev/null 2>&1 && ! clinfo -l >/dev/null 2>&1; then
    echo "env.sh: the system's OpenCL drivers break platform listing: NVIDIA's alone" >&2
    find /tmp/v -name '*.icd' ! -name nvidia.icd -delete
  fi
  export OCL_ICD_VENDORS=/tmp/v
else
  echo "env.sh: $TEXPLAN_NVIDIA_OPENCL not found: no NVIDIA OpenCL" >&2
fi

# One line per OpenCL device, if clinfo was packed.
if command -v clinfo >/dev/null 2>&1; then
  clinfo -l 2>&1 | sed -n 's/^ *`-- *//p' | sed 's/^/env.sh: OpenCL /' || true
fi
