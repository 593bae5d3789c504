"""GGUF vocabularies (llama.cpp): the ``tokenizer.ggml.*`` metadata of a model file.

``ts.load("model.gguf")`` reads the metadata (never the weights, see ``_gguf_io``) and
builds the tokenizer llama.cpp builds from it, as a pipeline of ``tokenizer.json``
components, so that ids equal those of ``llama_tokenize(text, add_special,
parse_special)``: ``add_special_tokens`` is ``add_special``, and a control token
written in the text is parsed as the token only when ``allowed_special`` names it
(``parse_special``). The model types:

``llama`` (SentencePiece BPE)
    Every text fragment between special tokens gets a leading ``▁`` (when
    ``tokenizer.ggml.add_space_prefix``, default on), spaces become ``▁``, then any two
    neighbours that form a token merge, highest score first, leftmost among equals;
    what no token covers becomes its bytes ``<0xXX>``. BOS first by default.
``gpt2`` (byte-level BPE)
    The text is split by the regexes llama.cpp uses for the named pre-tokenizer
    (``tokenizer.ggml.pre``; :data:`PRE_TOKENIZERS` lists those tokensmith has), then
    merged by rank. ``llama3``-style names skip the merges for words that are tokens.
``bert`` (WordPiece)
    BERT's cleaning, lower-casing and accent stripping (``tokenizer.ggml.normalizer.*``,
    on by default), splits at whitespace, punctuation and CJK characters, longest match
    first; the file's ``▁word`` / ``piece`` tokens are BERT's ``word`` / ``##piece``.
    ``[CLS] … [SEP]`` around the text.
``t5`` (Unigram)
    The SentencePiece normalizer with the file's ``precompiled_charsmap``, then the
    best segmentation by score, summed in double precision; EOS last by default.

Control and unknown tokens are special tokens; user-defined tokens are matched in any
text, as llama.cpp does. Other model types and pre-tokenizers are refused by name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import patterns
from ..errors import TokenizerFormatError, UnsupportedComponentError
from ._gguf_io import read_metadata

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer

__all__ = ["PRE_TOKENIZERS", "load", "from_metadata", "tokenizer_json"]

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
SPACE = "\u2581"

_QWEN2 = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"""
    r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
# llama.cpp writes the case classes of the o200k and tekken regexes as "a letter that
# is not a-z" and "a letter that is not A-Z": marks (\p{M}) are not part of a word,
# and every non-ASCII letter counts as both cases
_NOT_LOWER, _NOT_UPPER = r"[\p{L}&&[^a-z]]", r"[\p{L}&&[^A-Z]]"
_CONTRACTION = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"


def _words(contraction: str) -> str:
    lead = r"[^\r\n\p{L}\p{N}]?"
    return (f"{lead}{_NOT_LOWER}*{_NOT_UPPER}+{contraction}|"
            f"{lead}{_NOT_LOWER}+{_NOT_UPPER}*{contraction}|")


_GPT4O = (_words(_CONTRACTION + "?") + r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|"
          r"\s*[\r\n]+|\s+(?!\S)|\s+")
