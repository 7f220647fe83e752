#!/usr/bin/env bash
# Packs what the GPU machine needs to run texplan into .dev/ (git-ignored; it travels
# with the device tool's `carry: [".dev"]`). Run HERE, after `make build`.
#
#   scripts/device/pack.sh [-b BUILD] [-m "MODEL ..."] [-s SHARED_MODELS] [EXTRA_BINARY ...]
#
#   .dev/bin     texplan, texplan_bench (if built), EXTRA_BINARYs (paths, or names in BUILD), clinfo
#   .dev/lib     the shared libraries they need that the GPU machine (Ubuntu 24.04) may lack,
#                found with ldd: everything but glibc, zlib and the gcc runtime (newer there);
#                libclblast.so.1 (the --offload library, 4.4 MiB) among them, checked
#   .dev/models  every zoo model's .onnx and reference output (small: plan-only use and the
#                torch bench's correctness check); for the models in -m also the weights
#                (.onnx.data) and input, so texplan can run them
#   .dev/tools   export_models.py with scripts/more_models.py in it (torch_bench.py builds the zoo with it)
#
# The device tool sends at most 64 MiB (working tree + carried paths): the script sums
# both and fails if over, so split the models over several runs (see README.md).
set -euo pipefail

ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
BUILD=$ROOT/build
SHARED=$(cd "$ROOT/.." && pwd)/shared/models
MODELS="bert_mini squeezenet1_1 unet_small"   # group 1 of 2; see README.md
LIMIT=$((64 * 1024 * 1024))
while getopts "b:m:s:h" opt; do
  case $opt in
    b) BUILD=$(realpath "$OPTARG") ;;
    m) MODELS=$OPTARG ;;
    s) SHARED=$(realpath "$OPTARG") ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

# TEXPLAN_PACK_DIR: another folder of the repo root (e.g. .dev-he, so a helper's pack
# leaves the lead's .dev alone); carry it and `rm -rf .dev; mv FOLDER .dev` there.
DEV=$ROOT/${TEXPLAN_PACK_DIR:-.dev}
EXCLUDE=$(git -C "$ROOT" rev-parse --git-path info/exclude)
[[ $EXCLUDE = /* ]] || EXCLUDE=$ROOT/$EXCLUDE
mkdir -p "$(dirname "$EXCLUDE")"
grep -qxF "/${DEV##*/}/" "$EXCLUDE" 2>/dev/null || echo "/${DEV##*/}/" >>"$EXCLUDE"
rm -rf "$DEV"
mkdir -p "$DEV/bin" "$DEV/lib" "$DEV/models" "$DEV/tools"

# --- binaries ---
bins=()
for b in texplan texplan_bench; do
  if [[ -x $BUILD/$b ]]; then bins+=("$BUILD/$b"); else echo "note: $BUILD/$b not built, skipped"; fi
done
for b in "$@"; do
  if [[ -x $b ]]; then bins+=("$(realpath "$b")")
  elif [[ -x $BUILD/$b ]]; then bins+=("$BUILD/$b")
  else echo "error: binary $b not found (as a path or in $BUILD)" >&2; exit 1; fi
done
# A binary older than the sources would measure code that is not the tree's (the CLI
# is CMake's texplan_cli; `--target texplan` builds a library, not it): `make build` first.
for b in "${bins[@]}"; do
  if [[ $b == "$BUILD"/* ]] && newer=$(find "$ROOT/src" -newer "$b" -type f -print -quit) && [[ -n $newer ]]; then
    echo "error: $b is older than $newer: rebuild (make build) before packing" >&2; exit 1
  fi
done
command -v clinfo >/dev/null && bins+=("$(command -v clinfo)")
[[ ${#bins[@]} -gt 0 ]] || { echo "error: no binaries to pack" >&2; exit 1; }
cp "${bins[@]}" "$DEV/bin/"

# --- shared libraries: all that ldd resolves, but glibc, zlib and the gcc runtime ---
# (libOpenCL.so.1 is Debian's ocl-icd loader: it honours OCL_ICD_VENDORS, see env.sh)
system='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libresolv|libutil|libstdc\+\+|libgcc_s|libz)\.so'
for b in "${bins[@]}"; do
  missing=$(ldd "$b" | grep 'not found' || true)
  [[ -z $missing ]] || { echo "error: $b has unresolved libraries: $missing" >&2; exit 1; }
  ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r soname path; do
  [[ $soname =~ $system ]] || cp -L "$path" "$DEV/lib/$soname"
done
# CLBlast (the offload, linked normally): the GPU machine has no Debian packages, so
# libclblast.so.1 travels with texplan (it needs only libOpenCL.so.1 and the C++
# runtime, both there); a binary that links it must find it in .dev/lib.
for b in "${bins[@]}"; do
  if ldd "$b" | grep -q 'libclblast\.so' && [[ ! -f $DEV/lib/libclblast.so.1 ]]; then
    echo "error: $b links libclblast.so.1 but it was not packed" >&2; exit 1
  fi
done

# --- models ---
for dir in "$SHARED"/*/; do
  name=$(basename "$dir")
  [[ -f $dir/$name.onnx ]] || continue
  mkdir -p "$DEV/models/$name/test_data_set_0"
  cp "$dir/$name.onnx" "$DEV/models/$name/"
  cp "$dir/test_data_set_0/output_0.pb" "$DEV/models/$name/test_data_set_0/"
done
for name in $MODELS; do
  src=$SHARED/$name
  if [[ ! -f $src/$name.onnx.data ]]; then echo "note: $name has no weights in $SHARED, plan-only"; continue; fi
  cp "$src/$name.onnx.data" "$DEV/models/$name/"
  cp "$src/test_data_set_0/input_0.pb" "$DEV/models/$name/test_data_set_0/"
done
# With scripts/more_models.py inserted before its main block: the models
# beyond the zoo (add_more_models.sh makes their folders) and the zoo's
# GoogLeNet with weights whose output depends on its input.
awk -v more="$ROOT/scripts/more_models.py" \
  '/^if __name__ == "__main__":/ { while ((getline l < more) > 0) print l; print "" } { print }' \
  "$SHARED/../tools/export_models.py" >"$DEV/tools/export_models.py"
cp "$SHARED/README.md" "$DEV/models/" 2>/dev/null || true

# --- what travels: the working tree (tracked + untracked, not ignored) plus .dev ---
tree=$(cd "$ROOT" && git ls-files -z -co --exclude-standard | xargs -0 -r stat -c %s -- 2>/dev/null | awk '{s += $1} END {print s + 0}')
dev=$(du -sb "$DEV" | cut -f1)
total=$((tree + dev))
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "packed into .dev: bin: $(ls "$DEV/bin" | xargs), lib: $(ls "$DEV/lib" | xargs)"
echo "  runnable models: $(cd "$DEV/models" && ls -- */*.onnx.data 2>/dev/null | xargs -r -n1 dirname | xargs)"
echo "  sizes: .dev $(mib "$dev") (models $(mib "$(du -sb "$DEV/models" | cut -f1)")), working tree $(mib "$tree"), total $(mib "$total") of 64 MiB"
if ((total > LIMIT)); then
  echo "error: over the device tool's 64 MiB: pack fewer models with -m \"...\"" >&2
  exit 1
fi
