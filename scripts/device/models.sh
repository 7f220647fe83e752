# Sourced (by env.sh, and by gpu_profile.sh where it runs without .dev):
# runnable_models [DIR] prints, one per line, the models of DIR (default
# .dev/models) that have their weights (MODEL/MODEL.onnx.data), i.e. the ones
# texplan can run rather than only plan.
runnable_models() {
  local d n
  for d in "${1:-.dev/models}"/*/; do
    n=$(basename "$d")
    [[ -f $d/$n.onnx.data ]] && echo "$n"
  done
  return 0
}
