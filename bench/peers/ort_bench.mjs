#!/usr/bin/env node
// onnxruntime (CPU) peer benchmark for texplan.
//
//   node ort_bench.mjs --models DIR [--threads N] [--runs R] [--warmup W] [--json OUT.json] [--no-load-warning] [NAME ...]
//
// For each DIR/NAME/NAME.onnx (weights in NAME.onnx.data, ONNX external data, or in
// the .onnx itself) it feeds test_data_set_0/input_K.pb to the model's K-th input
// (a folder whose weights are missing ends in onnxruntime's error, reported as a
// skip), compares the first output with output_0.pb
// (rel error = ||out - ref|| / ||ref||), warms up W runs, times R runs and prints
// min/median ms. Threads: intraOpNumThreads = interOpNumThreads = N; graph
// optimizations stay at onnxruntime's default level. With no NAME, every model folder in DIR.
// JSON: [{model, median_ms, min_ms, rel_error, threads, ort_version, runs, cpu}].
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import ort from 'onnxruntime-node';

// ---- a tiny reader for onnx.TensorProto (only the fields test data uses) ----
// TensorProto: 1 dims (int64, packed or not), 2 data_type, 4 float_data, 5 int32_data,
// 7 int64_data, 8 name, 9 raw_data, 10 double_data. Other fields are skipped.
const DTYPES = { // onnx data_type -> [ort type name, typed array]
  1: ['float32', Float32Array], 2: ['uint8', Uint8Array], 3: ['int8', Int8Array],
  5: ['int16', Int16Array], 6: ['int32', Int32Array], 7: ['int64', BigInt64Array],
  9: ['bool', Uint8Array], 11: ['float64', Float64Array],
};

function readTensorProto(buf) {
  let pos = 0;
  const varint = () => { // returns BigInt: dims and int64 data can exceed 2^53
    let v = 0n, shift = 0n, b;
    do { b = buf[pos++]; v |= BigInt(b & 0x7f) << shift; shift += 7n; } while (b & 0x80);
    return v;
  };
  const t = { dims: [], dataType: 0, name: '', raw: null, values: [] };
  const packedOrOne = (wire, readOne) => { // repeated scalar: packed (wire 2) or one value
    if (wire !== 2) { t.values.push(readOne()); return; }
    const end = pos + Number(varint());
    while (pos < end) t.values.push(readOne());
  };
  const f32 = () => { const v = buf.readFloatLE(pos); pos += 4; return v; };
  const f64 = () => { const v = buf.readDoubleLE(pos); pos += 8; return v; };
  while (pos < buf.length) {
    const key = Number(varint()), field = key >> 3, wire = key & 7;
    if (field === 1) {
      if (wire === 2) { const end = pos + Number(varint()); while (pos < end) t.dims.push(Number(BigInt.asIntN(64, varint()))); }
      else t.dims.push(Number(BigInt.asIntN(64, varint())));
    } else if (field === 2) t.dataType = Number(varint());
    else if (field === 4) packedOrOne(wire, f32);
    else if (field === 5) packedOrOne(wire, () => Number(BigInt.asIntN(32, varint())));
    else if (field === 7) packedOrOne(wire, () => BigInt.asIntN(64, varint()));
    else if (field === 10) packedOrOne(wire, f64);
    else if (field === 8 || field === 9) {
      const n = Number(varint()), bytes = buf.subarray(pos, pos + n); pos += n;
      if (field === 8) t.name = bytes.toString('utf8'); else t.raw = bytes;
    } else if (wire === 0) varint(); // skip unknown fields
    else if (wire === 1) pos += 8;
    else if (wire === 2) pos += Number(varint());
    else if (wire === 5) pos += 4;
    else throw new Error(`TensorProto: unsupported wire type ${wire} (field ${field})`);
  }
  const dt = DTYPES[t.dataType];
  if (!dt) throw new Error(`TensorProto: unsupported data_type ${t.dataType}`);
  const [type, Arr] = dt;
  let data;
  if (t.raw) { // copy: raw_data may be unaligned inside the file buffer
    const copy = new Uint8Array(t.raw); data = new Arr(copy.buffer, 0, copy.length / Arr.BYTES_PER_ELEMENT);
  } else data = Arr.from(t.values); // int32_data holds the small types too
  return new ort.Tensor(type, data, t.dims);
}

