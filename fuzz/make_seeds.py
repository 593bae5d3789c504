"""Write the seed corpus: small valid files of every format, all made by tokensmith.

    python fuzz/make_seeds.py            # rewrites fuzz/seeds/ and fuzz/dicts/

Tiny tokenizers are trained on generated text and saved as tokenizer.json, ``.model``,
``.tiktoken``, ``vocab.txt`` and ``vocab.json`` + ``merges.txt``; tokenizer.json seeds
also come in variants with each pipeline component tokensmith implements (only those
tokensmith loads are kept). The output is deterministic: running it twice gives the
same files. ``fuzz/dicts/tokenizer_json.dict`` (a libFuzzer dictionary) is built from
the keys and component names found in the tokenizer.json seeds.
"""

from __future__ import annotations

import base64
import copy
import json
import shutil
import sys
from typing import Any

import _common
import fuzz_gpt2_vocab_merges
import fuzz_roundtrip
import tokensmith as ts
from fuzz_roundtrip import training_text
from tokensmith import patterns
from tokensmith.formats import bert, sentencepiece, tiktoken

SEEDS = _common.SEEDS
DICTS = _common.FUZZ_DIR / "dicts"
TEXTS = [training_text(1000 + i, 80) for i in range(30)]

SPLIT_PATTERN = patterns.resolve("llama3")  # another pattern than the trained one

# pipeline components tokensmith implements, with the settings tokenizer.json gives them
NORMALIZERS: dict[str, Any] = {
    "nfc": {"type": "NFC"},
    "nfkd": {"type": "NFKD"},
    "lowercase": {"type": "Lowercase"},
    "strip_accents": {"type": "Sequence", "normalizers": [{"type": "NFD"},
                                                          {"type": "StripAccents"}]},
    "replace": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
    "replace_regex": {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
    "prepend": {"type": "Prepend", "prepend": "\u2581"},
    "strip": {"type": "Strip", "strip_left": True, "strip_right": False},
    "bert": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
             "strip_accents": None, "lowercase": True},
    "nfkc_lower": {"type": "Sequence", "normalizers": [{"type": "NFKC"},
                                                       {"type": "Lowercase"}]},
}
PRE_TOKENIZERS: dict[str, Any] = {
    "bytelevel_regex": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                        "use_regex": True},
    "split_llama3": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": SPLIT_PATTERN}, "behavior": "Isolated",
         "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]},
    "split_removed": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": " "}, "behavior": "Removed", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]},
    "digits": {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": True}]},
    "whitespace": {"type": "Sequence", "pretokenizers": [
        {"type": "Whitespace"},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]},
    "whitespace_split": {"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]},
    "punctuation": {"type": "Sequence", "pretokenizers": [
        {"type": "Punctuation", "behavior": "Isolated"},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]},
    "bert": {"type": "Sequence", "pretokenizers": [
        {"type": "BertPreTokenizer"},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]},
    "metaspace": {"type": "Sequence", "pretokenizers": [
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
         "split": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]},
}
DECODERS: dict[str, Any] = {
    "sequence": {"type": "Sequence", "decoders": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
         "use_regex": True},
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "fuse_bytefallback": {"type": "Sequence", "decoders": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
         "use_regex": True},
        {"type": "ByteFallback"}, {"type": "Fuse"}]},
    "bpe_suffix": {"type": "Sequence", "decoders": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
         "use_regex": True},
        {"type": "BPEDecoder", "suffix": "</w>"}]},
    "metaspace": {"type": "Sequence", "decoders": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
         "use_regex": True},
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
         "split": True}]},
}


def _post_processors(tok: ts.Tokenizer) -> dict[str, Any]:
    eot = tok.special_tokens["<|endoftext|>"]
    special = {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [eot],
                                 "tokens": ["<|endoftext|>"]}}
    template = {
        "type": "TemplateProcessing",
        "single": [{"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": "<|endoftext|>", "type_id": 1}}],
        "special_tokens": special,
    }
    return {
        "template": template,
        "bytelevel": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                      "use_regex": True},
        "bert": {"type": "BertProcessing", "sep": ["<|endoftext|>", eot],
                 "cls": ["<|endoftext|>", eot]},
        "roberta": {"type": "RobertaProcessing", "sep": ["<|endoftext|>", eot],
                    "cls": ["<|endoftext|>", eot], "trim_offsets": True,
                    "add_prefix_space": False},
        "sequence": {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
             "use_regex": True}, template]},
    }


def _json_text(tok: ts.Tokenizer) -> bytes:
    return tok.to_str(pretty=False).encode("utf-8")


