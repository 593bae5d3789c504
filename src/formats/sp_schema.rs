//! The schema of SentencePiece's `.model` files (`sentencepiece_model.proto`,
//! proto2): each message's fields with their number, kind, repetition and
//! default. The one description of the format: `sp_model` looks the fields
//! it reads up by name here, and Python's `tokensmith.formats.sentencepiece`
//! builds its message classes from it (`_core.sentencepiece_schema`).
//!
//! Messages nested in the `.proto` (`ModelProto.SentencePiece`,
//! `SelfTestData.Sample`) go by their own names. Fields are listed as the
//! `.proto` lists them; enums are their numbers (`SentencePiece.type`:
//! NORMAL = 1, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 6;
//! `TrainerSpec.model_type`: UNIGRAM = 1, BPE, WORD, CHAR = 4).

use super::protobuf::{DefaultValue as D, FieldDesc, Kind as K, MessageDesc};

const fn field(name: &'static str, number: u32, kind: K, default: D) -> FieldDesc {
    FieldDesc {
        name,
        number,
        kind,
        repeated: false,
        default,
    }
}

const fn repeated(name: &'static str, number: u32, kind: K) -> FieldDesc {
    FieldDesc {
        name,
        number,
        kind,
        repeated: true,
        default: D::None,
    }
}

pub const SENTENCE_PIECE: MessageDesc = MessageDesc {
    name: "SentencePiece",
    fields: &[
        field("piece", 1, K::String, D::Str("")),
        field("score", 2, K::Float, D::Float(0.0)),
        field("type", 3, K::Enum, D::Int(1)), // NORMAL
    ],
};

pub const TRAINER_SPEC: MessageDesc = MessageDesc {
    name: "TrainerSpec",
    fields: &[
        repeated("input", 1, K::String),
        field("input_format", 7, K::String, D::Str("")),
        field("model_prefix", 2, K::String, D::Str("")),
        field("model_type", 3, K::Enum, D::Int(1)), // UNIGRAM
        field("vocab_size", 4, K::Int32, D::Int(8000)),
        repeated("accept_language", 5, K::String),
        field("self_test_sample_size", 6, K::Int32, D::Int(0)),
        field("enable_differential_privacy", 50, K::Bool, D::Bool(false)),
        field("differential_privacy_noise_level", 51, K::Float, D::Float(0.0)),
        field("differential_privacy_clipping_threshold", 52, K::Uint64, D::Int(0)),
        field("character_coverage", 10, K::Float, D::Float(0.9995)),
        field("input_sentence_size", 11, K::Uint64, D::Int(0)),
        field("shuffle_input_sentence", 19, K::Bool, D::Bool(true)),
        field("mining_sentence_size", 12, K::Int32, D::Int(0)),
        field("training_sentence_size", 13, K::Int32, D::Int(0)),
        field("seed_sentencepiece_size", 14, K::Int32, D::Int(1_000_000)),
        field("shrinking_factor", 15, K::Float, D::Float(0.75)),
        field("max_sentence_length", 18, K::Int32, D::Int(4192)),
        field("num_threads", 16, K::Int32, D::Int(16)),
        field("num_sub_iterations", 17, K::Int32, D::Int(2)),
        field("max_sentencepiece_length", 20, K::Int32, D::Int(16)),
        field("split_by_unicode_script", 21, K::Bool, D::Bool(true)),
        field("split_by_number", 23, K::Bool, D::Bool(true)),
        field("split_by_whitespace", 22, K::Bool, D::Bool(true)),
        field("treat_whitespace_as_suffix", 24, K::Bool, D::Bool(false)),
        field("allow_whitespace_only_pieces", 26, K::Bool, D::Bool(false)),
        field("split_digits", 25, K::Bool, D::Bool(false)),
        field("pretokenization_delimiter", 53, K::String, D::Str("")),
        repeated("control_symbols", 30, K::String),
        repeated("user_defined_symbols", 31, K::String),
        field("required_chars", 36, K::String, D::Str("")),
        field("byte_fallback", 35, K::Bool, D::Bool(false)),
        field("vocabulary_output_piece_score", 32, K::Bool, D::Bool(true)),
        field("hard_vocab_limit", 33, K::Bool, D::Bool(true)),
        field("use_all_vocab", 34, K::Bool, D::Bool(false)),
        field("unk_id", 40, K::Int32, D::Int(0)),
        field("bos_id", 41, K::Int32, D::Int(1)),
        field("eos_id", 42, K::Int32, D::Int(2)),
        field("pad_id", 43, K::Int32, D::Int(-1)),
        field("unk_piece", 45, K::String, D::Str("<unk>")),
        field("bos_piece", 46, K::String, D::Str("<s>")),
        field("eos_piece", 47, K::String, D::Str("</s>")),
        field("pad_piece", 48, K::String, D::Str("<pad>")),
        field("unk_surface", 44, K::String, D::Str(" \u{2047} ")),
        field("train_extremely_large_corpus", 49, K::Bool, D::Bool(false)),
        field("seed_sentencepieces_file", 54, K::String, D::Str("")),
    ],
};

