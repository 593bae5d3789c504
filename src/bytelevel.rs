//! The GPT-2 byte <-> printable character table used by byte-level tokenizers.
//!
//! Bytes that are printable Latin-1 characters map to themselves; the other
//! 68 bytes map, in order, to U+0100 and up. `tokenizer.json` files store
//! byte-level vocabularies in this alphabet.

use std::sync::OnceLock;

struct Tables {
    byte_to_char: [char; 256],
    char_to_byte: rustc_hash::FxHashMap<char, u8>,
}

fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        let mut byte_to_char = ['\0'; 256];
        let printable = |b: u32| (0x21..=0x7E).contains(&b) || (0xA1..=0xAC).contains(&b) || (0xAE..=0xFF).contains(&b);
        let mut next = 0u32;
        for b in 0u32..256 {
            let c = if printable(b) {
                b
            } else {
                let c = 256 + next;
                next += 1;
                c
            };
            byte_to_char[b as usize] = char::from_u32(c).unwrap_or('\u{FFFD}');
        }
        let char_to_byte = byte_to_char.iter().enumerate().map(|(b, &c)| (c, b as u8)).collect();
        Tables {
            byte_to_char,
            char_to_byte,
        }
    })
}

/// Render raw bytes in the byte-level alphabet.
pub fn bytes_to_string(bytes: &[u8]) -> String {
    let t = tables();
    bytes.iter().map(|&b| t.byte_to_char[b as usize]).collect()
}

/// Map a byte-level string back to raw bytes; `None` when a character is
/// outside the byte-level alphabet.
pub fn string_to_bytes(s: &str) -> Option<Vec<u8>> {
    let t = tables();
    s.chars().map(|c| t.char_to_byte.get(&c).copied()).collect()
}

pub fn char_of_byte(b: u8) -> char {
    tables().byte_to_char[b as usize]
}

pub fn byte_of_char(c: char) -> Option<u8> {
    tables().char_to_byte.get(&c).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_a_bijection() {
        let all: Vec<u8> = (0..=255).collect();
        let s = bytes_to_string(&all);
        assert_eq!(s.chars().count(), 256);
        assert_eq!(string_to_bytes(&s).unwrap(), all);
        assert_eq!(char_of_byte(b' '), '\u{120}');
        assert_eq!(char_of_byte(b'\n'), '\u{10A}');
        assert_eq!(char_of_byte(b'a'), 'a');
        assert_eq!(string_to_bytes("\u{4e2d}"), None);
    }
}
