// The jsfive reader of `cargo xtask reach` (npm `jsfive`): one JSON line per dataset, in the
// forms of common.rs. jsfive gives values, not bytes: numbers are encoded back as
// little-endian values of the dtype's size, fixed-length strings as their bytes padded with
// NULs to the dtype's size, variable-length strings as strings; any other type is reported
// as an error ("no value form"), counted as a refusal.
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import * as hdf5 from 'jsfive';

const emit = (rec) => process.stdout.write(JSON.stringify(rec) + '\n');
const sha = (buf) => createHash('sha256').update(buf).digest('hex');

function flat(v) {
  if (Array.isArray(v) || ArrayBuffer.isView(v)) {
    const out = [];
    for (const x of v) {
      if (Array.isArray(x)) out.push(...flat(x)); else out.push(x);
    }
    return out;
  }
  return [v];
}

// An IEEE binary16's bits from a number that is one (values read from a float16 are).
function f16bits(x) {
  const b = new DataView(new ArrayBuffer(4));
  b.setFloat32(0, x);
  const f = b.getUint32(0);
  const sign = (f >>> 16) & 0x8000;
  const exp = (f >>> 23) & 0xff;
  const man = f & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (man ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const m = (man | 0x800000) >>> (14 - e);
    return sign | m;
  }
  return sign | (e << 10) | (man >>> 13);
}

function numberBytes(values, kind, size) {
  const buf = Buffer.alloc(values.length * size);
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  values.forEach((v, i) => {
    const at = i * size;
    if (kind === 'f') {
      if (size === 8) dv.setFloat64(at, Number(v), true);
      else if (size === 4) dv.setFloat32(at, Number(v), true);
      else dv.setUint16(at, f16bits(Number(v)), true);
    } else if (size === 8) {
      const big = typeof v === 'bigint' ? v : BigInt(Math.trunc(Number(v)));
      if (kind === 'i') dv.setBigInt64(at, big, true); else dv.setBigUint64(at, BigInt.asUintN(64, big), true);
    } else {
      const n = Number(v);
      const set = { '1i': 'setInt8', '1u': 'setUint8', '2i': 'setInt16', '2u': 'setUint16', '4i': 'setInt32', '4u': 'setUint32' }[`${size}${kind}`];
      if (size === 1) dv[set](at, n); else dv[set](at, n, true);
    }
  });
  return buf;
}

function read(ds) {
  const dtype = ds.dtype;
  const shape = ds.shape;
  const value = ds.value;
  if (value === null || value === undefined) return [shape ?? null, 'empty'];
  const values = flat(value);
  // jsfive gives null for elements it has no value for (unwritten chunks, a null
  // dataspace): not values, so counted wrong whatever h5py reads there.
  if (values.some((x) => x === null || x === undefined)) return [shape, 'null elements'];
  if (typeof dtype === 'string') {
    let m = /^([<>|=]?)([iuf])(\d+)$/.exec(dtype);
    if (m) return [shape, sha(numberBytes(values, m[2], Number(m[3])))];
    m = /^([<>|=]?)S(\d+)$/.exec(dtype);
    if (m) {
      const size = Number(m[2]);
      const buf = Buffer.alloc(values.length * size);
      values.forEach((s, i) => Buffer.from(String(s), 'utf8').copy(buf, i * size, 0, size));
      return [shape, sha(buf)];
    }
  }
  if (values.length > 0 && values.every((x) => typeof x === 'string')) {
    return [shape, sha(Buffer.concat(values.map((s) => Buffer.concat([Buffer.from(s, 'utf8'), Buffer.from([0])]))))];
  }
  throw new Error(`no value form for dtype ${JSON.stringify(dtype)}`);
}

function walk(g, path, depth) {
  if (depth > 64) return;
  let keys;
  try {
    keys = g.keys;
  } catch (e) {
    emit({ path: path.replace(/\/$/, '') + '/*', err: String(e && e.message || e) });
    return;
  }
  for (const name of keys) {
    const p = path === '/' ? `/${name}` : `${path}/${name}`;
    let obj;
    try {
      obj = g.get(name);
    } catch (e) {
      emit({ path: p, err: String(e && e.message || e) });
      continue;
    }
    if (obj instanceof hdf5.Dataset) {
      try {
        const [shape, hash] = read(obj);
        emit({ path: p, shape, hash });
      } catch (e) {
        emit({ path: p, err: String(e && e.message || e) });
      }
    } else if (obj instanceof hdf5.Group) {
      walk(obj, p, depth + 1);
    }
  }
}

const file = process.argv[2];
try {
  const bytes = readFileSync(file);
  const ab = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  walk(new hdf5.File(ab, file), '/', 0);
} catch (e) {
  emit({ file_err: String(e && e.message || e) });
}
