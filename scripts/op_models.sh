#!/usr/bin/env bash
# Writes one-operator models for measuring single kernels with `texplan run
# MODEL --random-input 1 --profile` (docs/performance.md), through protoc's
# text format (no Python onnx needed):
#
#   scripts/op_models.sh DIR
#
#   DIR/pad/pad.onnx          x[1,64,112,112] -> Pad 1 on H and W (constant) -> Relu
#   DIR/bn_relu/bn_relu.onnx  x[1,256,56,56] -> BatchNormalization -> Relu (one FusedElementwise)
#   DIR/pad_avgpool/pad_avgpool.onnx  x[1,288,35,35] -> Pad 1 on H and W -> AveragePool 3x3 stride 1
#                             (TorchScript's avg_pool2d(padding=1): Inception-v3's branch pools)
#   DIR/maxpool14/maxpool14.onnx    x[1,528,14,14] -> MaxPool 3x3 stride 1 pad 1 ceil_mode (GoogLeNet's 4e branch pool)
#   DIR/maxpool28/maxpool28.onnx    x[1,480,28,28] -> the same (GoogLeNet's 3b)
#   DIR/maxpool112/maxpool112.onnx  x[1,64,112,112] -> MaxPool 3x3 stride 2 ceil_mode (GoogLeNet's first)
set -euo pipefail
dir=$1
proto=/usr/include/onnx/onnx.proto
[ -f "$proto" ] || { echo "no $proto (libonnx-dev)"; exit 1; }
encode() {  # text format on stdin -> binary $1
  mkdir -p "$(dirname "$1")"
  protoc --encode=onnx.ModelProto -I/usr/include onnx/onnx.proto > "$1"
}
input() {  # NAME C H W
  echo "input { name: \"$1\" type { tensor_type { elem_type: 1 shape { dim { dim_value: 1 } dim { dim_value: $2 } dim { dim_value: $3 } dim { dim_value: $4 } } } } }"
}
encode "$dir/pad/pad.onnx" <<TXT
ir_version: 8 opset_import { domain: "" version: 13 } graph { name: "pad"
$(input x 64 112 112)
initializer { name: "p" data_type: 7 dims: 8 int64_data: [0, 0, 1, 1, 0, 0, 1, 1] }
node { op_type: "Pad" name: "pad" input: "x" input: "p" output: "y" attribute { name: "mode" s: "constant" type: STRING } }
node { op_type: "Relu" name: "relu" input: "y" output: "z" }
output { name: "z" }
}
TXT
channels() {  # NAME VALUE: a [256] initializer of one value
  echo "initializer { name: \"$1\" data_type: 1 dims: 256 float_data: [$(seq -s, 256 | sed "s/[0-9]\+/$2/g")] }"
}
encode "$dir/bn_relu/bn_relu.onnx" <<TXT
ir_version: 8 opset_import { domain: "" version: 13 } graph { name: "bn_relu"
$(input x 256 56 56)
$(channels s 1.5) $(channels b 0.1) $(channels m 0.05) $(channels v 2.0)
node { op_type: "BatchNormalization" name: "bn" input: "x" input: "s" input: "b" input: "m" input: "v" output: "y" }
node { op_type: "Relu" name: "relu" input: "y" output: "z" }
output { name: "z" }
}
TXT
encode "$dir/pad_avgpool/pad_avgpool.onnx" <<TXT
ir_version: 8 opset_import { domain: "" version: 13 } graph { name: "pad_avgpool"
$(input x 288 35 35)
initializer { name: "p" data_type: 7 dims: 8 int64_data: [0, 0, 1, 1, 0, 0, 1, 1] }
node { op_type: "Pad" name: "pad" input: "x" input: "p" output: "y" attribute { name: "mode" s: "constant" type: STRING } }
node { op_type: "AveragePool" name: "pool" input: "y" output: "z" attribute { name: "kernel_shape" ints: [3, 3] type: INTS } }
output { name: "z" }
}
TXT
maxpool() {  # NAME C H STRIDE PAD
  encode "$dir/$1/$1.onnx" <<TXT
ir_version: 8 opset_import { domain: "" version: 13 } graph { name: "$1"
$(input x $2 $3 $3)
node { op_type: "MaxPool" name: "pool" input: "x" output: "y"
  attribute { name: "kernel_shape" ints: [3, 3] type: INTS } attribute { name: "strides" ints: [$4, $4] type: INTS }
  attribute { name: "pads" ints: [$5, $5, $5, $5] type: INTS } attribute { name: "ceil_mode" i: 1 type: INT } }
output { name: "y" }
}
TXT
}
maxpool maxpool14 528 14 1 1
maxpool maxpool28 480 28 1 1
maxpool maxpool112 64 112 2 0
ls -l "$dir"/*/*.onnx
