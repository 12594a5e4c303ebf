//! Print a dataset of any HDF5 file: its shape, type, chunking and index, then its values
//! (the first rows of a large one).
//!
//! ```text
//! cargo run --example print_dataset -- FILE DATASET [MAX_VALUES]
//! ```

use h5chunk::{File, TypeClass, TypeDesc};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), Some(name)) = (args.first(), args.get(1)) else {
        eprintln!("usage: print_dataset FILE DATASET [MAX_VALUES]");
        std::process::exit(2);
    };
    let max_values: u64 = match args.get(2) {
        Some(n) => n.parse()?,
        None => 100,
    };

    let file = File::open(path)?;
    let d = file.dataset(name)?;
    let shape = d.shape();
    let dtype = d.dtype();
    println!(
        "{name}: shape {shape:?}, max {:?}, type {}",
        d.max_shape(),
        dtype.numpy()
    );
    if let Some(chunk) = d.chunk() {
        let index = d.index_kind().map_or("none", |k| k.name());
        println!("  chunks {chunk:?}, index {index}");
    }

    // Read whole rows along the first dimension until `max_values` values are shown.
    let row: u64 = shape.iter().skip(1).product();
    let rows = match shape.first() {
        None => 0,
        Some(&n) if row == 0 => n.min(1),
        Some(&n) => n.min(max_values.div_ceil(row.max(1)).max(1)),
    };
    let mut start = vec![0; shape.len()];
    let mut count = shape.clone();
    if let Some(c) = count.first_mut() {
        *c = rows;
    }
    if let Some(s) = start.first_mut() {
        *s = 0;
    }
    let bytes = if shape.is_empty() {
        d.read_raw()?
    } else {
        d.read_slice_raw(&start, &count, None)?
    };
    let values = match dtype.class {
        // Strings: fixed-length ones unpadded, variable-length ones from the global heap.
        TypeClass::FixedString | TypeClass::VarLenString => d
            .decode_strings(&bytes)?
            .into_iter()
            .map(|s| format!("{s:?}"))
            .collect(),
        _ => format_values(&bytes, dtype),
    };
    for (i, line) in values.chunks(row.max(1) as usize).enumerate() {
        println!("  [{i}] {}", line.join(" "));
    }
    let total: u64 = shape.iter().product();
    if (values.len() as u64) < total {
        println!("  ... ({total} values in all)");
    }
    Ok(())
}

/// Each value of little-endian `bytes` of type `t`, as text.
fn format_values(bytes: &[u8], t: TypeDesc) -> Vec<String> {
    bytes
        .chunks_exact(t.size)
        .map(|b| {
            let mut le = [0u8; 8];
            le.iter_mut().zip(b).for_each(|(d, s)| *d = *s);
            let bits = u64::from_le_bytes(le);
            match (t.class, t.size) {
                (TypeClass::Float, 4) => f32::from_bits(bits as u32).to_string(),
                (TypeClass::Float, 8) => f64::from_bits(bits).to_string(),
                (TypeClass::Float, _) => format!("0x{bits:x}"), // half floats: shown raw
                (TypeClass::Uint, _) => bits.to_string(),
                (TypeClass::Int, 1) => (bits as u8 as i8).to_string(),
                (TypeClass::Int, 2) => (bits as u16 as i16).to_string(),
                (TypeClass::Int, 4) => (bits as u32 as i32).to_string(),
                (TypeClass::Int, _) => (bits as i64).to_string(),
                // Compound, enumeration, opaque, ...: the bytes as stored.
                _ => b.iter().map(|x| format!("{x:02x}")).collect(),
            }
        })
        .collect()
}
