//! Reading a SentencePiece `.model` file (a protobuf `ModelProto`) into the
//! pipeline that encodes exactly as `sentencepiece`: its normalizer, a
//! Unigram or BPE model with the piece types, its decoder, and the control
//! and unknown pieces as special tokens.
//!
//! A small protobuf reader of our own: only the fields the pipeline needs
//! are decoded, the rest skipped; a truncated or corrupt file is a
//! `Format` error that names the field and the byte offset. (Python's
//! `tokensmith.formats.sentencepiece` reads and writes the whole message.)

use crate::added_tokens::AddedToken;
use crate::decoders::sentencepiece::SentencePieceDecoder;
use crate::decoders::Decoder;
use crate::error::{Error, Result};
use crate::models::unigram::PieceType;
use crate::models::{ModelKind, SentencePieceBpe, Unigram};
use crate::normalizers::precompiled::Charsmap;
use crate::normalizers::sentencepiece::{SentencePieceNormalizer, SentencePieceSpec};
use crate::normalizers::Normalizer;
use crate::tokenizer::Tokenizer;

enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8], usize),
    Fixed32([u8; 4]),
    Fixed64,
}

fn err(where_: &str, offset: usize, what: &str) -> Error {
    Error::Format(format!("{where_} at byte {offset}: {what}"))
}

fn read_varint(data: &[u8], pos: &mut usize, base: usize, where_: &str) -> Result<u64> {
    let start = *pos;
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let Some(&b) = data.get(*pos) else {
            return Err(err(
                where_,
                base + start,
                "truncated varint (the file is cut short or corrupt)",
            ));
        };
        *pos += 1;
        if shift < 64 {
            v |= ((b & 0x7F) as u64) << shift;
        }
        if b < 0x80 {
            return Ok(v);
        }
        shift += 7;
        if shift >= 70 {
            return Err(err(where_, base + start, "varint longer than 10 bytes (corrupt file)"));
        }
    }
}

const MODEL_FIELDS: &[(u32, &str)] = &[
    (1, "pieces"),
    (2, "trainer_spec"),
    (3, "normalizer_spec"),
    (4, "self_test_data"),
    (5, "denormalizer_spec"),
];
const PIECE_FIELDS: &[(u32, &str)] = &[(1, "piece"), (2, "score"), (3, "type")];
const NORMALIZER_FIELDS: &[(u32, &str)] = &[
    (1, "name"),
    (2, "precompiled_charsmap"),
    (3, "add_dummy_prefix"),
    (4, "remove_extra_whitespaces"),
    (5, "escape_whitespaces"),
    (6, "normalization_rule_tsv"),
];

/// Every field of a message: `(number, value, offset of its value)`.
/// `names` name the fields in error messages (`pieces` counts its items).
fn fields<'a>(
    data: &'a [u8],
    base: usize,
    message: &str,
    names: &[(u32, &str)],
) -> Result<Vec<(u32, Wire<'a>, usize)>> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    let mut pieces = 0usize;
    while pos < data.len() {
        let start = pos;
        let key = read_varint(data, &mut pos, base, message)?;
        let number = (key >> 3) as u32;
        if number == 0 {
            return Err(err(message, base + start, "field number 0 (corrupt file)"));
        }
        let where_ = match names.iter().find(|(n, _)| *n == number) {
            Some((_, "pieces")) => format!("{message}.pieces[{pieces}]"),
            Some((_, name)) => format!("{message}.{name}"),
            None => format!("{message}.<field {number}>"),
        };
        if names == MODEL_FIELDS && number == 1 {
            pieces += 1;
        }
        let value = match key & 7 {
            0 => Wire::Varint(read_varint(data, &mut pos, base, &where_)?),
            1 => {
                if pos + 8 > data.len() {
                    return Err(err(&where_, base + pos, "truncated 64-bit value"));
                }
                pos += 8;
                Wire::Fixed64
            }
            2 => {
                let n = read_varint(data, &mut pos, base, &where_)?;
                let n = usize::try_from(n).unwrap_or(usize::MAX);
                if n > data.len() - pos {
                    return Err(err(
                        &where_,
                        base + pos,
                        &format!(
                            "length {n} runs past the end ({} bytes left; the file is truncated or corrupt)",
                            data.len() - pos
                        ),
                    ));
                }
                let v = Wire::Bytes(&data[pos..pos + n], base + pos);
                pos += n;
                v
            }
            5 => {
                if pos + 4 > data.len() {
                    return Err(err(&where_, base + pos, "truncated 32-bit value"));
                }
                let v = Wire::Fixed32([data[pos], data[pos + 1], data[pos + 2], data[pos + 3]]);
                pos += 4;
                v
            }
            w => {
                return Err(err(
                    &where_,
                    base + start,
                    &format!("unsupported wire type {w} (corrupt file)"),
                ))
            }
        };
        out.push((number, value, base + start));
    }
    Ok(out)
}

