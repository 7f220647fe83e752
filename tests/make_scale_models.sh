#!/usr/bin/env bash
# Writes the two scale models of issue 26 (import and planning must stay
# linear or n log n in nodes and outputs) as ONNX files, through protoc's
# text format (no Python onnx needed):
#
#   tests/make_scale_models.sh DIR [OUTPUTS] [CHAIN]
#
#   DIR/outputs_N/outputs_N.onnx  x[1,16] -> N Relu nodes, each reading x,
#                                 each output a graph output (default 40,000)
#   DIR/chain_N/chain_N.onnx      x[1,16] -> a chain of N Relu nodes, the last
#                                 one the graph output (default 1,000,000)
#
# Then: texplan plan DIR/outputs_40000  (tests/test_scale.cpp builds the same
# graphs in memory).
set -euo pipefail
dir=$1 outputs=${2:-40000} chain=${3:-1000000}
proto=/usr/include/onnx/onnx.proto
[ -f "$proto" ] || { echo "no $proto (libonnx-dev)"; exit 1; }
encode() {  # text format on stdin -> binary $1
  mkdir -p "$(dirname "$1")"
  protoc --encode=onnx.ModelProto -I/usr/include onnx/onnx.proto > "$1"
}
header='ir_version: 7 opset_import { domain: "" version: 13 } graph { name: "g"'
input='input { name: "x" type { tensor_type { elem_type: 1 shape { dim { dim_value: 1 } dim { dim_value: 16 } } } } }'
if [ "$outputs" -gt 0 ]; then
  awk -v n="$outputs" -v header="$header" -v input="$input" 'BEGIN {
    print header; print input
    for (i = 0; i < n; ++i) printf "node { op_type: \"Relu\" name: \"r%d\" input: \"x\" output: \"y%d\" }\n", i, i
    for (i = 0; i < n; ++i) printf "output { name: \"y%d\" }\n", i
    print "}" }' | encode "$dir/outputs_$outputs/outputs_$outputs.onnx"
fi
if [ "$chain" -gt 0 ]; then
  awk -v n="$chain" -v header="$header" -v input="$input" 'BEGIN {
    print header; print input
    prev = "x"
    for (i = 0; i < n; ++i) { printf "node { op_type: \"Relu\" name: \"r%d\" input: \"%s\" output: \"t%d\" }\n", i, prev, i; prev = "t" i }
    printf "output { name: \"%s\" }\n}\n", prev }' | encode "$dir/chain_$chain/chain_$chain.onnx"
fi
ls -l "$dir"/*/*.onnx
