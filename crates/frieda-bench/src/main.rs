//! `frieda-bench` (placeholder: the load generator lands with the benchmark issue).
fn main() {}
