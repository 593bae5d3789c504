//! Time the UCS-2 to UTF-8 conversion the Python bindings run on strings
//! CPython keeps two bytes a character (CJK text): `cargo run --release
//! --example profile_utf8 -- FILE` (the file's characters below U+10000).
use std::time::Instant;
use tokensmith::utf8::{push_units, Units};
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).unwrap();
    let units: Vec<u16> = text
        .chars()
        .filter(|&c| (c as u32) < 0x10000)
        .map(|c| c as u16)
        .collect();
    let want: String = units.iter().map(|&u| char::from_u32(u as u32).unwrap()).collect();
    let mut out = String::with_capacity(want.len() * 2);
    let mut best = f64::MAX;
    for _ in 0..30 {
        out.clear();
        let s = Instant::now();
        push_units(Units::Ucs2(&units), &mut out).unwrap();
        best = best.min(s.elapsed().as_secs_f64());
    }
    assert!(out == want);
    println!(
        "{} units: {:.3} ms, {:.2} ns/unit, {:.0} MB/s of UTF-8",
        units.len(),
        best * 1e3,
        best * 1e9 / units.len() as f64,
        want.len() as f64 / best / 1e6
    );
}
