//! The paper's Table 1 (§XV): average supernode reads per lookup for full lists of heights 5
//! to 8, measured through the metadata cache's statistics (docs/format/skiplist.md §6).

use h5chunk_skiplist::Lookup;
use h5chunk_skiplist::measure::access_counts;

/// Table 1 as printed in the paper: height, binary tree, right-most pointers only, left and
/// right-most pointers, inner pointers.
const PAPER: [(u32, [f64; 4]); 4] = [
    (5, [4.161290323, 2.580645161, 2.096774194, 1.838709677]),
    (6, [5.079365079, 3.063492063, 2.555555556, 2.142857143]),
    (7, [6.05511811, 3.527559055, 3.031496063, 2.464566929]),
    (8, [7.031372549, 4.015686275, 3.517647059, 2.788235294]),
];

/// What we measure: total supernode reads over looking up each of the 2^h - 1 supernodes once.
///
/// Two cells disagree with the paper, both at height 6, by one read in 63 lookups:
/// - binary tree: the paper's 5.079365079 is 320/63; a balanced binary tree of 63 nodes has
///   depths summing to 1·1 + 2·2 + 3·4 + 4·8 + 5·16 + 6·32 = 321 (in general
///   (h - 1)·2^h + 1, which the paper's other three rows satisfy: 129, 769, 1793), so we pin
///   321/63 = 5.095238095;
/// - right-most pointers only: the paper's 3.063492063 is 193/63, but its other rows are
///   exactly h·2^(h-1) (80, 448, 1024), as is our count at every height, and a breadth-first
///   search of the pointer graph (the planner test in `shape.rs`) confirms that no route is
///   shorter; we pin 192/63 = 3.047619048.
///
/// Both look like transcription slips in the paper's spreadsheet (one read moved between two
/// columns of the same row); every other cell agrees to the paper's nine decimals.
const MEASURED: [(u32, [u64; 4]); 4] = [
    (5, [129, 80, 65, 57]),
    (6, [321, 192, 161, 135]),
    (7, [769, 448, 385, 313]),
    (8, [1793, 1024, 897, 711]),
];

#[test]
fn table1_heights_5_to_8() {
    for ((h, paper), (h2, pinned)) in PAPER.into_iter().zip(MEASURED) {
        assert_eq!(h, h2);
        let n = (1u64 << h) - 1;
        let counts = access_counts(n).expect("measure");
        assert_eq!(counts.reads, pinned, "height {h}");
        for (i, lookup) in Lookup::ALL.into_iter().enumerate() {
            let measured = counts.average(lookup);
            let agrees = (measured - paper[i]).abs() < 1e-8;
            let known_slip = h == 6 && i <= 1;
            assert_eq!(
                agrees, !known_slip,
                "height {h} {lookup:?}: {measured} vs {}",
                paper[i]
            );
            if known_slip {
                assert_eq!(
                    (paper[i] * n as f64).round() as i64 - pinned[i] as i64,
                    if i == 0 { -1 } else { 1 }
                );
            }
        }
    }
}

/// The inner-pointer average grows about a third as fast as the binary tree's (the paper's
/// "~O(log n)/3"), and the other two variants about half as fast.
#[test]
fn inner_pointer_growth_is_a_third_of_the_binary_tree() {
    let lo = access_counts((1 << 5) - 1).expect("measure");
    let hi = access_counts((1 << 10) - 1).expect("measure");
    let slope = |l| hi.average(l) - lo.average(l);
    let binary = slope(Lookup::BinaryTree);
    let ratio = |l| slope(l) / binary;
    assert!(
        (0.9..1.1).contains(&(binary / 5.0)),
        "binary grows one read per height"
    );
    assert!(
        (0.28..0.38).contains(&ratio(Lookup::Inner)),
        "inner {}",
        ratio(Lookup::Inner)
    );
    assert!((0.45..0.55).contains(&ratio(Lookup::RightMost)));
    assert!((0.45..0.55).contains(&ratio(Lookup::LeftRight)));
    // Lists of any length: inner routes are never longer than the binary tree's.
    for n in [1u64, 2, 3, 100, 1000] {
        let c = access_counts(n).expect("measure");
        assert!(c.reads[3] <= c.reads[2] && c.reads[2] <= c.reads[1] && c.reads[1] <= c.reads[0]);
    }
}
