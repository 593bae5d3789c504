"""What every fuzz target shares: the import under instrumentation, what counts as a
finding, the light workout a loaded tokenizer gets, and the libFuzzer entry point.

A target module ``fuzz_<name>.py`` defines ``load(data) -> Tokenizer`` (a loader target)
or only ``test_one_input(data)`` (the round-trip target), and ends with
``_common.main(test_one_input)``. ``test_one_input`` returns normally for every input
that tokensmith handles as documented, and raises (or aborts, or hangs) on a finding.

Expected, and ignored: :class:`tokensmith.errors.TokenizerError` and its subclasses,
the one exception family tokensmith documents for bad input. Everything else is a
finding: ``PanicException`` (a Rust panic), ``RecursionError``, ``MemoryError``,
``AssertionError`` (a broken invariant checked here), any other exception, an abort,
a hang (libFuzzer's ``-timeout``) or memory past ``-rss_limit_mb``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

FUZZ_DIR = Path(__file__).resolve().parent
SEEDS = FUZZ_DIR / "seeds"

# Above this many ids a loaded tokenizer is not exercised, only noted: ids that large
# were item 1 of the reliability issue (tables sized by the largest id; the loaders now
# refuse ids far past the number of tokens), and a fuzz input should not reach them.
HUGE = 1_000_000

# Known bugs, reported and not fixed yet. While SKIP_KNOWN is on (the default), the
# targets skip the inputs or the checks that would only find one of these again, so that
# a run keeps looking for new bugs; FUZZ_SKIP_KNOWN=0 turns every skip off (the
# regression test does, so each known crash stays recorded and its xfail strict).
# Remove an entry, and its `known(...)` call, when the bug is fixed.
KNOWN_BUGS: dict[str, str] = {}
SKIP_KNOWN = os.environ.get("FUZZ_SKIP_KNOWN", "1") != "0"

_noted: set[str] = set()


def note(kind: str, detail: str = "") -> None:
    """Say once per process that a known problem was met (on stderr, not a finding)."""
    if kind not in _noted:
        _noted.add(kind)
        print(f"fuzz note: {kind}{': ' + detail if detail else ''}", file=sys.stderr)


# ---------------------------------------------------------------- feature signals
# libFuzzer sees the coverage of tokensmith's Python code only: the Rust core is not
# instrumented. Without more, every valid seed looks the same to it and the corpus
# collapses to one or two files. `feature(name)` gives it a signal for what happened
# inside the core: each distinct name (the kind of error a loader refused the input
# with, the components of a loaded pipeline, each token id a round trip produced) runs
# one of FEATURE_SLOTS tiny instrumented functions, a coverage edge of its own. Off
# (a no-op) outside a fuzzing run.
FEATURE_SLOTS = 8192
_slots: list[Callable[[], int]] = []


def _enable_features() -> None:
    import atheris

    source = "\n".join(f"def _f{k}():\n    return {k}" for k in range(FEATURE_SLOTS))
    namespace: dict[str, Any] = {}
    exec(compile(source, "<fuzz features>", "exec"), namespace)
    _slots[:] = [atheris.instrument_func(namespace[f"_f{k}"]) for k in range(FEATURE_SLOTS)]


def feature(name: str) -> None:
    """Tell libFuzzer that ``name`` happened (see above)."""
    if _slots:
        _slots[zlib.crc32(name.encode("utf-8", "surrogatepass")) % FEATURE_SLOTS]()


def error_kind(e: BaseException) -> str:
    """An error's class and the start of its message, up to the first quote (what
    follows is mostly the input's own text) and with numbers blanked: about one name
    per check in the loader that refused the input."""
    message = re.split(r"['\"`]", str(e), maxsplit=1)[0]
    message = re.sub(r"U\+[0-9A-F]+|[0-9]+", "#", message)
    return f"{type(e).__name__}:{message[:80]}"


def spec_features(spec: Any) -> None:
    """Features of a tokenizer.json document: its components and their flags."""
    if not isinstance(spec, dict):
        return

    def walk(obj: Any, path: str) -> None:
        if isinstance(obj, dict):
            kind = obj.get("type")
            if isinstance(kind, str):
                path = f"{path}/{kind}"
                feature(path)
            for key, value in obj.items():
                if key in ("vocab", "merges", "precompiled_charsmap", "sentencepiece"):
                    continue
                if value is None or isinstance(value, bool):
                    feature(f"{path}.{key}={value}")
                elif isinstance(value, (dict, list)):
                    walk(value, f"{path}.{key}")
        elif isinstance(obj, list):
            for value in obj[:16]:
                walk(value, path)

    for top in ("normalizer", "pre_tokenizer", "model", "post_processor", "decoder"):
        walk(spec.get(top), top)
    for top in ("truncation", "padding"):  # kept as read, whatever they hold: only the type
        feature(f"{top}:{type(spec.get(top)).__name__}")
    added = spec.get("added_tokens")
    if isinstance(added, list):
        feature(f"added_tokens:{min(len(added), 8)}")


def known(bug: str) -> bool:
    """Whether to skip what would hit the known bug ``bug`` (see :data:`KNOWN_BUGS`)."""
    if not SKIP_KNOWN:
        return False
    note(f"skipped known bug {bug!r}", KNOWN_BUGS[bug])
    return True


def fuzzing() -> bool:
    """Whether this process is a libFuzzer run (a ``fuzz_*.py`` script as ``__main__``)."""
    main = sys.modules.get("__main__")
    name = Path(getattr(main, "__file__", "") or "").name
    return name.startswith("fuzz_") and name.endswith(".py")


@contextlib.contextmanager
def instrumented() -> Iterator[None]:
    """Import tokensmith's Python code with atheris's coverage instrumentation when this
    is a fuzzing run; a plain import otherwise (the regression tests need no atheris).

    The Rust core is not instrumented (it would need a rebuild with
    sanitizer coverage): libFuzzer sees the Python side's coverage only.
    """
    if not fuzzing():
        yield
        return
    import atheris

    with atheris.instrument_imports(include=["tokensmith"]):
        yield


with instrumented():
    # every module a target reaches, imported here so that all of them are instrumented
    import tokensmith  # noqa: F401
    import tokensmith.formats  # noqa: F401
    import tokensmith.formats._protobuf  # noqa: F401
    import tokensmith.formats.bert  # noqa: F401
    import tokensmith.formats.gpt2  # noqa: F401
    import tokensmith.formats.hf_json  # noqa: F401
    import tokensmith.formats.sentencepiece  # noqa: F401
    import tokensmith.formats.tiktoken  # noqa: F401
    import tokensmith.streaming  # noqa: F401
    import tokensmith.surgery._base  # noqa: F401
    from tokensmith import Tokenizer
    from tokensmith.errors import TokenizerError, UnknownIdError

EXPECTED: tuple[type[BaseException], ...] = (TokenizerError,)

# short strings every loaded tokenizer encodes
PROBES = ("Hello world", " a\u0301 東京 😀 don't\t42\n", "<|endoftext|>[CLS]<s>", "")


def _ids_in(obj: Any, key: str = "") -> Iterator[int]:
    """Integers of a parsed tokenizer.json that are token ids (vocab values, ``id``,
    ``ids``, ``unk_id``, ``pad_id``, ``cls``/``sep`` pairs …)."""
    if isinstance(obj, bool):
        return
    if isinstance(obj, int):
        if key in ("id", "ids", "unk_id", "pad_id", "vocab", "cls", "sep", "special_tokens"):
            yield obj
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _ids_in(v, "vocab" if key == "vocab" else str(k))
    elif isinstance(obj, list):
        if key == "vocab" and len(obj) == 2 and isinstance(obj[0], str):
            return  # a Unigram [piece, score] pair: the score is no id
        for v in obj:
            yield from _ids_in(v, key)


def cleaned(text: str) -> str:
    """Text as tokensmith encodes it: a lone surrogate is U+FFFD."""
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def has_every_byte(tok: Tokenizer) -> bool:
    """Whether a byte-level tokenizer has a token for each of the 256 bytes (then
    nothing is dropped as unknown, and ordinary text must round-trip)."""
    if not tok.is_byte_level:
        return False
    singles = set()
    for i in tok.get_vocab().values():
        raw = tok.id_to_bytes(i)
        if raw is not None and len(raw) == 1:
            singles.add(raw)
    return len(singles) == 256


def exercise(tok: Tokenizer, texts: tuple[str, ...] = (), *, round_trip: bool = False) -> None:
    """Use a loaded tokenizer a little, checking what its documentation promises: ids
    in range, ``count``, ``encode_batch`` and ``encode_full`` agree with ``encode``,
    offsets inside the text, streaming decode equal to ``decode`` (byte mode), unknown
    ids refused, ``to_str()`` read back the same. With ``round_trip``, a byte-level
    tokenizer that has every byte must give ``decode(encode(x)) == x``.

    ``texts`` are encoded besides the fixed probes (the targets pass the input itself,
    so that mutations reach the encoder too). Raises AssertionError on a broken
    promise; TokenizerError from a step ends the workout quietly (a documented refusal).
    """
    size = tok.vocab_size
    assert isinstance(size, int) and size >= 0, f"vocab_size {size!r}"
    if size > HUGE:
        note(
            "loaded a tokenizer with vocab_size > 1e6, not exercised",
            "huge ids were item 1 of the reliability issue: how did this load?",
        )
        return
    feature(f"model:{tok._core.model_type}:{size.bit_length()}:{tok.is_byte_level}")
    vocab = tok.get_vocab()
    if vocab:
        top = max(vocab.values())
        assert top < size, f"get_vocab() has id {top}, vocab_size is {size}"
    json_text = tok.to_str(pretty=False)
    spec = json.loads(json_text)
    spec_features(spec)
    options: dict[str, Any] = {"disallowed_special": ()}
    processor_ids = [i for i in _ids_in(spec.get("post_processor")) if i >= size]
    assert not processor_ids, f"the post-processor's ids {processor_ids} are not in the vocabulary"
    whole = round_trip and has_every_byte(tok)
    # BPE dropout (0 < p < 1) draws anew on every call: calls need not agree
    dropout = (spec.get("model") or {}).get("dropout")
    repeatable = not (isinstance(dropout, (int, float)) and 0 < dropout < 1)
    probes = PROBES + texts
    encoded: dict[str, list[int]] = {}
    for k, text in enumerate(probes):
        try:
            ids = tok.encode(text, **options)
        except EXPECTED as e:
            # (and no more: a pattern past its time budget would take 2 s a call)
            feature("encode refused:" + error_kind(e))
            return
        encoded[text] = ids
        assert all(0 <= i < size for i in ids), f"encode({text!r}) gave ids out of range: {ids}"
        if repeatable:
            assert tok.count(text, **options) == len(ids), f"count({text!r})"
        # how many ids each fixed probe takes; for the input's own text, the order of it
        feature(f"probe {k}:{len(ids) if k < len(PROBES) else len(ids).bit_length()}")
        full = tok.encode_full(text, **options)
        if repeatable:
            assert full.ids == ids, f"encode_full({text!r}).ids {full.ids} != encode {ids}"
        for start, end in full.offsets:
            assert 0 <= start <= end <= len(text), f"{text!r}: offset ({start}, {end})"
        try:
            out = tok.decode(ids)
        except EXPECTED:
            continue
        assert isinstance(out, str)
        if whole:
            assert out == cleaned(text), f"decode(encode({text!r})) == {out!r}"
        stream = tok.decode_stream()
        if stream.byte_level:  # documented exact in byte mode
            streamed = "".join([stream.step(i) for i in ids]) + stream.flush()
            assert streamed == out, f"streamed {streamed!r} != decoded {out!r} ({ids})"
    if encoded and repeatable:
        batch = tok.encode_batch(list(encoded), **options)
        assert batch == list(encoded.values()), "encode_batch() != encode() one by one"
    valid = sorted(set(vocab.values()))[:64]
    with contextlib.suppress(*EXPECTED):
        assert isinstance(tok.decode(valid), str)
    for bad in (size, size + 1000, 2**40, -1):
        try:
            tok.decode([bad])
        except UnknownIdError:
            pass
        else:
            raise AssertionError(f"decode([{bad}]) with vocab_size {size} did not raise")
    # tokenizer.json is the native format: whatever loads can be written and read back
    try:
        again = Tokenizer.from_str(json_text)
    except EXPECTED as e:
        raise AssertionError(f"to_str() wrote a tokenizer.json that does not load: {e}") from e
    assert again.vocab_size == size, f"reloaded vocab_size {again.vocab_size} != {size}"
    for text, first in encoded.items() if repeatable else ():
        second = again.encode(text, **options)
        assert first == second, f"{text!r}: {first} before to_str(), {second} after"


_scratch: Path | None = None


def scratch_dir() -> Path:
    """A private folder for targets whose loader reads files (in memory when /dev/shm
    is there): one per process, removed at exit, and folders of processes that are
    gone (libFuzzer's fork mode ends its jobs without exit handlers) removed first."""
    global _scratch
    if _scratch is None:
        import atexit
        import shutil
        import tempfile

        shm = Path("/dev/shm")
        base = shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())
        for old in base.glob("tokensmith-fuzz-*"):
            pid = old.name.rsplit("-", 1)[-1]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                shutil.rmtree(old, ignore_errors=True)
        _scratch = base / f"tokensmith-fuzz-{os.getpid()}"
        _scratch.mkdir(exist_ok=True)
        atexit.register(shutil.rmtree, _scratch, True)
    return _scratch


def run_loader(
    load: Callable[[bytes], Tokenizer | None], data: bytes, *, round_trip: bool = False
) -> None:
    """The body of a loader target: load, then exercise (with the input's first 256
    bytes as one more text to encode); documented errors are fine."""
    try:
        tok = load(data)
    except EXPECTED as e:
        feature("refused:" + error_kind(e))
        return
    if tok is None:  # the target chose to skip this input
        return
    text = data[:256].decode("utf-8", "surrogateescape")
    try:
        exercise(tok, (text,), round_trip=round_trip)
    except EXPECTED as e:
        feature("exercise refused:" + error_kind(e))


def main(test_one_input: Callable[[bytes], None]) -> None:
    """Run libFuzzer on ``test_one_input`` with the command line's arguments."""
    import atheris

    _enable_features()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
