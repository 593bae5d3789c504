//! Post-processors: add BOS/EOS or CLS/SEP, set type ids, adjust offsets.

pub mod bert;

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An encoding in the making; offsets are character offsets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Encoding {
    pub ids: Vec<u32>,
    pub type_ids: Vec<u32>,
    pub offsets: Vec<(usize, usize)>,
    pub special_mask: Vec<u8>,
    /// Leading/trailing whitespace of each token, for offset trimming.
    pub spaces: Vec<(u32, u32)>,
    /// Token strings (empty on the ids-only path).
    pub tokens: Vec<String>,
}

impl Encoding {
    pub fn set_type(&mut self, t: u32) {
        self.type_ids.iter_mut().for_each(|x| *x = t);
    }
    pub fn append(&mut self, other: Encoding) {
        self.ids.extend(other.ids);
        self.type_ids.extend(other.type_ids);
        self.offsets.extend(other.offsets);
        self.special_mask.extend(other.special_mask);
        self.spaces.extend(other.spaces);
        self.tokens.extend(other.tokens);
    }
    fn push_special(&mut self, id: u32, type_id: u32, token: &str) {
        self.tokens.push(token.to_string());
        self.ids.push(id);
        self.type_ids.push(type_id);
        self.offsets.push((0, 0));
        self.special_mask.push(1);
        self.spaces.push((0, 0));
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum TemplatePiece {
    SpecialToken { id: String, type_id: u32 },
    Sequence { id: Seq, type_id: u32 },
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum Seq {
    A,
    B,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SpecialTokenDef {
    pub id: String,
    pub ids: Vec<u32>,
    pub tokens: Vec<String>,
}

/// The registry of post-processor components, named as in `tokenizer.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum PostProcessor {
    TemplateProcessing {
        single: Vec<TemplatePiece>,
        pair: Vec<TemplatePiece>,
        special_tokens: BTreeMap<String, SpecialTokenDef>,
    },
    ByteLevel {
        #[serde(default = "yes")]
        add_prefix_space: bool,
        #[serde(default = "yes")]
        trim_offsets: bool,
        #[serde(default = "yes")]
        use_regex: bool,
    },
    Sequence {
        processors: Vec<PostProcessor>,
    },
    BertProcessing(bert::BertProcessing),
    RobertaProcessing(bert::RobertaProcessing),
}

fn yes() -> bool {
    true
}

/// One pipeline stage.
pub trait PostProcess {
    fn process(
        &self,
        a: Encoding,
        b: Option<Encoding>,
        add_special_tokens: bool,
    ) -> Result<(Encoding, Option<Encoding>)>;
}

impl PostProcessor {
    pub fn validate(&self) -> Result<()> {
        match self {
            PostProcessor::TemplateProcessing {
                single,
                pair,
                special_tokens,
            } => {
                if single
                    .iter()
                    .any(|p| matches!(p, TemplatePiece::Sequence { id: Seq::B, .. }))
                {
                    return Err(Error::Format(
                        "post_processor.single: the template uses $B, which a single sequence does not have".into(),
                    ));
                }
                for p in single.iter().chain(pair) {
                    if let TemplatePiece::SpecialToken { id, .. } = p {
                        if !special_tokens.contains_key(id) {
                            return Err(Error::Format(format!(
                                "post_processor.special_tokens: the template uses {id:?}, which is not defined"
                            )));
                        }
                    }
                }
                Ok(())
            }
            PostProcessor::Sequence { processors } => processors.iter().try_for_each(|p| p.validate()),
            PostProcessor::ByteLevel { .. } => Ok(()),
            PostProcessor::BertProcessing(_) | PostProcessor::RobertaProcessing(_) => Ok(()),
        }
    }

    /// Whether the post-processor changes the ids of a single text: it
    /// adds special tokens (when `add`), or its template repeats or drops
    /// the text (a template applies with `add` false too, as in
    /// `tokenizers`; only its special tokens are left out).
    pub fn rewrites_ids(&self, add: bool) -> bool {
        match self {
            PostProcessor::TemplateProcessing { single, .. } => {
                let mut texts = single.iter().filter(|p| matches!(p, TemplatePiece::Sequence { .. }));
                let once = texts.next().is_some() && texts.next().is_none();
                !once || (add && self.added_count(false) > 0)
            }
            PostProcessor::Sequence { processors } => processors.iter().any(|p| p.rewrites_ids(add)),
            PostProcessor::ByteLevel { .. } => false,
            PostProcessor::BertProcessing(_) | PostProcessor::RobertaProcessing(_) => add,
        }
    }

    /// (token, id) of every special token the post-processor can add.
    pub fn special_ids(&self) -> Vec<(String, u32)> {
        match self {
            PostProcessor::TemplateProcessing { special_tokens, .. } => special_tokens
                .values()
                .flat_map(|d| {
                    d.ids
                        .iter()
                        .enumerate()
                        .map(|(k, &id)| (d.tokens.get(k).unwrap_or(&d.id).clone(), id))
                })
                .collect(),
            PostProcessor::Sequence { processors } => processors.iter().flat_map(|p| p.special_ids()).collect(),
            PostProcessor::ByteLevel { .. } => Vec::new(),
            PostProcessor::BertProcessing(p) => vec![p.cls.clone(), p.sep.clone()],
            PostProcessor::RobertaProcessing(p) => vec![p.cls.clone(), p.sep.clone()],
        }
    }

    /// Number of tokens added to a single (or pair) input.
    pub fn added_count(&self, pair: bool) -> usize {
        match self {
            PostProcessor::TemplateProcessing {
                single,
                pair: p,
                special_tokens,
            } => (if pair { p } else { single })
                .iter()
                .map(|x| match x {
                    TemplatePiece::SpecialToken { id, .. } => special_tokens.get(id).map_or(0, |d| d.ids.len()),
                    TemplatePiece::Sequence { .. } => 0,
                })
                .sum(),
            PostProcessor::Sequence { processors } => processors.iter().map(|p| p.added_count(pair)).sum(),
            PostProcessor::ByteLevel { .. } => 0,
            PostProcessor::BertProcessing(p) => p.added_count(pair),
            PostProcessor::RobertaProcessing(p) => p.added_count(pair),
        }
    }
}

fn trim_offsets(e: &mut Encoding, add_prefix_space: bool) {
    for i in 0..e.ids.len() {
        let (mut lead, trail) = e.spaces[i];
        let off = &mut e.offsets[i];
        if lead > 0 {
            let is_first = i == 0 || off.0 == 0;
            if is_first && add_prefix_space && lead == 1 {
                lead = 0;
            }
            off.0 = (off.0 + lead as usize).min(off.1);
        }
        if trail > 0 && off.1 >= trail as usize {
            off.1 = (off.1 - trail as usize).max(off.0);
        }
    }
}

impl PostProcess for PostProcessor {
    fn process(&self, mut a: Encoding, mut b: Option<Encoding>, add: bool) -> Result<(Encoding, Option<Encoding>)> {
        match self {
            PostProcessor::ByteLevel {
                trim_offsets: trim,
                add_prefix_space,
                ..
            } => {
                if *trim {
                    trim_offsets(&mut a, *add_prefix_space);
                    if let Some(b) = b.as_mut() {
                        trim_offsets(b, *add_prefix_space);
                    }
                }
                Ok((a, b))
            }
            PostProcessor::Sequence { processors } => {
                for p in processors {
                    (a, b) = p.process(a, b, add)?;
                }
                Ok((a, b))
            }
            PostProcessor::BertProcessing(p) => Ok(p.process(a, b, add)),
            PostProcessor::RobertaProcessing(p) => Ok(p.process(a, b, add)),
            PostProcessor::TemplateProcessing {
                single,
                pair,
                special_tokens,
            } => {
                let template = if b.is_some() { pair } else { single };
                Ok((apply_template(template, special_tokens, a, b, add), None))
            }
        }
    }
}

/// `template` filled in as `tokenizers` does: each `$A`/`$B` is that text
/// (again, where the template repeats it) with the piece's type id, each
/// special token its ids when `add` (left out otherwise); a text the
/// template does not use is dropped.
fn apply_template(
    template: &[TemplatePiece],
    special_tokens: &BTreeMap<String, SpecialTokenDef>,
    a: Encoding,
    b: Option<Encoding>,
    add: bool,
) -> Encoding {
    let uses = |seq: Seq| {
        template
            .iter()
            .filter(|p| matches!(p, TemplatePiece::Sequence { id, .. } if *id == seq))
            .count()
    };
    let mut left = [uses(Seq::A), uses(Seq::B)];
    let mut texts = [Some(a), b];
    let mut out = Encoding::default();
    for piece in template {
        match piece {
            TemplatePiece::SpecialToken { id, type_id } => {
                if let (true, Some(def)) = (add, special_tokens.get(id)) {
                    for (k, &i) in def.ids.iter().enumerate() {
                        out.push_special(i, *type_id, def.tokens.get(k).map_or("", |t| t.as_str()));
                    }
                }
            }
            TemplatePiece::Sequence { id, type_id } => {
                let k = (*id == Seq::B) as usize;
                left[k] -= 1;
                // (the last use takes the text, an earlier one copies it)
                let text = if left[k] == 0 {
                    texts[k].take()
                } else {
                    texts[k].clone()
                };
                if let Some(mut e) = text {
                    e.set_type(*type_id);
                    out.append(e);
                }
            }
        }
    }
    out
}
