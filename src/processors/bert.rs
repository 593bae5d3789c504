//! `BertProcessing` (`[CLS] A [SEP]` / `[CLS] A [SEP] B [SEP]`, with type ids
//! 0 for the first sequence and 1 for the pair) and `RobertaProcessing`
//! (`<s> A </s>` / `<s> A </s></s> B </s>`, every type id 0, optional offset
//! trimming), as `tokenizers` defines them.

use super::Encoding;
use serde::{Deserialize, Serialize};

/// `{"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]}`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct BertProcessing {
    pub sep: (String, u32),
    pub cls: (String, u32),
}

fn yes() -> bool {
    true
}

/// `{"type": "RobertaProcessing", "sep": ..., "cls": ..., "trim_offsets": true,
/// "add_prefix_space": true}`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct RobertaProcessing {
    pub sep: (String, u32),
    pub cls: (String, u32),
    #[serde(default = "yes")]
    pub trim_offsets: bool,
    #[serde(default = "yes")]
    pub add_prefix_space: bool,
}

impl BertProcessing {
    pub fn added_count(&self, pair: bool) -> usize {
        if pair {
            3
        } else {
            2
        }
    }

    pub fn process(&self, a: Encoding, b: Option<Encoding>, add: bool) -> (Encoding, Option<Encoding>) {
        if !add {
            return (a, b);
        }
        let mut out = Encoding::default();
        out.push_special(self.cls.1, 0, &self.cls.0);
        out.append(a);
        out.push_special(self.sep.1, 0, &self.sep.0);
        if let Some(b) = b {
            // the pair keeps its type ids (1)
            out.append(b);
            out.push_special(self.sep.1, 1, &self.sep.0);
        }
        (out, None)
    }
}

/// Leading and trailing spaces (plain, or `Ġ` of byte-level tokens) of a token
/// leave its offsets, as the byte-level post-processor does.
fn trim_offsets(e: &mut Encoding, add_prefix_space: bool) {
    if e.tokens.len() != e.ids.len() {
        return; // the ids-only path: no offsets to trim
    }
    let sp = |c: &char| *c == '\u{120}' || c.is_whitespace();
    for (i, (token, off)) in e.tokens.iter().zip(e.offsets.iter_mut()).enumerate() {
        let mut lead = token.chars().take_while(sp).count();
        let trail = token.chars().rev().take_while(sp).count();
        if lead > 0 {
            let is_first = i == 0 || off.0 == 0;
            if is_first && add_prefix_space && lead == 1 {
                lead = 0;
            }
            off.0 = (off.0 + lead).min(off.1);
        }
        if trail > 0 && off.1 >= trail {
            off.1 = (off.1 - trail).max(off.0);
        }
    }
}

impl RobertaProcessing {
    pub fn added_count(&self, pair: bool) -> usize {
        if pair {
            4
        } else {
            2
        }
    }

    pub fn process(&self, mut a: Encoding, mut b: Option<Encoding>, add: bool) -> (Encoding, Option<Encoding>) {
        if self.trim_offsets {
            trim_offsets(&mut a, self.add_prefix_space);
            if let Some(b) = b.as_mut() {
                trim_offsets(b, self.add_prefix_space);
            }
        }
        // every token has type id 0, the pair's too
        a.set_type(0);
        if let Some(b) = b.as_mut() {
            b.set_type(0);
        }
        if !add {
            return (a, b);
        }
        let mut out = Encoding::default();
        out.push_special(self.cls.1, 0, &self.cls.0);
        out.append(a);
        out.push_special(self.sep.1, 0, &self.sep.0);
        if let Some(b) = b {
            out.push_special(self.sep.1, 0, &self.sep.0);
            out.append(b);
            out.push_special(self.sep.1, 0, &self.sep.0);
        }
        (out, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(ids: &[u32], type_id: u32) -> Encoding {
        Encoding {
            ids: ids.to_vec(),
            type_ids: vec![type_id; ids.len()],
            offsets: (0..ids.len()).map(|i| (i, i + 1)).collect(),
            special_mask: vec![0; ids.len()],
            spaces: vec![(0, 0); ids.len()],
            tokens: ids.iter().map(|i| i.to_string()).collect(),
        }
    }

    #[test]
    fn bert_single_and_pair() {
        let p = BertProcessing {
            sep: ("[SEP]".into(), 102),
            cls: ("[CLS]".into(), 101),
        };
        let (e, _) = p.process(enc(&[7, 8], 0), Some(enc(&[9], 1)), true);
        assert_eq!(e.ids, [101, 7, 8, 102, 9, 102]);
        assert_eq!(e.type_ids, [0, 0, 0, 0, 1, 1]);
        assert_eq!(e.special_mask, [1, 0, 0, 1, 0, 1]);
        assert_eq!(e.offsets[0], (0, 0));
        let (e, b) = p.process(enc(&[7], 0), None, false);
        assert_eq!((e.ids, b), (vec![7], None));
    }

    #[test]
    fn roberta_pair_is_all_type_zero_and_trims() {
        let p = RobertaProcessing {
            sep: ("</s>".into(), 2),
            cls: ("<s>".into(), 0),
            trim_offsets: true,
            add_prefix_space: true,
        };
        let mut a = enc(&[7, 8], 0);
        a.tokens = vec!["\u{120}hi".into(), "\u{120}\u{120}x".into()];
        a.offsets = vec![(0, 3), (3, 6)];
        let (e, _) = p.process(a, Some(enc(&[9], 1)), true);
        assert_eq!(e.ids, [0, 7, 8, 2, 2, 9, 2]);
        assert_eq!(e.type_ids, [0; 7]);
        assert_eq!(e.special_mask, [1, 0, 0, 1, 1, 0, 1]);
        assert_eq!(e.offsets[1..3], [(0, 3), (5, 6)]);
    }
}