pub const NORMALIZER_SPEC: MessageDesc = MessageDesc {
    name: "NormalizerSpec",
    fields: &[
        field("name", 1, K::String, D::Str("")),
        field("precompiled_charsmap", 2, K::Bytes, D::Bytes(b"")),
        field("add_dummy_prefix", 3, K::Bool, D::Bool(true)),
        field("remove_extra_whitespaces", 4, K::Bool, D::Bool(true)),
        field("escape_whitespaces", 5, K::Bool, D::Bool(true)),
        field("normalization_rule_tsv", 6, K::String, D::Str("")),
    ],
};

pub const SAMPLE: MessageDesc = MessageDesc {
    name: "Sample",
    fields: &[
        field("input", 1, K::String, D::Str("")),
        field("expected", 2, K::String, D::Str("")),
    ],
};

pub const SELF_TEST_DATA: MessageDesc = MessageDesc {
    name: "SelfTestData",
    fields: &[repeated("samples", 1, K::Message("Sample"))],
};

pub const MODEL_PROTO: MessageDesc = MessageDesc {
    name: "ModelProto",
    fields: &[
        repeated("pieces", 1, K::Message("SentencePiece")),
        field("trainer_spec", 2, K::Message("TrainerSpec"), D::None),
        field("normalizer_spec", 3, K::Message("NormalizerSpec"), D::None),
        field("self_test_data", 4, K::Message("SelfTestData"), D::None),
        field("denormalizer_spec", 5, K::Message("NormalizerSpec"), D::None),
    ],
};

/// Every message of the schema.
pub const MESSAGES: &[&MessageDesc] = &[
    &SENTENCE_PIECE,
    &TRAINER_SPEC,
    &NORMALIZER_SPEC,
    &SAMPLE,
    &SELF_TEST_DATA,
    &MODEL_PROTO,
];

/// The message named `name`.
pub fn message(name: &str) -> Option<&'static MessageDesc> {
    MESSAGES.iter().copied().find(|m| m.name == name)
}

/// The message at a path of fields from a message (`ModelProto.pieces[3]`
/// is a `SentencePiece`), or `None` when the path leaves the schema.
pub fn message_at(path: &str) -> Option<&'static MessageDesc> {
    let mut parts = path.split('.');
    let mut at = message(parts.next()?)?;
    for part in parts {
        let name = part.split_once('[').map_or(part, |(name, _)| name);
        match at.field(name)?.kind {
            K::Message(next) => at = message(next)?,
            _ => return None,
        }
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_fields_name_messages_of_the_schema() {
        for m in MESSAGES {
            for f in m.fields {
                if let K::Message(name) = f.kind {
                    assert!(message(name).is_some(), "{}.{} is a {name}", m.name, f.name);
                    assert_eq!(f.default, D::None);
                }
                if f.repeated {
                    assert_eq!(f.default, D::None);
                }
            }
            let mut numbers: Vec<u32> = m.fields.iter().map(|f| f.number).collect();
            numbers.sort_unstable();
            numbers.dedup();
            assert_eq!(numbers.len(), m.fields.len(), "{}: a number twice", m.name);
        }
    }

    #[test]
    fn paths_lead_to_messages() {
        assert_eq!(message_at("ModelProto").map(|m| m.name), Some("ModelProto"));
        assert_eq!(
            message_at("ModelProto.pieces[12]").map(|m| m.name),
            Some("SentencePiece")
        );
        assert_eq!(
            message_at("ModelProto.denormalizer_spec").map(|m| m.name),
            Some("NormalizerSpec")
        );
        assert_eq!(
            message_at("ModelProto.self_test_data.samples[0]").map(|m| m.name),
            Some("Sample")
        );
        assert_eq!(message_at("TrainerSpec").map(|m| m.name), Some("TrainerSpec"));
        for off in [
            "",
            "Nope",
            "ModelProto.nope",
            "ModelProto.pieces[1].piece",
            "ModelProto.<field 9>",
        ] {
            assert!(message_at(off).is_none(), "{off}");
        }
    }

    #[test]
    fn defaults_read_as_sentencepiece_has_them() {
        assert!(NORMALIZER_SPEC.default_bool("add_dummy_prefix"));
        assert!(!TRAINER_SPEC.default_bool("byte_fallback"));
        assert_eq!(TRAINER_SPEC.default_int("pad_id"), -1);
        assert_eq!(TRAINER_SPEC.default_str("unk_surface"), " \u{2047} ");
        assert_eq!(
            TRAINER_SPEC.field("character_coverage").map(|f| f.default),
            Some(D::Float(0.9995))
        );
    }
}