_TEKKEN = _words("") + r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
_DEEPSEEK3 = (
    r"\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|"""
    r""" ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
)
_DEFAULT = (r"[\p{P}\$\+<=>\^~\|]+", patterns.GPT2, r"\p{N}+", "[0-9][0-9][0-9]")

# (regexes applied in turn, each splitting what the previous left; ignore_merges;
# add BOS by default)
_Pre = tuple[tuple[str, ...], bool, bool]


def _family(names: str, regexes: tuple[str, ...], ignore_merges: bool = False,
            add_bos: bool = False) -> dict[str, _Pre]:
    return {name: (regexes, ignore_merges, add_bos) for name in names.split()}


#: ``tokenizer.ggml.pre`` names tokensmith reads → (regexes, ignore_merges, add_bos),
#: as llama.cpp defines them.
PRE_TOKENIZERS: dict[str, _Pre] = {
    **_family("default", _DEFAULT),
    **_family("gpt-2 phi-2 jina-es jina-de gigachat jina-v2-es jina-v2-de a.x-4.0 mellum "
              "modern-bert exaone4 mpt olmo jais trillion granite-docling jina-v1-en "
              "jina-v2-code roberta-bpe", (patterns.GPT2,)),
    **_family("llama3 llama-v3 llama-bpe falcon3 falcon-h1 pixtral midm-2.0 lfm2 "
              "jina-v5-nano", (patterns.CL100K,), ignore_merges=True, add_bos=True),
    **_family("dbrx smaug-bpe glm4 chatglm-bpe", (patterns.CL100K,)),
    **_family("qwen2 deepseek-r1-qwen kormo f2llmv2 megrez stablelm2 hunyuan solar-open "
              "grok-2", (_QWEN2,)),
    **_family("gpt-4o llama4 kanana2 talkie minimax-m2", (_GPT4O,)),
    **_family("tekken", (_TEKKEN,), ignore_merges=True, add_bos=True),
    **_family("deepseek-v3 hunyuan-dense joyai-llm hy_v4", _DEEPSEEK3),
    **_family("starcoder refact command-r smollm codeshell exaone minerva-7b mellum2",
              (r"\p{N}", patterns.GPT2)),
}

# token texts llama.cpp makes control tokens whatever their type (end-of-generation
# markers), and the gpt-oss tokens it makes user-defined
_EOG_TEXTS = frozenset((
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
    "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>",
    "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>",
    "<|tool_response>", "<\uff5cend\u2581of\u2581sentence\uff5c>", "[e~[",
))
_ALWAYS_PARSED = frozenset(("<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"))


def load(path: str | os.PathLike[str]) -> Tokenizer:
    """The tokenizer of the GGUF file at ``path`` (its metadata only)."""
    p = Path(path)
    meta = read_metadata(p)
    try:
        return from_metadata(meta)
    except TokenizerFormatError as e:
        raise type(e)(f"{p}: {e}") from None


def from_metadata(meta: Mapping[str, Any]) -> Tokenizer:
    """The tokenizer that GGUF metadata (key → value, as ``read_metadata`` gives) holds."""
    from . import hf_json

    return hf_json.loads(json.dumps(tokenizer_json(meta), ensure_ascii=False))


def tokenizer_json(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The ``tokenizer.json`` document of the pipeline llama.cpp runs for ``meta``."""
    v = _Vocab(meta)
    build = {"llama": _llama, "gpt2": _gpt2, "bert": _bert, "t5": _t5}.get(v.model)
    if build is None:
        raise UnsupportedComponentError(
            f"GGUF tokenizer model {v.model!r}: tokensmith reads 'llama' (SentencePiece "
            f"BPE), 'gpt2' (byte-level BPE), 'bert' (WordPiece) and 't5' (Unigram)"
        )
    doc = build(v)
    doc.update(version="1.0", truncation=None, padding=None, added_tokens=v.added_tokens())
    return doc


class _Vocab:
    """The tokens, scores, types and special ids of the metadata, checked."""

    def __init__(self, meta: Mapping[str, Any]) -> None:
        self.meta = meta
        self.model = self._get("tokenizer.ggml.model", str, required=True)
        tokens = self._get("tokenizer.ggml.tokens", list, required=True)
        n = len(tokens)
        self.tokens = [t if t else f"[EMPTY_{i}]" for i, t in enumerate(tokens)]
        self.scores = self._array("tokenizer.ggml.scores", n, 0.0)
        self.types = self._array("tokenizer.ggml.token_type", n, NORMAL)
        seen: dict[str, int] = {}
        for i, t in enumerate(self.tokens):
            if not isinstance(t, str):
                raise TokenizerFormatError(f"tokenizer.ggml.tokens[{i}] is not a string")
            if seen.setdefault(t, i) != i:
                raise TokenizerFormatError(
                    f"duplicate token in vocabulary: {t!r} has ids {seen[t]} and {i}")
        self.ids = seen
        for i, t in enumerate(self.tokens):
            if t in _EOG_TEXTS and self.types[i] not in (CONTROL, UNUSED):
                self.types[i] = CONTROL
            if t in _ALWAYS_PARSED:
                self.types[i] = USER_DEFINED

    def _get(self, key: str, kind: type, required: bool = False, default: Any = None) -> Any:
        value = self.meta.get(key)
        if value is None:
            if required:
                raise TokenizerFormatError(f"no {key} in the metadata: no tokenizer here")
            return default
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TokenizerFormatError(f"{key} is a {type(value).__name__}, not a {kind.__name__}")
        return value

    def _array(self, key: str, n: int, default: Any) -> list[Any]:
        values = self._get(key, list)
        if values is None:
            return [default] * n
        if len(values) < n:
            raise TokenizerFormatError(f"{key} has {len(values)} entries for {n} tokens")
        return list(values[:n])

    def flag(self, key: str, default: bool) -> bool:
        return bool(self._get(f"tokenizer.ggml.{key}", bool, default=default))

    def special_id(self, name: str, default: int | None) -> int | None:
        """The id of a special token (``bos``, ``eos`` …), as llama.cpp settles it."""
        n = len(self.tokens)
        fallback = default if default is not None and 0 <= default < n else None
        value = self.meta.get(f"tokenizer.ggml.{name}_token_id")
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < n:
            return value
        return fallback

    def framing(self, bos: bool, eos: bool, defaults: tuple[int | None, int | None]) -> dict:
        """The post-processor adding BOS and EOS as ``add_bos_token``/``add_eos_token`` say."""
        add_bos = self.flag("add_bos_token", bos)
        add_eos = self.flag("add_eos_token", eos)
        first = self._needed("bos", add_bos, defaults[0])
        last = self._needed("eos", add_eos, defaults[1])
        return _template([first] if first is not None else [],
                         [last] if last is not None else [], self.tokens)

    def _needed(self, name: str, wanted: bool, default: int | None) -> int | None:
        if not wanted:
            return None
        tid = self.special_id(name, default)
        if tid is None:
            raise TokenizerFormatError(
                f"tokenizer.ggml.add_{name}_token is true, but tokenizer.ggml.{name}_token_id "
                f"is not set")
        return tid

    def added_tokens(self) -> list[dict[str, Any]]:
        """Control and unknown tokens (special), user-defined ones (always parsed)."""
        out = []
        for i, (t, ty) in enumerate(zip(self.tokens, self.types, strict=True)):
            if ty in (CONTROL, UNKNOWN, USER_DEFINED):
                out.append({"id": i, "content": t, "single_word": False, "lstrip": False,
                            "rstrip": False, "normalized": False,
                            "special": ty != USER_DEFINED})
        return out


def _template(first: list[int], last: list[int], tokens: list[str]) -> dict[str, Any]:
    def spec(ids: list[int], seq: int) -> list[dict[str, Any]]:
        return [{"SpecialToken": {"id": tokens[i], "type_id": seq}} for i in ids]

    def seq(name: str, seq_id: int) -> dict[str, Any]:
        return {"Sequence": {"id": name, "type_id": seq_id}}

    return {
        "type": "TemplateProcessing",
        "single": spec(first, 0) + [seq("A", 0)] + spec(last, 0),
        "pair": spec(first, 0) + [seq("A", 0)] + spec(last, 0) + [seq("B", 1)] + spec(last, 1),
        "special_tokens": {tokens[i]: {"id": tokens[i], "ids": [i], "tokens": [tokens[i]]}
                           for i in first + last},
    }


def _llama(v: _Vocab) -> dict[str, Any]:
    prefix = v.flag("add_space_prefix", True)
    has_bytes = any(ty == BYTE for ty in v.types)
    unk = v.special_id("unknown", 0)
    pieces = [[t, float(s), ty if 1 <= ty <= 6 else NORMAL]
              for t, s, ty in zip(v.tokens, v.scores, v.types, strict=True)]
    if unk is not None and pieces[unk][2] != UNKNOWN:
        pieces[unk][2] = UNKNOWN
    if not any(p[2] == UNKNOWN for p in pieces):
        raise TokenizerFormatError("a 'llama' vocabulary needs an unknown token (<unk>)")
    normalizers = [{"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]
    if prefix:
        normalizers.insert(0, {"type": "Prepend", "prepend": SPACE})
    decoders: list[dict[str, Any]] = [
        {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"}]
    if prefix:
        decoders.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    return {
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": None,
        "post_processor": v.framing(True, False, (1, 2)),
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": {"type": "BPE", "dropout": None, "unk_token": v.tokens[unk or 0],
                  "fuse_unk": True, "byte_fallback": has_bytes, "vocab": v.ids,
                  "merges": [], "sentencepiece": pieces},
    }


def _gpt2(v: _Vocab) -> dict[str, Any]:
    name = v.meta.get("tokenizer.ggml.pre") or "default"
    pre = PRE_TOKENIZERS.get(name)
    if pre is None:
        raise UnsupportedComponentError(
            f"GGUF pre-tokenizer {name!r}: tokensmith reads " + ", ".join(sorted(PRE_TOKENIZERS)))
    regexes, ignore_merges, add_bos = pre
    merges = v._get("tokenizer.ggml.merges", list, required=True)
    pairs = []
    for i, m in enumerate(merges):
        cut = m.find(" ", 1) if isinstance(m, str) else -1
        if cut < 0:
            raise TokenizerFormatError(f"tokenizer.ggml.merges[{i}] {m!r} is not 'left right'")
        pairs.append([m[:cut], m[cut + 1:]])
    splits = [{"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated", "invert": False}
              for r in regexes]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                  "use_regex": False}
    # (every token is in the vocabulary, as in llama.cpp, whose merges may make a
    # control token's text)
    default_bos = None if name in ("glm4", "chatglm-bpe") else 11
    return {
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [*splits, byte_level]},
        "post_processor": v.framing(add_bos, False, (default_bos, 11)),
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                    "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "fuse_unk": False,
                  "byte_fallback": False, "ignore_merges": ignore_merges, "vocab": v.ids,
                  "merges": pairs},
    }


def _bert(v: _Vocab) -> dict[str, Any]:
    lowercase = v.flag("normalizer.lowercase", True)
    strip = v.flag("normalizer.strip_accents", lowercase)
    vocab: dict[str, int] = {}
    for i, (t, ty) in enumerate(zip(v.tokens, v.types, strict=True)):
        if ty in (CONTROL, UNKNOWN, USER_DEFINED) or (t.startswith("[") and t.endswith("]")):
            word = t
        elif t.startswith(SPACE):
            word = t[1:]
        else:
            word = "##" + t
        vocab.setdefault(word, i)
    unk = v.special_id("unknown", 100)
    # (llama.cpp's key is spelt "seperator")
    cls, sep = v.special_id("bos", 101), v.special_id("seperator", 102)
    if unk is None or cls is None or sep is None:
        raise TokenizerFormatError("a 'bert' vocabulary needs [UNK], [CLS] and [SEP] ids")
    post = _template([cls], [sep], v.tokens)
    return {
        "normalizer": _bert_normalizer(lowercase, strip),
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": post,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": v.tokens[unk],
                  "continuing_subword_prefix": "##", "max_input_chars_per_word": 1 << 30,
                  "vocab": vocab},
    }


