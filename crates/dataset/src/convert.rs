//! Numeric conversion between element types, as libhdf5 and h5py convert on read and write:
//! a float32 dataset read as `f64`, an `i64` attribute read as `i32`, `f64` values written to
//! a float32 dataset.
//!
//! Integers convert exactly or not at all: a value outside the target's range (or a float that
//! is not finite, into an integer) is an error naming it, where libhdf5 would clip it silently.
//! A float's fraction is dropped toward zero into an integer (numpy's `astype`, libhdf5's
//! conversion). Floats round to the nearest, and a value past a narrower float's range becomes
//! an infinity, as libhdf5 and numpy make it. Half-precision floats (h5py's `float16`) and bfloat16
//! convert both ways.

use half::{bf16, f16};

use crate::types::{TypeClass, TypeDesc};

/// One number on its way between types.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
}

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Num::Int(v) => write!(f, "{v}"),
            Num::Float(v) => write!(f, "{v}"),
        }
    }
}

/// The element at `index` whose value `value` the target type cannot hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unfit {
    pub(crate) index: usize,
    pub(crate) value: String,
}

/// Whether values of `from` convert to `to`: both numbers (integers or IEEE floats).
pub(crate) fn convertible(from: TypeDesc, to: TypeDesc) -> bool {
    from.is_number() && to.is_number()
}

/// Convert the elements of `from` in `src` (little-endian) to elements of `to` in `dst`
/// (little-endian; as many elements, `to.size` bytes each). Both types must be
/// [`convertible`]; elements left over in either buffer are not touched.
pub(crate) fn convert(
    from: TypeDesc,
    src: &[u8],
    to: TypeDesc,
    dst: &mut [u8],
) -> Result<(), Unfit> {
    if from.size == 0 || to.size == 0 {
        return Ok(());
    }
    for (index, (s, d)) in (src.chunks_exact(from.size))
        .zip(dst.chunks_exact_mut(to.size))
        .enumerate()
    {
        let value = get(from, s);
        if put(to, value, d).is_none() {
            return Err(Unfit {
                index,
                value: value.to_string(),
            });
        }
    }
    Ok(())
}

/// The little-endian element `b` of `t`.
fn get(t: TypeDesc, b: &[u8]) -> Num {
    let mut le = [0u8; 16];
    if let Some(head) = le.get_mut(..b.len().min(16)) {
        head.copy_from_slice(b.get(..head.len()).unwrap_or_default());
    }
    let raw = u128::from_le_bytes(le);
    let bits = (t.size.min(16) as u32).saturating_mul(8);
    match t.class {
        TypeClass::Float => Num::Float(match t.size {
            2 => f16::from_bits(raw as u16).to_f64(),
            4 => f64::from(f32::from_bits(raw as u32)),
            _ => f64::from_bits(raw as u64),
        }),
        TypeClass::BFloat16 => Num::Float(bf16::from_bits(raw as u16).to_f64()),
        TypeClass::Int => {
            // Sign-extend from `bits`.
            let shift = 128u32.saturating_sub(bits);
            Num::Int(((raw << shift) as i128) >> shift)
        }
        _ => Num::Int(raw as i128),
    }
}

