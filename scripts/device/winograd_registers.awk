#!/usr/bin/awk -f
# Reads the kernel build logs of `texplan_conv_bench --build-log` (its stderr on NVIDIA) and
# checks the registers ptxas gave conv_winograd.cl's 16-tile form (-DWG_BT=16):
# at most 168, so that three 128-item work-groups fit an SM. Prints one line
# per such build, PASSED or FAILED, and exits 1 on a failure or if none was built.
/^build log: conv_winograd\.cl/ { build = $0; t16 = index($0, "-DWG_BT=16") > 0; next }
t16 && /Used [0-9]+ registers/ {
  match($0, /Used [0-9]+ registers/)
  n = substr($0, RSTART + 5, RLENGTH - 15) + 0
  seen++
  ok = n <= 168
  bad += !ok
  sub(/^build log: /, "", build)
  printf "%s winograd 16-tile registers: %d (at most 168): %s\n", ok ? "[  PASSED  ]" : "[  FAILED  ]", n, build
  t16 = 0
}
END {
  if (!seen) { print "[  FAILED  ] winograd 16-tile registers: no 16-tile build in the log"; exit 1 }
  exit bad > 0
}
