#!/usr/bin/env bash
# Exports torchvision models beyond the zoo (scripts/more_models.py) the way
# ../shared/tools/export_models.py exports the zoo: same exporter settings,
# seed and layout (NAME/NAME.onnx, NAME.onnx.data, test_data_set_0).
#   scripts/export_more.sh OUTDIR NAME [NAME ...]     NAME: a key of MORE, or `more` for all
# Needs Debian's python3-torchvision and python3-onnx (/usr/bin/python3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
em=${EXPORT_MODELS_PY:-$here/../../shared/tools/export_models.py}
out=$1; shift
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# more_models.py goes before the main block, which runs the exports.
awk -v more="$here/more_models.py" '/^if __name__ == "__main__":/ { while ((getline l < more) > 0) print l; print "" } { print }' \
  "$em" >"$tmp/export_models.py"
names=()
for n in "$@"; do
  if [[ $n == more ]]; then
    mapfile -t -O "${#names[@]}" names < <(sed -n 's/^    "\([a-z0-9_]*\)": (.*/\1/p' "$here/more_models.py")
  else names+=("$n"); fi
done
${PYTHON:-/usr/bin/python3} "$tmp/export_models.py" "$out" "${names[@]}"
