//! Reading a SentencePiece `.model` file (a protobuf `ModelProto`) into the
//! pipeline that encodes exactly as `sentencepiece`: its normalizer, a
//! Unigram or BPE model with the piece types, its decoder, and the control
//! and unknown pieces as special tokens.
//!
//! The bytes are split by `protobuf` (the reader Python's
//! `tokensmith.formats.sentencepiece` uses too) and the fields looked up by
//! name in `sp_schema`; only those the pipeline needs are decoded. A
//! truncated or corrupt file is a `Format` error that names the field and
//! the byte offset.

use super::protobuf::{self, error as err, Field};
use super::sp_schema::{MODEL_PROTO, NORMALIZER_SPEC, SENTENCE_PIECE, TRAINER_SPEC};
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

const MODEL: &str = "ModelProto";

struct NormSpec {
    charsmap: Vec<u8>,
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    escape_whitespaces: bool,
}

impl NormSpec {
    /// A `NormalizerSpec` with no fields: the schema's defaults.
    fn defaults() -> Self {
        NormSpec {
            charsmap: Vec::new(),
            add_dummy_prefix: NORMALIZER_SPEC.default_bool("add_dummy_prefix"),
            remove_extra_whitespaces: NORMALIZER_SPEC.default_bool("remove_extra_whitespaces"),
            escape_whitespaces: NORMALIZER_SPEC.default_bool("escape_whitespaces"),
        }
    }
}

/// The fields of a `.model` the pipeline is built from.
struct ModelFile {
    pieces: Vec<(String, f64, PieceType)>,
    model_type: i64,
    byte_fallback: bool,
    suffix: bool,
    unk_surface: String,
    normalizer: Option<NormSpec>,
    denormalizer: Option<NormSpec>,
}

