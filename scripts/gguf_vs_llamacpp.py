"""Compare tokensmith's GGUF tokenizers with llama.cpp's own, id for id.

llama.cpp is not a test dependency (``llama-cpp-python`` builds llama.cpp from
source, which takes minutes), so this check runs by hand:

    python -m venv /tmp/lcpp && /tmp/lcpp/bin/pip install llama-cpp-python
    python scripts/gguf_vs_llamacpp.py --llama-python /tmp/lcpp/bin/python

It writes vocabulary-only GGUF files from the reference tokenizers in
``../shared/assets`` (as llama.cpp's converter lays them out, see
``tests/_gguf_fixtures.py``), cuts the corpora in ``../shared/corpus`` into pieces
(English, code, Chinese, Japanese, the 13 PUD languages, the UDHR in 388),
and tokenizes every piece with ``llama_tokenize(add_special=True,
parse_special=False)`` in the other interpreter and with ``ts.load(gguf).encode``
here. It prints, per vocabulary, how many pieces agree, and the first pieces that
do not.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import _gguf_fixtures as F  # noqa: E402
import tokensmith as ts  # noqa: E402

ASSETS = ROOT.parent / "shared" / "assets"
CORPUS = ROOT.parent / "shared" / "corpus"

WORKER = r"""
import json, sys
from llama_cpp import Llama
req = json.load(sys.stdin)
llm = Llama(model_path=req["model"], vocab_only=True, verbose=False)
out = [llm.tokenize(t.encode("utf-8"), add_bos=True, special=False) for t in req["texts"]]
json.dump(out, sys.stdout)
"""


def _from_tokensmith(tmp: Path, source: str, pre: str) -> list[F.Entry]:
    """A vocabulary tokensmith loads from another format, via its tokenizer.json."""
    path = tmp / f"source-{pre}.json"  # (a name starting "tekken" would save as tekken)
    ts.load(source).save(path)
    return F.from_bpe_json(path, pre)


def vocabularies(tmp: Path) -> dict[str, Path]:
    import mistral_common

    tekken = sorted((Path(mistral_common.__file__).parent / "data").glob("tekken_*.json"))[0]
    made = {
        "o200k": _from_tokensmith(tmp, str(ASSETS / "o200k_base/o200k_base.tiktoken"), "gpt-4o"),
        "tekken": _from_tokensmith(tmp, str(tekken), "tekken") + F._ids(bos=1, eos=2),
        "gpt2": F.from_bpe_json(ASSETS / "gpt2/tokenizer.json", "gpt-2"),
        "llama3": F.from_bpe_json(ASSETS / "llama3/tokenizer.json", "llama-bpe")
        + F._ids(bos=128000, eos=128001),
        "qwen2.5": F.from_bpe_json(ASSETS / "qwen2.5/tokenizer.json", "qwen2")
        + F._ids(eos=151643),
        "deepseek-v3": F.from_bpe_json(ASSETS / "deepseek-v3/tokenizer.json", "deepseek-v3")
        + F._ids(bos=0, eos=1),
        "llama2": F.from_sentencepiece(ASSETS / "llama2/tokenizer.model", "llama",
                                       bos=1, eos=2, unknown=0),
        "t5(test_model)": F.from_sentencepiece(
            ASSETS / "sentencepiece-unigram/test_model.model", "t5", eos=2, unknown=0),
        "bert-uncased": F.from_bert_vocab(ASSETS / "bert-base-uncased/vocab.txt"),
    }
    out = {}
    for name, entries in made.items():
        path = tmp / (name.replace("(", "_").replace(")", "") + ".gguf")
        F.write(path, entries)
        out[name] = path
    return out


def pieces(limit: int, size: int) -> list[str]:
    texts: list[str] = []
    sources = [CORPUS / "en.txt", CORPUS / "code.txt", CORPUS / "zh.txt", CORPUS / "ja.txt"]
    sources += sorted((CORPUS / "parallel" / "pud").glob("*.txt"))
    udhr = sorted((CORPUS / "parallel" / "udhr").glob("*.txt"))  # (388 languages)
    for src, n in [(s, limit) for s in sources] + [(s, 2) for s in udhr]:
        if not src.is_file():
            continue
        data = src.read_text(encoding="utf-8", errors="replace")[: n * size]
        texts += [data[i:i + size] for i in range(0, len(data), size)][:n]
    return texts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-python", required=True, help="a Python with llama_cpp installed")
    ap.add_argument("--pieces", type=int, default=200, help="pieces per corpus file")
    ap.add_argument("--size", type=int, default=2000, help="characters per piece")
    ap.add_argument("--only", nargs="*", help="the vocabularies to check (default: all)")
    args = ap.parse_args()
    texts = pieces(args.pieces, args.size)
    with tempfile.TemporaryDirectory() as d:
        for name, path in vocabularies(Path(d)).items():
            if args.only and name not in args.only:
                continue
            req = json.dumps({"model": str(path), "texts": texts})
            done = subprocess.run([args.llama_python, "-c", WORKER], input=req,
                                  capture_output=True, text=True, check=True)
            theirs = json.loads(done.stdout)
            tok = ts.load(path)
            ours = [tok.encode(t, disallowed_special=()) for t in texts]
            bad = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
            print(f"{name:16} {len(texts) - len(bad)}/{len(texts)} pieces equal")
            for i in bad[:3]:
                a, b = ours[i], theirs[i]
                pairs = enumerate(zip(a, b, strict=False))
                k = next((j for j, (x, y) in pairs if x != y), min(len(a), len(b)))
                print(f"    piece {i}: first difference at token {k}: "
                      f"ours {a[max(0, k - 2):k + 3]} llama.cpp {b[max(0, k - 2):k + 3]} "
                      f"text {texts[i][:0]!r}{tok.decode(a[max(0, k - 2):k + 3])!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