fn as_str<'a>(w: &Wire<'a>, where_: &str, at: usize) -> Result<&'a str> {
    match w {
        Wire::Bytes(b, off) => {
            std::str::from_utf8(b).map_err(|e| err(where_, off + e.valid_up_to(), "not valid UTF-8"))
        }
        _ => Err(err(where_, at, "expected a string")),
    }
}

fn as_bytes<'a>(w: &Wire<'a>, where_: &str, at: usize) -> Result<&'a [u8]> {
    match w {
        Wire::Bytes(b, _) => Ok(b),
        _ => Err(err(where_, at, "expected bytes")),
    }
}

fn as_int(w: &Wire, where_: &str, at: usize) -> Result<i64> {
    match w {
        Wire::Varint(v) => Ok(*v as i64),
        _ => Err(err(where_, at, "expected an integer")),
    }
}

fn as_f32(w: &Wire, where_: &str, at: usize) -> Result<f32> {
    match w {
        Wire::Fixed32(b) => Ok(f32::from_le_bytes(*b)),
        _ => Err(err(where_, at, "expected a 32-bit float")),
    }
}

struct NormSpec {
    charsmap: Vec<u8>,
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    escape_whitespaces: bool,
}

fn norm_spec(data: &[u8], base: usize, name: &str) -> Result<NormSpec> {
    let mut s = NormSpec {
        charsmap: Vec::new(),
        add_dummy_prefix: true,
        remove_extra_whitespaces: true,
        escape_whitespaces: true,
    };
    for (n, w, at) in fields(data, base, name, NORMALIZER_FIELDS)? {
        match n {
            2 => s.charsmap = as_bytes(&w, &format!("{name}.precompiled_charsmap"), at)?.to_vec(),
            3 => s.add_dummy_prefix = as_int(&w, &format!("{name}.add_dummy_prefix"), at)? != 0,
            4 => s.remove_extra_whitespaces = as_int(&w, &format!("{name}.remove_extra_whitespaces"), at)? != 0,
            5 => s.escape_whitespaces = as_int(&w, &format!("{name}.escape_whitespaces"), at)? != 0,
            _ => {}
        }
    }
    Ok(s)
}

fn spec_of(n: &NormSpec, treat_whitespace_as_suffix: bool, user: Vec<String>, name: &str) -> Result<SentencePieceSpec> {
    let precompiled_charsmap = if n.charsmap.is_empty() {
        None
    } else {
        Some(Charsmap::from_bytes(&n.charsmap).map_err(|e| Error::Format(format!("{name}.{e}")))?)
    };
    Ok(SentencePieceSpec {
        precompiled_charsmap,
        add_dummy_prefix: n.add_dummy_prefix,
        remove_extra_whitespaces: n.remove_extra_whitespaces,
        escape_whitespaces: n.escape_whitespaces,
        treat_whitespace_as_suffix,
        user_defined_symbols: user,
    })
}