/// Write `v` as an element of `t` into `out`; `None` when `t` cannot hold it.
fn put(t: TypeDesc, v: Num, out: &mut [u8]) -> Option<()> {
    let bits = u32::try_from(t.size).ok()?.checked_mul(8)?;
    let le: [u8; 16] = match t.class {
        TypeClass::Float => {
            let f = match v {
                Num::Int(i) => i as f64,
                Num::Float(f) => f,
            };
            let raw: u128 = match t.size {
                2 => u128::from(f16::from_f64(f).to_bits()),
                4 => u128::from((f as f32).to_bits()),
                _ => u128::from(f.to_bits()),
            };
            raw.to_le_bytes()
        }
        TypeClass::BFloat16 => {
            let f = match v {
                Num::Int(i) => i as f64,
                Num::Float(f) => f,
            };
            // Rounded to the nearest, ties to even, as libhdf5 converts.
            u128::from(bf16::from_f64(f).to_bits()).to_le_bytes()
        }
        TypeClass::Int | TypeClass::Uint => {
            let i = match v {
                Num::Int(i) => i,
                Num::Float(f) if f.is_finite() => {
                    let t = f.trunc();
                    // Past every integer type's range: refused below by the range check.
                    if t.abs() >= 2f64.powi(127) {
                        return None;
                    }
                    t as i128
                }
                Num::Float(_) => return None,
            };
            let (min, max) = if t.class == TypeClass::Int {
                let half = 1i128.checked_shl(bits.checked_sub(1)?)?;
                (half.checked_neg()?, half.checked_sub(1)?)
            } else {
                (0, 1i128.checked_shl(bits)?.checked_sub(1)?)
            };
            if i < min || i > max {
                return None;
            }
            i.to_le_bytes()
        }
        _ => return None,
    };
    out.copy_from_slice(le.get(..out.len())?);
    Some(())
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use crate::H5Type;

    fn conv<A: H5Type, B: H5Type>(values: &[A]) -> Result<Vec<B>, Unfit> {
        let mut src = vec![0u8; values.len() * A::DESC.size];
        for (v, b) in values.iter().zip(src.chunks_exact_mut(A::DESC.size)) {
            v.write_le(b);
        }
        let mut dst = vec![0u8; values.len() * B::DESC.size];
        convert(A::DESC, &src, B::DESC, &mut dst)?;
        Ok(dst.chunks_exact(B::DESC.size).map(B::read_le).collect())
    }

    #[test]
    fn integers_convert_when_they_fit_and_name_the_first_that_does_not() {
        assert_eq!(
            conv::<i64, i32>(&[-5, 7, i64::from(i32::MAX)]),
            Ok(vec![-5, 7, i32::MAX])
        );
        assert_eq!(
            conv::<i64, i32>(&[1, i64::from(i32::MAX) + 1]),
            Err(Unfit {
                index: 1,
                value: "2147483648".into()
            })
        );
        assert_eq!(conv::<u8, i8>(&[127, 128]).unwrap_err().index, 1);
        assert_eq!(conv::<i16, u64>(&[3, -1]).unwrap_err().value, "-1");
        assert_eq!(conv::<u64, i64>(&[u64::MAX]).unwrap_err().index, 0);
        assert_eq!(conv::<u32, u64>(&[u32::MAX]), Ok(vec![u64::from(u32::MAX)]));
    }

    #[test]
    fn floats_round_and_truncate_as_libhdf5() {
        assert_eq!(conv::<f32, f64>(&[1.5, -0.25]), Ok(vec![1.5, -0.25]));
        assert_eq!(
            conv::<f64, f32>(&[0.1, 1e300]),
            Ok(vec![0.1f32, f32::INFINITY])
        );
        assert_eq!(conv::<f64, i32>(&[2.9, -2.9]), Ok(vec![2, -2]));
        assert_eq!(conv::<f64, u8>(&[255.5]), Ok(vec![255]));
        assert_eq!(conv::<f64, u8>(&[256.0]).unwrap_err().value, "256");
        assert_eq!(conv::<f32, i64>(&[f32::NAN]).unwrap_err().index, 0);
        assert_eq!(conv::<f64, i64>(&[1e300]).unwrap_err().index, 0);
        assert_eq!(conv::<i64, f64>(&[-3]), Ok(vec![-3.0]));
    }

    #[test]
    fn half_precision_converts_both_ways() {
        let f16_desc = TypeDesc {
            class: TypeClass::Float,
            size: 2,
            order: crate::types::ByteOrder::LittleEndian,
        };
        // 1.5 and -2.0 as IEEE binary16.
        let src = [0x00, 0x3e, 0x00, 0xc0];
        let mut dst = [0u8; 8];
        convert(f16_desc, &src, f32::DESC, &mut dst).unwrap();
        assert_eq!(
            dst,
            [1.5f32.to_le_bytes(), (-2.0f32).to_le_bytes()].concat()[..]
        );
        let mut back = [0u8; 4];
        convert(f32::DESC, &dst, f16_desc, &mut back).unwrap();
        assert_eq!(back, src);
    }

    #[test]
    fn bfloat16_converts_both_ways_rounding_to_nearest() {
        let bits = |v: &[half::bf16]| v.iter().map(|b| b.to_bits()).collect::<Vec<_>>();
        let from_bits = |b: &[u16]| {
            b.iter()
                .map(|&b| half::bf16::from_bits(b))
                .collect::<Vec<_>>()
        };
        // 1.0, -2.5, the smallest subnormal, -infinity.
        let src = from_bits(&[0x3f80, 0xc020, 0x0001, 0xff80]);
        assert_eq!(
            conv::<half::bf16, f32>(&src),
            Ok(vec![
                1.0,
                -2.5,
                f32::from_bits(0x0001_0000),
                f32::NEG_INFINITY
            ])
        );
        assert_eq!(conv::<half::bf16, i32>(&src[..2]), Ok(vec![1, -2]));
        // -1/3 is 0xbeaaaaab as a binary32: its top half rounds up (truncation would give
        // 0xbeaa); 3e38 (0x7f61b1e6) rounds up too; 1e39, past bfloat16's largest finite
        // value, becomes infinity.
        let back = conv::<f64, half::bf16>(&[-1.0 / 3.0, 3e38, 1e39, 7.0]).unwrap();
        assert_eq!(bits(&back), [0xbeab, 0x7f62, 0x7f80, 0x40e0]);
    }
}
