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
import { readTensorProto, relError } from './tensor_proto.mjs';

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