// ---- helpers ----
function parseArgs(argv) {
  const a = { models: null, threads: 1, runs: 20, warmup: 5, json: null, names: [] };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i], v = () => { if (i + 1 >= argv.length) throw new Error(`${k} needs a value`); return argv[++i]; };
    if (k === '--models') a.models = v();
    else if (k === '--threads') a.threads = parseInt(v(), 10);
    else if (k === '--runs') a.runs = parseInt(v(), 10);
    else if (k === '--warmup') a.warmup = parseInt(v(), 10);
    else if (k === '--json') a.json = v();
    else if (k === '--no-load-warning') a.noLoadWarning = true;  // the caller checked the load before its own runs
    else if (k === '-h' || k === '--help') { a.help = true; }
    else if (k.startsWith('--')) throw new Error(`unknown option ${k}`);
    else a.names.push(k);
  }
  return a;
}

const median = (xs) => { const s = [...xs].sort((x, y) => x - y), m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

function relError(out, ref) {
  if (out.data.length !== ref.data.length) return NaN;
  let num = 0, den = 0;
  for (let i = 0; i < ref.data.length; i++) {
    const o = Number(out.data[i]), r = Number(ref.data[i]);
    num += (o - r) * (o - r); den += r * r;
  }
  return Math.sqrt(num) / (Math.sqrt(den) || 1);
}

async function benchOne(dir, name, args) {
  const folder = path.join(dir, name), model = path.join(folder, `${name}.onnx`);
  if (!fs.existsSync(model)) return { skip: `no ${model}` };
  // input_0.pb, input_1.pb, ... feed the model's inputs in order.
  const inputs = [];
  for (let k = 0; fs.existsSync(path.join(folder, 'test_data_set_0', `input_${k}.pb`)); k++)
    inputs.push(readTensorProto(fs.readFileSync(path.join(folder, 'test_data_set_0', `input_${k}.pb`))));
  const refPath = path.join(folder, 'test_data_set_0', 'output_0.pb');
  const ref = fs.existsSync(refPath) ? readTensorProto(fs.readFileSync(refPath)) : null;

  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: args.threads,
    interOpNumThreads: args.threads,
  });
  const feeds = Object.fromEntries(session.inputNames.map((n, k) => [n, inputs[k]]));
  const outName = session.outputNames[0];
  let out;
  for (let i = 0; i < Math.max(1, args.warmup); i++) out = (await session.run(feeds))[outName];
  const rel = ref ? relError(out, ref) : null;
  const times = [];
  for (let i = 0; i < args.runs; i++) {
    const t0 = performance.now();
    await session.run(feeds);
    times.push(performance.now() - t0);
  }
  await session.release();
  return { median_ms: median(times), min_ms: Math.min(...times), rel_error: rel };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.help || !args.models) {
    console.log('usage: node ort_bench.mjs --models DIR [--threads N] [--runs R] [--warmup W] [--json OUT.json] [--no-load-warning] [NAME ...]');
    process.exit(args.help ? 0 : 2);
  }
  const names = args.names.length ? args.names
    : fs.readdirSync(args.models).filter((n) => fs.existsSync(path.join(args.models, n, `${n}.onnx`))).sort();
  const ortVersion = ort.env.versions?.node ?? ort.env.versions?.common ?? 'unknown';
  const cpu = `${os.cpus()[0]?.model ?? '?'} x${os.cpus().length}`;
  console.log(`onnxruntime-node ${ortVersion}, ${cpu}, threads=${args.threads}, warmup=${args.warmup}, runs=${args.runs}`);
  const load = os.loadavg()[0];
  if (load > 0.5 && !args.noLoadWarning) console.error(`warning: load average ${load.toFixed(2)}: other work shares the CPU, timings will be noisy`);
  console.log(`${'model'.padEnd(20)} ${'median ms'.padStart(10)} ${'min ms'.padStart(10)}  rel error`);
  const results = [];
  let failed = 0;
  for (const name of names) {
    let r;
    try { r = await benchOne(args.models, name, args); }
    catch (e) { r = { skip: `error: ${e.message.split('\n')[0]}` }; failed++; }
    if (r.skip) { console.log(`${name.padEnd(20)} skipped: ${r.skip}`); continue; }
    console.log(`${name.padEnd(20)} ${r.median_ms.toFixed(2).padStart(10)} ${r.min_ms.toFixed(2).padStart(10)}  ${r.rel_error === null ? 'n/a' : r.rel_error.toExponential(2)}`);
    results.push({ model: name, ...r, threads: args.threads, ort_version: ortVersion, runs: args.runs, cpu });
  }
  if (args.json) fs.writeFileSync(args.json, JSON.stringify(results, null, 2) + '\n');
  process.exit(failed ? 1 : 0);
}

main().catch((e) => { console.error(e); process.exit(1); });
