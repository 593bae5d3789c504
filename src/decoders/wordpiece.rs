//! The `WordPiece` decoder: join continuation pieces to the piece before them,
//! put a space before every other piece, and optionally undo BERT's spacing
//! around punctuation and contractions.

use serde::{Deserialize, Serialize};

fn default_prefix() -> String {
    "##".into()
}

fn yes() -> bool {
    true
}

/// `{"type": "WordPiece", "prefix": "##", "cleanup": true}`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct WordPieceDecoder {
    #[serde(default = "default_prefix")]
    pub prefix: String,
    #[serde(default = "yes")]
    pub cleanup: bool,
}

impl Default for WordPieceDecoder {
    fn default() -> Self {
        WordPieceDecoder {
            prefix: default_prefix(),
            cleanup: true,
        }
    }
}

/// The replacements `tokenizers` applies, in its order, to each token.
const CLEANUP: [(&str, &str); 11] = [
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" do not", " don't"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
];

/// Undo the tokenization spaces before punctuation and in contractions.
pub fn cleanup(text: &str) -> String {
    let mut s = text.to_string();
    for (from, to) in CLEANUP {
        if s.contains(from) {
            s = s.replace(from, to);
        }
    }
    s
}

impl WordPieceDecoder {
    pub fn decode_chain(&self, mut tokens: Vec<String>) -> Vec<String> {
        for (i, token) in tokens.iter_mut().enumerate() {
            if i != 0 {
                match token.strip_prefix(self.prefix.as_str()) {
                    Some(rest) => *token = rest.to_string(),
                    None => token.insert(0, ' '),
                }
            }
            if self.cleanup {
                *token = cleanup(token);
            }
        }
        tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_pieces_and_cleans_up() {
        let d = WordPieceDecoder::default();
        let toks = ["##uelo", "ara", "##új", "##o", ",", "it", "'", "s", "don", "'", "t"];
        let out = d.decode_chain(toks.iter().map(|s| s.to_string()).collect());
        assert_eq!(out.concat(), "##uelo araújo, it ' s don ' t");
        let raw = WordPieceDecoder {
            cleanup: false,
            ..WordPieceDecoder::default()
        };
        assert_eq!(
            raw.decode_chain(vec!["a".into(), ".".into(), "##b".into()]).concat(),
            "a .b"
        );
        assert_eq!(cleanup(" do not"), " don't");
    }
}