fn norm_spec(f: &Field, parent: &str) -> Result<NormSpec> {
    let name = f.path(parent);
    let (data, base) = f.message(parent)?;
    let mut s = NormSpec::defaults();
    for g in protobuf::fields(data, base, &name, Some(&NORMALIZER_SPEC)) {
        let g = g?;
        match g.name() {
            Some("precompiled_charsmap") => s.charsmap = g.bytes(&name)?.to_vec(),
            Some("add_dummy_prefix") => s.add_dummy_prefix = g.bool(&name)?,
            Some("remove_extra_whitespaces") => s.remove_extra_whitespaces = g.bool(&name)?,
            Some("escape_whitespaces") => s.escape_whitespaces = g.bool(&name)?,
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

/// One of `ModelProto.pieces`: its text, score and type.
fn read_piece(f: &Field) -> Result<(String, f64, PieceType)> {
    let where_ = f.path(MODEL);
    let (body, base) = f.message(MODEL)?;
    let mut piece = SENTENCE_PIECE.default_str("piece");
    let mut score = 0.0f32;
    let mut ty = SENTENCE_PIECE.default_int("type");
    for g in protobuf::fields(body, base, &where_, Some(&SENTENCE_PIECE)) {
        let g = g?;
        match g.name() {
            Some("piece") => piece = g.string(&where_)?,
            Some("score") => score = g.float(&where_)?,
            Some("type") => ty = g.int(&where_)?,
            _ => {}
        }
    }
    let at = f.start;
    if piece.is_empty() {
        return Err(err(&format!("{where_}.piece"), at, "empty piece"));
    }
    if !score.is_finite() {
        let what = format!("the score of piece {piece:?} is {score}; scores must be finite numbers");
        return Err(err(&format!("{where_}.score"), at, &what));
    }
    let ty = PieceType::from_i64(ty)
        .ok_or_else(|| err(&format!("{where_}.type"), at, &format!("unknown piece type {ty}")))?;
    Ok((piece.to_string(), score as f64, ty))
}

/// The `TrainerSpec` fields the pipeline needs, into `m`.
fn read_trainer_spec(f: &Field, m: &mut ModelFile) -> Result<()> {
    let name = f.path(MODEL);
    let (body, base) = f.message(MODEL)?;
    for g in protobuf::fields(body, base, &name, Some(&TRAINER_SPEC)) {
        let g = g?;
        match g.name() {
            Some("model_type") => m.model_type = g.int(&name)?,
            Some("treat_whitespace_as_suffix") => m.suffix = g.bool(&name)?,
            Some("byte_fallback") => m.byte_fallback = g.bool(&name)?,
            Some("unk_surface") => m.unk_surface = g.string(&name)?.to_string(),
            _ => {}
        }
    }
    Ok(())
}

fn read_model_file(data: &[u8]) -> Result<ModelFile> {
    if data.is_empty() {
        return Err(Error::Format("the .model file is empty".into()));
    }
    let mut m = ModelFile {
        pieces: Vec::new(),
        model_type: TRAINER_SPEC.default_int("model_type"),
        byte_fallback: TRAINER_SPEC.default_bool("byte_fallback"),
        suffix: TRAINER_SPEC.default_bool("treat_whitespace_as_suffix"),
        unk_surface: TRAINER_SPEC.default_str("unk_surface").to_string(),
        normalizer: None,
        denormalizer: None,
    };
    for f in protobuf::fields(data, 0, MODEL, Some(&MODEL_PROTO)) {
        let f = f?;
        match f.name() {
            Some("pieces") => m.pieces.push(read_piece(&f)?),
            Some("trainer_spec") => read_trainer_spec(&f, &mut m)?,
            Some("normalizer_spec") => m.normalizer = Some(norm_spec(&f, MODEL)?),
            Some("denormalizer_spec") => m.denormalizer = Some(norm_spec(&f, MODEL)?),
            _ => {}
        }
    }
    if m.pieces.is_empty() {
        return Err(Error::Format(
            "ModelProto.pieces: no pieces (this is not a SentencePiece model, or it is truncated)".into(),
        ));
    }
    Ok(m)
}

fn build_model(m: &ModelFile) -> Result<ModelKind> {
    let pieces = &m.pieces;
    Ok(match m.model_type {
        1 => {
            let vocab = pieces.iter().map(|(p, s, _)| (p.clone(), *s)).collect();
            let types = pieces.iter().map(|(_, _, t)| *t).collect();
            ModelKind::Unigram(Unigram::with_piece_types(vocab, types, m.byte_fallback)?)
        }
        2 => ModelKind::SentencePieceBpe(SentencePieceBpe::new(pieces.clone(), m.byte_fallback)?),
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
    })
}

fn pieces_of(m: &ModelFile, ty: PieceType) -> impl Iterator<Item = &String> {
    m.pieces.iter().filter(move |p| p.2 == ty).map(|p| &p.0)
}

/// A tokenizer from the bytes of a `.model` file.
pub fn tokenizer_from_model_proto(data: &[u8]) -> Result<Tokenizer> {
    let mut m = read_model_file(data)?;
    let user: Vec<String> = pieces_of(&m, PieceType::UserDefined).cloned().collect();
    let norm = m.normalizer.take().unwrap_or_else(NormSpec::defaults);
    let spec = spec_of(&norm, m.suffix, user, "ModelProto.normalizer_spec")?;
    let denorm = match m.denormalizer.take() {
        Some(d) if !d.charsmap.is_empty() => Some(spec_of(&d, false, Vec::new(), "ModelProto.denormalizer_spec")?),
        _ => None,
    };
    let model = build_model(&m)?;
    let decoder = SentencePieceDecoder {
        add_dummy_prefix: norm.add_dummy_prefix,
        remove_extra_whitespaces: norm.remove_extra_whitespaces,
        byte_fallback: m.byte_fallback,
        unk_piece: pieces_of(&m, PieceType::Unknown)
            .next()
            .cloned()
            .unwrap_or_else(|| "<unk>".into()),
        unk_surface: m.unk_surface.clone(),
        control_pieces: pieces_of(&m, PieceType::Control).cloned().collect(),
        denormalizer: denorm,
    };
    let added = m
        .pieces
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

    #[test]
    fn trainer_spec_fields_are_named_by_the_schema() {
        let mut m = tiny();
        field_bytes(2, &[0x18], &mut m); // trainer_spec { model_type: <cut> }
        let at = m.len() - 1;
        let e = tokenizer_from_model_proto(&m).err().map(|e| e.to_string());
        let want = format!(
            "ModelProto.trainer_spec.model_type at byte {}: truncated varint",
            at + 1
        );
        assert!(e.as_deref().is_some_and(|m| m.starts_with(&want)), "{e:?}");
        let mut m = tiny();
        field_bytes(2, &[0x18, 0x02], &mut m); // model_type: BPE
        let t = tokenizer_from_model_proto(&m).unwrap();
        assert_eq!(t.model.type_name(), "BPE");
    }
}
