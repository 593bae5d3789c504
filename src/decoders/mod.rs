//! Decoders: turn token strings back into text.

pub mod sentencepiece;
pub mod wordpiece;

use crate::bytelevel;
use crate::pattern::Pattern;
use serde::{Deserialize, Serialize};

/// The registry of decoder components, named as in `tokenizer.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Decoder {
    ByteLevel {
        #[serde(default = "yes")]
        add_prefix_space: bool,
        #[serde(default = "yes")]
        trim_offsets: bool,
        #[serde(default = "yes")]
        use_regex: bool,
    },
    Sequence {
        decoders: Vec<Decoder>,
    },
    #[serde(rename = "BPEDecoder")]
    Bpe {
        #[serde(default = "eow")]
        suffix: String,
    },
    Replace {
        pattern: Pattern,
        content: String,
    },
    Strip {
        content: char,
        start: usize,
        stop: usize,
    },
    Fuse,
    ByteFallback,
    WordPiece(wordpiece::WordPieceDecoder),
    Metaspace(crate::pre_tokenizers::metaspace::Metaspace),
    /// tokensmith's: a SentencePiece `.model`'s decoding, exactly
    SentencePiece(sentencepiece::SentencePieceDecoder),
}

fn yes() -> bool {
    true
}

fn eow() -> String {
    "</w>".into()
}

/// One pipeline stage: rewrite the list of token strings.
pub trait Decode {
    fn decode_chain(&self, tokens: Vec<String>) -> Vec<String>;
}

fn parse_byte_token(t: &str) -> Option<u8> {
    let hex = t.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

impl Decode for Decoder {
    fn decode_chain(&self, tokens: Vec<String>) -> Vec<String> {
        match self {
            Decoder::ByteLevel { .. } => {
                let mut bytes = Vec::with_capacity(tokens.iter().map(|t| t.len()).sum());
                for t in &tokens {
                    match bytelevel::string_to_bytes(t) {
                        Some(b) => bytes.extend(b),
                        None => bytes.extend_from_slice(t.as_bytes()),
                    }
                }
                vec![String::from_utf8_lossy(&bytes).into_owned()]
            }
            Decoder::Sequence { decoders } => decoders.iter().fold(tokens, |t, d| d.decode_chain(t)),
            Decoder::Bpe { suffix } => {
                let n = tokens.len();
                tokens
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| t.replace(suffix.as_str(), if i + 1 == n { "" } else { " " }))
                    .collect()
            }
            Decoder::Replace { pattern, content } => tokens
                .into_iter()
                .map(|t| {
                    let mut found = Vec::new();
                    if pattern.find_iter(&t, &mut found).is_err() {
                        return t;
                    }
                    let mut out = String::with_capacity(t.len());
                    let mut last = 0;
                    for (s, e) in found {
                        out.push_str(&t[last..s]);
                        out.push_str(content);
                        last = e;
                    }
                    out.push_str(&t[last..]);
                    out
                })
                .collect(),
            Decoder::Strip { content, start, stop } => tokens
                .into_iter()
                .map(|t| {
                    let chars: Vec<char> = t.chars().collect();
                    let lead = chars.iter().take(*start).take_while(|c| *c == content).count();
                    let trail = chars[lead..]
                        .iter()
                        .rev()
                        .take(*stop)
                        .take_while(|c| *c == content)
                        .count();
                    chars[lead..chars.len() - trail].iter().collect()
                })
                .collect(),
            Decoder::Fuse => vec![tokens.concat()],
            Decoder::WordPiece(d) => d.decode_chain(tokens),
            Decoder::Metaspace(d) => d.decode_chain(tokens),
            Decoder::SentencePiece(d) => d.decode_chain(tokens),
            Decoder::ByteFallback => {
                let mut out = Vec::with_capacity(tokens.len());
                let mut pending: Vec<u8> = Vec::new();
                let flush = |pending: &mut Vec<u8>, out: &mut Vec<String>| {
                    if pending.is_empty() {
                        return;
                    }
                    match String::from_utf8(std::mem::take(pending)) {
                        Ok(s) => out.push(s),
                        Err(e) => out.extend(std::iter::repeat_n("\u{FFFD}".to_string(), e.as_bytes().len())),
                    }
                };
                for t in tokens {
                    if let Some(b) = parse_byte_token(&t) {
                        pending.push(b);
                    } else {
                        flush(&mut pending, &mut out);
                        out.push(t);
                    }
                }
                flush(&mut pending, &mut out);
                out
            }
        }
    }
}

impl Decoder {
    pub fn is_plain_byte_level(&self) -> bool {
        matches!(self, Decoder::ByteLevel { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoders_behave_like_tokenizers() {
        let bl = Decoder::ByteLevel {
            add_prefix_space: true,
            trim_offsets: true,
            use_regex: true,
        };
        let world = bytelevel::bytes_to_string(" w\u{f6}rld".as_bytes());
        assert_eq!(
            bl.decode_chain(vec!["Hello".into(), world, "<|x|>".into()]),
            vec!["Hello w\u{f6}rld<|x|>"]
        );
        let bpe = Decoder::Bpe { suffix: "</w>".into() };
        assert_eq!(
            bpe.decode_chain(vec!["lo".into(), "w</w>".into(), "er</w>".into()])
                .concat(),
            "low er"
        );
        let fb = Decoder::ByteFallback;
        assert_eq!(
            fb.decode_chain(vec!["<0xC3>".into(), "<0xA9>".into(), "a".into(), "<0xFF>".into()]),
            vec!["\u{e9}", "a", "\u{FFFD}"]
        );
        let strip = Decoder::Strip {
            content: ' ',
            start: 1,
            stop: 0,
        };
        assert_eq!(strip.decode_chain(vec!["  a ".into()]), vec![" a "]);
    }
}
