// onnx.TensorProto files (test_data_set_*/*.pb) as onnxruntime tensors, and
// the relative error the peers report; shared by ort_bench.mjs and
// ort_agreement.mjs.
import ort from 'onnxruntime-node';

// ---- a tiny reader for onnx.TensorProto (only the fields test data uses) ----
// TensorProto: 1 dims (int64, packed or not), 2 data_type, 4 float_data, 5 int32_data,
// 7 int64_data, 8 name, 9 raw_data, 10 double_data. Other fields are skipped.
const DTYPES = { // onnx data_type -> [ort type name, typed array]
  1: ['float32', Float32Array], 2: ['uint8', Uint8Array], 3: ['int8', Int8Array],
  5: ['int16', Int16Array], 6: ['int32', Int32Array], 7: ['int64', BigInt64Array],
  9: ['bool', Uint8Array], 11: ['float64', Float64Array],
};

export function readTensorProto(buf) {
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

export function relError(out, ref) {
  if (out.data.length !== ref.data.length) return NaN;
  let num = 0, den = 0;
  for (let i = 0; i < ref.data.length; i++) {
    const o = Number(out.data[i]), r = Number(ref.data[i]);
    num += (o - r) * (o - r); den += r * r;
  }
  return Math.sqrt(num) / (Math.sqrt(den) || 1);
}
