#!/usr/bin/env bash
# Build the wheel users install (abi3: one wheel for every CPython from 3.10;
# manylinux2014, built against an old glibc with zig), check its platform tag
# with auditwheel, and install it into fresh virtual environments of two Python
# versions, where a smoke test trains, encodes, saves, loads and pickles.
#
#   scripts/check_wheel.sh                   # Python 3.10 and 3.13 from pyenv
#   PYTHONS="python3.10 python3.12" scripts/check_wheel.sh
#
# Needs maturin, ziglang and auditwheel (pip install maturin ziglang auditwheel)
# and the Python versions named. Prints "wheel ok" and exits 0 when all pass.
set -euo pipefail
cd "$(dirname "$0")/.."

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
pythons=${PYTHONS:-"$(pyenv prefix 3.10 2>/dev/null)/bin/python3.10 $(pyenv prefix 3.13 2>/dev/null)/bin/python3.13"}

maturin build --release --features abi3 --compatibility manylinux2014 --zig \
    --out "$out/dist" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
wheel=$(ls "$out"/dist/tokensmith-*-cp310-abi3-manylinux*.whl)
echo "built $(basename "$wheel")"
auditwheel show "$wheel" | tee "$out/audit.txt"
grep -q 'manylinux_2_17_x86_64' "$out/audit.txt" || { echo "not manylinux2014"; exit 1; }

for py in $pythons; do
    "$py" -m venv "$out/venv"
    "$out/venv/bin/python" -m pip install -q "$wheel"
    (cd "$out" && "$out/venv/bin/python" - <<'EOF')
import pickle, sys, tempfile, pathlib
import tokensmith as ts

texts = ["the quick brown fox jumps over the lazy dog. " * 20, "分词器把文本切成整数。" * 20]
tok = ts.train(texts=texts, vocab_size=300, special_tokens=["<|endoftext|>"])
ids = tok.encode("the quick brown 分词器")
assert tok.decode(ids) == "the quick brown 分词器", ids
assert tok.encode_batch(["the fox", "lazy"]) == [tok.encode("the fox"), tok.encode("lazy")]
with tempfile.TemporaryDirectory() as d:
    path = tok.save(pathlib.Path(d) / "tokenizer.json")
    assert ts.load(path).encode("the fox") == tok.encode("the fox")
assert pickle.loads(pickle.dumps(tok)).encode("lazy dog") == tok.encode("lazy dog")
print(f"Python {sys.version.split()[0]}: ok ({tok.vocab_size} tokens)")
EOF
    rm -rf "$out/venv"
done
echo "wheel ok"
