#!/usr/bin/env node
// How far onnxruntime agrees with itself on a model, and texplan with it:
// the model run with graph optimizations at onnxruntime's default and with
// them disabled (which computes QuantizeLinear/DequantizeLinear pairs in
// float, as texplan does), and texplan's output (`texplan run DIR --output
// OUT`) against both. For quantized models, where a value at a rounding
// boundary moves a quantization step with the order of summation
// (docs/exporters.md#quantized-models).
//
//   node ort_agreement.mjs MODEL_DIR [TEXPLAN_OUTPUT_0.pb]
import fs from 'node:fs';
import path from 'node:path';
import ort from 'onnxruntime-node';
import { readTensorProto, relError } from './tensor_proto.mjs';

const [dir, mine] = process.argv.slice(2);
if (!dir) { console.error('usage: node ort_agreement.mjs MODEL_DIR [TEXPLAN_OUTPUT_0.pb]'); process.exit(2); }
const name = path.basename(path.resolve(dir));
const x = readTensorProto(fs.readFileSync(path.join(dir, 'test_data_set_0', 'input_0.pb')));
const out = {};
for (const level of ['all', 'disabled']) {
  const s = await ort.InferenceSession.create(path.join(dir, name + '.onnx'),
    { executionProviders: ['cpu'], graphOptimizationLevel: level, logSeverityLevel: 3 });
  out[level] = (await s.run({ [s.inputNames[0]]: x }))[s.outputNames[0]];
}
const e = (v) => v.toExponential(2);
let line = `${name}: onnxruntime optimized against unoptimized ${e(relError(out.all, out.disabled))}`;
if (mine) {
  const t = readTensorProto(fs.readFileSync(mine));
  line += `; texplan against optimized ${e(relError(t, out.all))}, against unoptimized ${e(relError(t, out.disabled))}`;
}
console.log(line);
