# One line per shape of texplan_conv_bench's output: exact fp32 ("auto"),
# tf32 as the runtime chooses, and the fastest tf32 tile, in GFLOP/s
# (scripts/device/gpu_tf32.sh -c).
function flush() { if (name != "" && fp != "") printf "%-44s fp32 %8s | tf32 %8s err %s | best %-18s %8s\n", name, fp, tf, err, bn, bg }
/^[a-z0-9]/ { flush(); name = $0; sub(/  \(.*/, "", name); fp = tf = err = bn = bg = ""; best = 1e30 }
$1 == "auto" && fp == "" { fp = $4 }
$1 == "tf32" { tf = $4; err = $7 }
$1 ~ /^tf32:/ && $2 + 0 < best { best = $2 + 0; bn = $1; bg = $4 }
END { flush() }