def _variants(base: ts.Tokenizer) -> dict[str, bytes]:
    """tokenizer.json seeds: the base with one component swapped at a time."""
    spec = json.loads(base.to_str(pretty=False))
    out: dict[str, bytes] = {}
    swaps = (
        [("normalizer", k, v) for k, v in NORMALIZERS.items()]
        + [("pre_tokenizer", k, v) for k, v in PRE_TOKENIZERS.items()]
        + [("decoder", k, v) for k, v in DECODERS.items()]
        + [("post_processor", k, v) for k, v in _post_processors(base).items()]
        + [("truncation", "longest_first", {"direction": "Right", "max_length": 8,
                                            "strategy": "LongestFirst", "stride": 0}),
           ("padding", "fixed", {"strategy": {"Fixed": 16}, "direction": "Right",
                                 "pad_to_multiple_of": None, "pad_id": 0,
                                 "pad_type_id": 0, "pad_token": "!"})]
    )
    for field, name, value in swaps:
        variant = copy.deepcopy(spec)
        variant[field] = value
        try:
            tok = ts.Tokenizer.from_str(json.dumps(variant, ensure_ascii=False))
            tok.encode("Hello  world 42 naïve")
        except ts.TokenizerError as e:
            print(f"  (tokensmith does not load {field}={name}: {str(e)[:80]})")
            continue
        out[f"bpe_{field}_{name}.json"] = _json_text(tok)
    return out


def _rank_file(tok: ts.Tokenizer) -> bytes:
    """A .tiktoken rank file of a byte-level BPE's vocabulary (ids as ranks)."""
    specials = set(tok.special_tokens.values())
    lines = []
    for i in range(tok.vocab_size):
        if i in specials:
            continue
        raw = tok.id_to_bytes(i)
        assert raw is not None
        lines.append(base64.b64encode(raw) + b" %d\n" % i)
    return b"".join(lines)


def make() -> dict[str, dict[str, bytes]]:
    """{target: {file name: bytes}}."""
    seeds: dict[str, dict[str, bytes]] = {t: {} for t in (
        "tokenizer_json", "sentencepiece", "tiktoken", "bert_vocab", "gpt2_vocab_merges",
        "roundtrip")}
    js, sp, tk, bv, gm = (seeds[t] for t in (
        "tokenizer_json", "sentencepiece", "tiktoken", "bert_vocab", "gpt2_vocab_merges"))

    # byte-level BPE: tokenizer.json, .tiktoken, vocab.json + merges.txt
    bpe = ts.train(texts=TEXTS, model="bpe", vocab_size=300, pattern="cl100k")
    bpe_gpt2 = ts.train(texts=TEXTS, model="bpe", vocab_size=290, pattern="gpt2",
                        special_tokens=["<|endoftext|>", "<|pad|>"])
    js["bpe_cl100k.json"] = _json_text(bpe)
    js["bpe_gpt2.json"] = _json_text(bpe_gpt2)
    js.update(_variants(bpe))
    js["bpe_added_tokens.json"] = _json_text(bpe.add_tokens(["hello world", "<mask>"]))
    js["bpe_added_special.json"] = _json_text(bpe.add_tokens(["<|im_start|>"], special=True))
    for name, tok in (("bpe_cl100k", bpe), ("bpe_gpt2", bpe_gpt2)):
        folder = _common.scratch_dir() / name
        folder.mkdir(exist_ok=True)
        vocab_path, merges_path = tok.save_vocab_merges(folder)
        vocab, merges = vocab_path.read_bytes(), merges_path.read_bytes()
        gm[f"{name}.bin"] = fuzz_gpt2_vocab_merges.join(vocab, merges)
        js[f"{name}_from_vocab_merges.json"] = _json_text(
            ts.load(vocab_path))
    gm["bytes_only.bin"] = fuzz_gpt2_vocab_merges.join(
        json.dumps({t: i for t, i in bpe.get_vocab().items() if i < 256},
                   ensure_ascii=False).encode(), b"#version: 0.2\n")
    ranks = _rank_file(bpe)
    tk["bpe_cl100k.tiktoken"] = ranks
    tk["bpe_gpt2.tiktoken"] = _rank_file(bpe_gpt2)
    tk["bytes_only.tiktoken"] = b"".join(
        base64.b64encode(bytes([b])) + b" %d\n" % b for b in range(256))
    loaded = tiktoken.loads(ranks, pattern="cl100k", special_tokens={"<|endoftext|>": 300})
    js["tiktoken_loaded.json"] = _json_text(loaded)

    # character-level BPE
    for name, options in (("eow", {"end_of_word_suffix": "</w>"}),
                          ("prefix", {"continuing_subword_prefix": "##"}),
                          ("lower", {"lowercase": True, "limit_alphabet": 60})):
        tok = ts.train(texts=TEXTS, model="bpe", vocab_size=150, byte_level=False, **options)
        js[f"bpe_char_{name}.json"] = _json_text(tok)

    # WordPiece: tokenizer.json and vocab.txt
    for name, options in (("uncased", {}), ("cased", {"lowercase": False})):
        tok = ts.train(texts=TEXTS, model="wordpiece", vocab_size=200, min_frequency=1,
                       **options)
        js[f"wordpiece_{name}.json"] = _json_text(tok)
        path = bert.save_vocab_txt(tok, _common.scratch_dir() / f"{name}-vocab.txt")
        bv[f"{name}.txt"] = path.read_bytes()
        js[f"wordpiece_{name}_from_vocab_txt.json"] = _json_text(bert.load(path))

    # SentencePiece Unigram and BPE: .model and tokenizer.json
    sp_options: dict[str, dict[str, Any]] = {
        "plain": {},
        "byte_fallback": {"byte_fallback": True},
        "symbols": {"user_defined_symbols": ["<sep>", "@@"], "pad_token": "<pad>",
                    "split_digits": True},
        "suffix": {"treat_whitespace_as_suffix": True, "add_dummy_prefix": False,
                   "remove_extra_whitespaces": False},
    }
    for model in ("unigram", "sentencepiece-bpe"):
        short = "unigram" if model == "unigram" else "sp_bpe"
        for name, options in sp_options.items():
            size = 400 if options.get("byte_fallback") else 120
            # (identity: no 260 KB charsmap in every seed; tests/test_sp_normalization.py
            # covers the rules)
            tok = ts.train(texts=TEXTS, model=model, vocab_size=size, hard_vocab_limit=False,
                           normalization_rule_name="identity", **options)
            sp[f"{short}_{name}.model"] = sentencepiece.dumps(tok)
            js[f"{short}_{name}.json"] = _json_text(tok)

    # round trips: every family and policy on short adversarial texts
    texts = [
        training_text(7, 12),
        "Hello, World! naïve café 42",
        "東京の分词器 данные مرحبا 😀👍🏽🇫🇷",
        "a\u0301e\u0308 ﬁ ＡＢＣ ½ \u200b\u00a0x",
        "\t%s\n    indent\r\n\n\n  trailing  ",
        "x<|endoftext|>y<s>z</s>[CLS]w",
        "\x00\x01\x7f\u202e\ufeff",
        "don't WE'LL It'S 1234567 3.14159",
    ]
    rt = seeds["roundtrip"]
    for i, text in enumerate(texts):
        for f, family in enumerate(fuzz_roundtrip.FAMILIES):
            policy = (i + f) % len(fuzz_roundtrip.POLICIES)
            rt[f"{family}_{i}.txt"] = fuzz_roundtrip.make_input(family, policy, text)
    return seeds