/// A tokenizer from the bytes of a `.model` file.
pub fn tokenizer_from_model_proto(data: &[u8]) -> Result<Tokenizer> {
    if data.is_empty() {
        return Err(Error::Format("the .model file is empty".into()));
    }
    let mut pieces: Vec<(String, f64, PieceType)> = Vec::new();
    let mut model_type = 1i64;
    let mut byte_fallback = false;
    let mut suffix = false;
    let mut unk_surface: Option<String> = None;
    let mut normalizer: Option<NormSpec> = None;
    let mut denormalizer: Option<NormSpec> = None;
    for (n, w, at) in fields(data, 0, "ModelProto", MODEL_FIELDS)? {
        match n {
            1 => {
                let i = pieces.len();
                let where_ = format!("ModelProto.pieces[{i}]");
                let Wire::Bytes(body, off) = w else {
                    return Err(err(&where_, at, "expected a message"));
                };
                let (mut piece, mut score, mut ty) = (String::new(), 0.0f32, 1i64);
                for (m, v, at2) in fields(body, off, &where_, PIECE_FIELDS)? {
                    match m {
                        1 => piece = as_str(&v, &format!("{where_}.piece"), at2)?.to_string(),
                        2 => score = as_f32(&v, &format!("{where_}.score"), at2)?,
                        3 => ty = as_int(&v, &format!("{where_}.type"), at2)?,
                        _ => {}
                    }
                }
                if piece.is_empty() {
                    return Err(err(&format!("{where_}.piece"), at, "empty piece"));
                }
                if !score.is_finite() {
                    return Err(err(
                        &format!("{where_}.score"),
                        at,
                        &format!("the score of piece {piece:?} is {score}; scores must be finite numbers"),
                    ));
                }
                let ty = PieceType::from_i64(ty)
                    .ok_or_else(|| err(&format!("{where_}.type"), at, &format!("unknown piece type {ty}")))?;
                pieces.push((piece, score as f64, ty));
            }
            2 => {
                let Wire::Bytes(body, off) = w else {
                    return Err(err("ModelProto.trainer_spec", at, "expected a message"));
                };
                for (m, v, at2) in fields(body, off, "ModelProto.trainer_spec", &[])? {
                    let f = |name: &str| format!("ModelProto.trainer_spec.{name}");
                    match m {
                        3 => model_type = as_int(&v, &f("model_type"), at2)?,
                        24 => suffix = as_int(&v, &f("treat_whitespace_as_suffix"), at2)? != 0,
                        35 => byte_fallback = as_int(&v, &f("byte_fallback"), at2)? != 0,
                        44 => unk_surface = Some(as_str(&v, &f("unk_surface"), at2)?.to_string()),
                        _ => {}
                    }
                }
            }
            3 | 5 => {
                let name = if n == 3 {
                    "ModelProto.normalizer_spec"
                } else {
                    "ModelProto.denormalizer_spec"
                };
                let Wire::Bytes(body, off) = w else {
                    return Err(err(name, at, "expected a message"));
                };
                let spec = norm_spec(body, off, name)?;
                if n == 3 {
                    normalizer = Some(spec);
                } else {
                    denormalizer = Some(spec);
                }
            }
            _ => {}
        }
    }
    if pieces.is_empty() {
        return Err(Error::Format(
            "ModelProto.pieces: no pieces (this is not a SentencePiece model, or it is truncated)".into(),
        ));
    }
    let user: Vec<String> = pieces
        .iter()
        .filter(|p| p.2 == PieceType::UserDefined)
        .map(|p| p.0.clone())
        .collect();
    let norm = normalizer.unwrap_or(NormSpec {
        charsmap: Vec::new(),
        add_dummy_prefix: true,
        remove_extra_whitespaces: true,
        escape_whitespaces: true,
    });
    let (add_dummy_prefix, remove_extra_whitespaces) = (norm.add_dummy_prefix, norm.remove_extra_whitespaces);
    let spec = spec_of(&norm, suffix, user, "ModelProto.normalizer_spec")?;
    let denorm = match denormalizer {
        Some(d) if !d.charsmap.is_empty() => Some(spec_of(&d, false, Vec::new(), "ModelProto.denormalizer_spec")?),
        _ => None,
    };
    let model = match model_type {
        1 => {
            let vocab = pieces.iter().map(|(p, s, _)| (p.clone(), *s)).collect();
            let types = pieces.iter().map(|(_, _, t)| *t).collect();
            ModelKind::Unigram(Unigram::with_piece_types(vocab, types, byte_fallback)?)
        }
        2 => ModelKind::SentencePieceBpe(SentencePieceBpe::new(pieces.clone(), byte_fallback)?),
        other => {
            let name = match other {
                3 => "WORD".to_string(),
                4 => "CHAR".to_string(),
                o => o.to_string(),
            };
            return Err(Error::Unsupported(format!(
                "ModelProto.trainer_spec.model_type: {name} models are not supported; tokensmith reads UNIGRAM and BPE SentencePiece models"
            )));
        }
    };
    let unk_piece = pieces
        .iter()
        .find(|p| p.2 == PieceType::Unknown)
        .map(|p| p.0.clone())
        .unwrap_or_else(|| "<unk>".into());
    let decoder = SentencePieceDecoder {
        add_dummy_prefix,
        remove_extra_whitespaces,
        byte_fallback,
        unk_piece,
        unk_surface: unk_surface.unwrap_or_else(|| " \u{2047} ".into()),
        control_pieces: pieces
            .iter()
            .filter(|p| p.2 == PieceType::Control)
            .map(|p| p.0.clone())
            .collect(),
        denormalizer: denorm,
    };
    let added = pieces
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.2, PieceType::Control | PieceType::Unknown))
        .map(|(i, p)| AddedToken {
            id: i as u32,
            content: p.0.clone(),
            single_word: false,
            lstrip: false,
            rstrip: false,
            normalized: false,
            special: true,
        })
        .collect();
    Tokenizer::new(
        Some(Normalizer::SentencePiece(SentencePieceNormalizer::from(spec))),
        None,
        model,
        None,
        Some(Decoder::SentencePiece(decoder)),
        added,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7F) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    fn field_bytes(n: u32, body: &[u8], out: &mut Vec<u8>) {
        varint(((n as u64) << 3) | 2, out);
        varint(body.len() as u64, out);
        out.extend_from_slice(body);
    }

    fn piece(p: &str, score: f32, ty: u64) -> Vec<u8> {
        let mut b = Vec::new();
        field_bytes(1, p.as_bytes(), &mut b);
        b.push((2 << 3) | 5);
        b.extend_from_slice(&score.to_le_bytes());
        varint(3 << 3, &mut b);
        varint(ty, &mut b);
        b
    }

    fn tiny() -> Vec<u8> {
        let mut m = Vec::new();
        for (p, s, t) in [
            ("<unk>", 0.0, 2),
            ("<s>", 0.0, 3),
            ("\u{2581}a", -1.0, 1),
            ("b", -2.0, 1),
            ("a", -3.0, 1),
        ] {
            field_bytes(1, &piece(p, s, t), &mut m);
        }
        m
    }

    #[test]
    fn reads_a_minimal_unigram_model() {
        use crate::added_tokens::Allowed;
        let t = tokenizer_from_model_proto(&tiny()).unwrap();
        assert_eq!(t.encode("  ab ", &Allowed::None, None, false).unwrap(), [2, 3]);
        assert_eq!(t.encode("a b", &Allowed::None, None, false).unwrap(), [2, 0, 3]);
        assert_eq!(t.decode(&[2, 3], false).unwrap(), "ab");
    }

    #[test]
    fn truncated_and_corrupt_files_name_the_field() {
        let data = tiny();
        for cut in [1, 5, 20, data.len() - 1] {
            let e = tokenizer_from_model_proto(&data[..cut]).err().map(|e| e.to_string());
            assert!(e.as_deref().is_some_and(|m| m.contains("ModelProto")), "{cut}: {e:?}");
        }
        let e = tokenizer_from_model_proto(&[0x0F, 1]).err().map(|e| e.to_string());
        assert!(e.as_deref().is_some_and(|m| m.contains("wire type")), "{e:?}");
        assert!(tokenizer_from_model_proto(b"").is_err());
    }
}
