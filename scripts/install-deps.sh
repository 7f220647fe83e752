#!/usr/bin/env bash
# Installs the Debian packages texplan builds and tests with, only those missing.
set -euo pipefail
pkgs=(cmake make g++ pkg-config libonnx-dev libprotobuf-dev protobuf-compiler
      ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo libclblast-dev
      nlohmann-json3-dev libcli11-dev libgtest-dev libbenchmark-dev libonnx-testdata
      chromium python3 python3-dev pybind11-dev python3-numpy
      python3-venv python3-pip python3-setuptools python3-wheel  # pip install . (docs/python.md; test_package.py)
      clang libclang-rt-dev valgrind)  # clang + its runtime: fuzz targets (fuzz/); valgrind: make valgrind
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
