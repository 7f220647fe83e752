#!/usr/bin/env bash
# HERE, after pack.sh: adds torchvision models beyond the zoo
# (scripts/more_models.py) to the pack, without weights: their names become
# folders of .dev/models (pack.sh put their constructors in
# .dev/tools/export_models.py's ZOO), so `all.sh -s export` exports them there
# with the machine's PyTorch and gpu_alternate.sh's PyTorch sides build them.
#   scripts/device/add_more_models.sh [NAME ...]     (default: every model of more_models.py)
set -euo pipefail
cd "$(dirname "$0")/../.."
dev=${TEXPLAN_PACK_DIR:-.dev}
[[ -f $dev/tools/export_models.py ]] || { echo "run scripts/device/pack.sh first" >&2; exit 1; }
grep -q "^ZOO.update(MORE)" "$dev/tools/export_models.py" ||
  { echo "$dev/tools/export_models.py lacks scripts/more_models.py: run scripts/device/pack.sh again" >&2; exit 1; }
names=("$@")
((${#names[@]})) || mapfile -t names < <(sed -n 's/^    "\([a-z0-9_]*\)": (.*/\1/p' scripts/more_models.py)
for n in "${names[@]}"; do mkdir -p "$dev/models/$n"; done
echo "added: ${names[*]}"
