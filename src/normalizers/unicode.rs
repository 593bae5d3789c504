//! Unicode decomposition and composition that remember, for every output
//! character, how it relates to the input (the `(char, change)` protocol of
//! `NormalizedString::transform_changes`): the first character of a
//! decomposition replaces its source (`0`), the others are insertions (`1`);
//! composing two characters into one removes one (`-1`).

use unicode_normalization::char::{canonical_combining_class, compose, decompose_canonical, decompose_compatible};

pub fn decompose(text: &str, compat: bool) -> Vec<(char, isize)> {
    let mut out: Vec<(u8, char, isize)> = Vec::with_capacity(text.len() + 8);
    for ch in text.chars() {
        let mut first = true;
        let mut push = |d: char| {
            out.push((canonical_combining_class(d), d, if first { 0 } else { 1 }));
            first = false;
        };
        if compat {
            decompose_compatible(ch, &mut push);
        } else {
            decompose_canonical(ch, &mut push);
        }
    }
    // canonical ordering: stable sort of every run of non-starters by class
    let mut i = 0;
    while i < out.len() {
        if out[i].0 == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < out.len() && out[i].0 != 0 {
            i += 1;
        }
        out[start..i].sort_by_key(|e| e.0);
    }
    out.into_iter().map(|(_, c, ch)| (c, ch)).collect()
}

/// Canonical composition (UAX #15) of a decomposed sequence.
pub fn recompose(input: Vec<(char, isize)>) -> Vec<(char, isize)> {
    let mut out = Vec::with_capacity(input.len());
    let mut starter: Option<(char, isize)> = None;
    let mut pending: Vec<(char, isize)> = Vec::new();
    let mut last_class: Option<u8> = None;
    for (ch, change) in input {
        let class = canonical_combining_class(ch);
        let Some(k) = starter else {
            if class == 0 {
                starter = Some((ch, change));
            } else {
                out.push((ch, change));
            }
            continue;
        };
        let blocked = last_class.is_some_and(|l| l >= class);
        if !blocked {
            if let Some(r) = compose(k.0, ch) {
                starter = Some((r, k.1 + change - 1));
                continue;
            }
        }
        if class == 0 {
            out.push(k);
            out.append(&mut pending);
            starter = Some((ch, change));
            last_class = None;
        } else {
            pending.push((ch, change));
            last_class = Some(class);
        }
    }
    if let Some(k) = starter {
        out.push(k);
    }
    out.append(&mut pending);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_normalization::UnicodeNormalization;

    #[test]
    fn matches_the_library_forms() {
        let samples = [
            "e\u{301}",
            "\u{1e69}\u{323}",
            "a\u{323}\u{302}b",
            "\u{fb01}",
            "\u{1100}\u{1161}\u{11a8}",
            "\u{212b}x",
            "\u{301}a",
        ];
        for s in samples {
            let nfd: String = decompose(s, false).iter().map(|c| c.0).collect();
            assert_eq!(nfd, s.nfd().collect::<String>());
            let nfc: String = recompose(decompose(s, false)).iter().map(|c| c.0).collect();
            assert_eq!(nfc, s.nfc().collect::<String>(), "{s:?}");
            let nfkc: String = recompose(decompose(s, true)).iter().map(|c| c.0).collect();
            assert_eq!(nfkc, s.nfkc().collect::<String>());
        }
        assert_eq!(recompose(decompose("e\u{301}", false)), vec![('\u{e9}', -1)]);
        assert_eq!(decompose("\u{fb01}", true), vec![('f', 0), ('i', 1)]);
    }
}