def _dict_line(word: str) -> str:
    raw = word.encode("utf-8")
    body = "".join(
        chr(b) if 0x20 <= b < 0x7F and chr(b) not in '\\"' else f"\\x{b:02X}" for b in raw
    )
    return f'"{body}"'


def json_dictionary(files: dict[str, bytes]) -> list[str]:
    """Keys and component names of the tokenizer.json seeds, as libFuzzer dictionary
    lines (plus JSON's own words and some edge-case numbers)."""
    words: set[str] = set()

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k != "vocab":
                    words.add(json.dumps(k))
                if k == "type" and isinstance(v, str):
                    words.add(json.dumps(v))
                if k not in ("vocab", "merges"):
                    walk(v)
        elif isinstance(obj, list):
            for v in obj:
                walk(v)

    for data in files.values():
        walk(json.loads(data))
    words |= {"true", "false", "null", "-1", "0", "4294967295", "1e308", "[]", "{}",
              '"Regex"', '"String"', '"\\u0000"', '"\\ud800"'}
    return [_dict_line(w) for w in sorted(words)]


def main() -> int:
    seeds = make()
    if SEEDS.exists():
        shutil.rmtree(SEEDS)
    total = 0
    for target, files in seeds.items():
        folder = SEEDS / target
        folder.mkdir(parents=True)
        for name, data in sorted(files.items()):
            (folder / name).write_bytes(data)
            total += len(data)
        print(f"{target}: {len(files)} seeds, {sum(map(len, files.values())):,} bytes")
    DICTS.mkdir(exist_ok=True)
    (DICTS / "tokenizer_json.dict").write_text(
        "# made by fuzz/make_seeds.py from the tokenizer.json seeds\n"
        + "\n".join(json_dictionary(seeds["tokenizer_json"])) + "\n", encoding="utf-8")
    print(f"total {total:,} bytes in {SEEDS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
