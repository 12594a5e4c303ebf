//! Shared helpers for h5chunk's criterion benchmarks (see `benches/`).
