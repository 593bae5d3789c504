//! The decoder of a SentencePiece `.model`, as `sentencepiece`'s `Decode`:
//! control pieces vanish, `<unk>` shows as its surface (` ⁇ `), `▁` becomes
//! a space, the space of the dummy prefix is dropped from the first piece
//! (from every leading piece while the text is still empty, when extra
//! whitespace is removed), and runs of byte pieces `<0xXX>` become UTF-8
//! with one U+FFFD per byte that does not start a valid character.

use crate::normalizers::sentencepiece::{SentencePieceNormalizer, SentencePieceSpec};
use crate::normalizers::NormalizedString;
use serde::{Deserialize, Serialize};

const SPACE_SYMBOL: &str = "\u{2581}";

fn yes() -> bool {
    true
}

fn default_unk() -> String {
    "<unk>".into()
}

fn default_surface() -> String {
    " \u{2047} ".into()
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SentencePieceDecoder {
    #[serde(default = "yes")]
    pub add_dummy_prefix: bool,
    #[serde(default = "yes")]
    pub remove_extra_whitespaces: bool,
    #[serde(default)]
    pub byte_fallback: bool,
    #[serde(default = "default_unk")]
    pub unk_piece: String,
    #[serde(default = "default_surface")]
    pub unk_surface: String,
    /// pieces that decode to nothing (`<s>`, `</s>` …)
    #[serde(default)]
    pub control_pieces: Vec<String>,
    /// the `.model`'s `denormalizer_spec`, when it has rules
    #[serde(default)]
    pub denormalizer: Option<SentencePieceSpec>,
}

fn byte_piece(t: &str) -> Option<u8> {
    parse_byte_piece(t)
}

/// Bytes to text as `sentencepiece` does: a valid character where one
/// starts, otherwise U+FFFD for that one byte.
pub fn decode_bytes(bytes: &[u8], out: &mut String) {
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let n = if b < 0x80 {
            1
        } else if b & 0xE0 == 0xC0 {
            2
        } else if b & 0xF0 == 0xE0 {
            3
        } else if b & 0xF8 == 0xF0 {
            4
        } else {
            0
        };
        match (n > 0)
            .then(|| bytes.get(i..i + n))
            .flatten()
            .and_then(|c| std::str::from_utf8(c).ok())
        {
            Some(s) => {
                out.push_str(s);
                i += n;
            }
            None => {
                out.push('\u{FFFD}');
                i += 1;
            }
        }
    }
}

impl SentencePieceDecoder {
    pub fn decode_chain(&self, tokens: Vec<String>) -> Vec<String> {
        let mut text = String::new();
        let mut pending: Vec<u8> = Vec::new();
        let mut is_bos_ws = true;
        let mut bos_ws_seen = false;
        for t in &tokens {
            if self.byte_fallback {
                if let Some(b) = byte_piece(t) {
                    pending.push(b);
                    continue;
                }
            }
            decode_bytes(&pending, &mut text);
            pending.clear();
            if bos_ws_seen || !text.is_empty() {
                is_bos_ws = false;
            }
            if self.control_pieces.iter().any(|c| c == t) {
                bos_ws_seen = false;
                continue;
            }
            if *t == self.unk_piece {
                text.push_str(&self.unk_surface);
                bos_ws_seen = false;
                continue;
            }
            let mut piece = t.as_str();
            bos_ws_seen = false;
            if is_bos_ws && (self.add_dummy_prefix || self.remove_extra_whitespaces) {
                if let Some(rest) = piece.strip_prefix(SPACE_SYMBOL) {
                    piece = rest;
                    bos_ws_seen = !self.remove_extra_whitespaces;
                }
            }
            text.push_str(&piece.replace(SPACE_SYMBOL, " "));
        }
        decode_bytes(&pending, &mut text);
        if let Some(spec) = &self.denormalizer {
            let n = SentencePieceNormalizer::from(spec.clone());
            let mut s = NormalizedString::new(&text, 0);
            n.normalize(&mut s);
            text = s.text;
        }
        vec![text]
    }
}

/// The byte a SentencePiece byte piece (`<0x41>`: two upper-case hex
/// digits) stands for, if `p` is one.
pub fn parse_byte_piece(p: &str) -> Option<u8> {
    let hex = p.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 || !hex.bytes().all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)) {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec() -> SentencePieceDecoder {
        SentencePieceDecoder {
            add_dummy_prefix: true,
            remove_extra_whitespaces: false,
            byte_fallback: true,
            unk_piece: "<unk>".into(),
            unk_surface: " \u{2047} ".into(),
            control_pieces: vec!["<s>".into(), "</s>".into()],
            denormalizer: None,
        }
    }

    fn run(d: &SentencePieceDecoder, toks: &[&str]) -> String {
        d.decode_chain(toks.iter().map(|s| s.to_string()).collect()).concat()
    }

    #[test]
    fn decodes_like_sentencepiece() {
        let d = dec();
        assert_eq!(run(&d, &["<s>", "\u{2581}Hi", "\u{2581}there", "</s>"]), "Hi there");
        assert_eq!(run(&d, &["\u{2581}", "\u{2581}a"]), " a");
        assert_eq!(
            run(&d, &["<0xC3>", "<0xA9>", "<0xFF>", "x", "<unk>"]),
            "\u{e9}\u{FFFD}x \u{2047} "
        );
        // a cut character: one U+FFFD per byte
        assert_eq!(run(&d, &["<0xE2>", "<0x96>", "a"]), "\u{FFFD}\u{FFFD}a");
        let rew = SentencePieceDecoder {
            remove_extra_whitespaces: true,
            ..dec()
        };
        assert_eq!(run(&rew, &["\u{2581}", "\u{2581}a"]), "a");
    }
}
