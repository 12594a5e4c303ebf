//! The paper's Table 1 (§XV), measured: for full lists of 2^h - 1 supernodes (`--heights
//! A-B`, default 3-12) or a list of any length (`--supernodes N`), look every supernode up
//! from the tail and print the average supernode reads per lookup of each variant, counted
//! through the metadata cache's statistics, as an exact fraction and a decimal.
//!
//! ```text
//! cargo run -p h5chunk-skiplist --example access_table -- --heights 3-12
//! cargo run -p h5chunk-skiplist --example access_table -- --supernodes 1000
//! ```
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::process::ExitCode;

use h5chunk_skiplist::Lookup;
use h5chunk_skiplist::measure::{AccessCounts, access_counts};

fn usage() -> ExitCode {
    eprintln!("usage: access_table [--heights A-B | --supernodes N]");
    ExitCode::from(2)
}

fn cell(c: &AccessCounts, lookup: Lookup) -> String {
    let (num, den) = c.fraction(lookup);
    format!("{num}/{den} ({:.9})", c.average(lookup))
}

fn row(height: Option<u32>, n: u64) -> Result<(), h5chunk_skiplist::Error> {
    let c = access_counts(n)?;
    let h = height.map_or_else(|| "-".to_owned(), |h| h.to_string());
    println!(
        "{h}\t{n}\t{}\t{}\t{}\t{}",
        cell(&c, Lookup::BinaryTree),
        cell(&c, Lookup::RightMost),
        cell(&c, Lookup::LeftRight),
        cell(&c, Lookup::Inner),
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut heights = (3u32, 12u32);
    let mut single = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match (a.as_str(), it.next()) {
            ("--heights", Some(v)) => {
                let parsed = v
                    .split_once('-')
                    .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
                    .or_else(|| v.parse().ok().map(|h| (h, h)));
                match parsed {
                    Some((a, b)) if (1..=40).contains(&a) && a <= b && b <= 40 => heights = (a, b),
                    _ => return usage(),
                }
            }
            ("--supernodes", Some(v)) => match v.parse::<u64>() {
                Ok(n) if n >= 1 => single = Some(n),
                _ => return usage(),
            },
            _ => return usage(),
        }
    }
    println!("height\tn\tbinary\trightmost\tleftright\tinner");
    let result = match single {
        Some(n) => row(None, n),
        None => (heights.0..=heights.1).try_for_each(|h| row(Some(h), (1u64 << h) - 1)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("access_table: {e}");
            ExitCode::FAILURE
        }
    }
}
