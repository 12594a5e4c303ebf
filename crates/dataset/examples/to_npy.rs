//! Convert one dataset of an HDF5 file to NumPy's `.npy` format, reading it a block of rows at
//! a time so memory stays bounded whatever the dataset's size.
//!
//! ```text
//! cargo run --example to_npy -- FILE DATASET OUT.npy
//! python3 -c "import numpy; print(numpy.load('OUT.npy'))"
//! ```

use std::io::{BufWriter, Write};

use h5chunk::{File, TypeClass};

/// Bytes read per block (rounded to whole rows along the first dimension).
const BLOCK_BYTES: usize = 16 << 20;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, name, out] = args.as_slice() else {
        eprintln!("usage: to_npy FILE DATASET OUT.npy");
        std::process::exit(2);
    };

    let file = File::open(path)?;
    let d = file.dataset(name)?;
    let shape = d.shape();
    let dtype = d.dtype();
    // h5chunk's raw reads give little-endian bytes whatever the order on disk.
    let descr = match dtype.class {
        TypeClass::Int | TypeClass::Uint | TypeClass::Float => {
            let kind = match dtype.class {
                TypeClass::Int => 'i',
                TypeClass::Uint => 'u',
                _ => 'f',
            };
            let order = if dtype.size == 1 { '|' } else { '<' };
            format!("{order}{kind}{}", dtype.size)
        }
        // Fixed-length strings and other fixed-size elements (bfloat16 too: numpy has no such
        // type) go to `.npy` as their bytes.
        TypeClass::FixedString => format!("|S{}", dtype.size),
        TypeClass::Other | TypeClass::BFloat16 => format!("|V{}", dtype.size),
        TypeClass::VarLenString => {
            eprintln!("{name}: variable-length strings have no .npy form");
            std::process::exit(1);
        }
    };

    let mut w = BufWriter::new(std::fs::File::create(out)?);
    w.write_all(&npy_header(&descr, &shape))?;
    // Slab by slab: whole rows along the first dimension, about `BLOCK_BYTES` each.
    for slab in d.slabs(BLOCK_BYTES) {
        w.write_all(&slab?.bytes)?;
    }
    w.flush()?;
    println!("{out}: {descr} {shape:?}");
    Ok(())
}

/// A version 1.0 `.npy` header: magic, version, header length, then a Python dict literal
/// padded with spaces and a newline to a multiple of 64 bytes.
fn npy_header(descr: &str, shape: &[u64]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let dims = match dims.as_slice() {
        [one] => format!("({one},)"),
        _ => format!("({})", dims.join(", ")),
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    // Magic and version (8 bytes), length (2), the dict, the newline: a multiple of 64.
    let unpadded = dict.len().saturating_add(11);
    let pad = unpadded.next_multiple_of(64).saturating_sub(unpadded);
    dict.push_str(&" ".repeat(pad));
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&u16::try_from(dict.len()).unwrap_or(u16::MAX).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}