def _bert_normalizer(lowercase: bool, strip: bool) -> dict[str, Any]:
    """BERT's cleaning as llama.cpp does it when it strips accents: each character
    becomes the first character of its NFD (so a Hangul syllable becomes its leading
    consonant, where BERT keeps every jamo), every mark (``\\p{M}``, where BERT
    removes ``Mn`` only) is dropped, then the text is lower-cased."""
    bert = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
            "strip_accents": False, "lowercase": lowercase and not strip}
    if not strip:
        return bert
    # (the syllables U+AC00 … U+D7A3 come in 19 runs of 588, one per leading consonant;
    # past them, NFD then dropping marks is the first character of the NFD)
    hangul = [{"type": "Replace",
               "pattern": {"Regex": f"[{chr(0xAC00 + 588 * k)}-{chr(0xAC00 + 588 * k + 587)}]"},
               "content": chr(0x1100 + k)} for k in range(19)]
    steps = [bert, *hangul, {"type": "NFD"},
             {"type": "Replace", "pattern": {"Regex": r"\p{M}"}, "content": ""}]
    if lowercase:
        steps.append({"type": "Lowercase"})
    return {"type": "Sequence", "normalizers": steps}


def _t5(v: _Vocab) -> dict[str, Any]:
    import base64

    charsmap = v.meta.get("tokenizer.ggml.precompiled_charsmap")
    if charsmap is not None and not isinstance(charsmap, bytes):
        raise TokenizerFormatError("tokenizer.ggml.precompiled_charsmap is not a byte array")
    unk = v.special_id("unknown", 2)
    types = [ty if 1 <= ty <= 6 else NORMAL for ty in v.types]
    if unk is not None:
        types[unk] = UNKNOWN
    if UNKNOWN not in types:
        raise TokenizerFormatError("a 't5' vocabulary needs an unknown token")
    prefix = v.flag("add_space_prefix", True)
    spaces = v.flag("remove_extra_whitespaces", False)
    control = [t for t, ty in zip(v.tokens, types, strict=True) if ty == CONTROL]
    return {
        "normalizer": {"type": "SentencePiece",
                       "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")
                       if charsmap else None,
                       "add_dummy_prefix": prefix, "remove_extra_whitespaces": spaces,
                       "escape_whitespaces": True, "treat_whitespace_as_suffix": False,
                       "user_defined_symbols": []},
        "pre_tokenizer": None,
        "post_processor": v.framing(False, True, (None, 1)),
        "decoder": {"type": "SentencePiece", "add_dummy_prefix": prefix,
                    "remove_extra_whitespaces": spaces, "byte_fallback": False,
                    "unk_piece": v.tokens[types.index(UNKNOWN)], "unk_surface": " \u2047 ",
                    "control_pieces": control, "denormalizer": None},
        # (llama.cpp's Viterbi sums in double precision, as `tokenizers` does: a plain
        # Unigram, not a SentencePiece one with piece types and single precision)
        "model": {"type": "Unigram", "unk_id": types.index(UNKNOWN),
                  "vocab": [[t, float(s)] for t, s in zip(v.tokens, v.scores, strict=True)],
                  "byte_fallback": False},
    }
