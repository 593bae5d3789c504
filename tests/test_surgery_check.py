"""``check_compatible`` and ``tokensmith check``: the proof that a changed vocabulary
keeps the old ids. Broken tokenizers are made by editing ``tokenizer.json``
documents, so every failure here is one a real vocabulary change could make."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tokensmith as ts
from tokensmith.cli import main
from tokensmith.errors import CompatibilityError, ConfigError
from tokensmith.formats import tiktoken
from tokensmith.surgery.check import (
    CompatibilityReport,
    adversarial_texts,
    check_compatible,
)

from .conftest import WORDS, asset, make_text

Doc = dict[str, Any]


def edited(tok: ts.Tokenizer, change: Callable[[Doc], None]) -> ts.Tokenizer:
    doc = json.loads(tok.to_str())
    change(doc)
    return ts.Tokenizer.from_str(json.dumps(doc))


def added_token(content: str, token_id: int, special: bool = False) -> Doc:
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": False, "special": special}


def failed(report: CompatibilityReport) -> set[str]:
    return {c.name for c in report.checks if not c.passed}


def two_token_word(tok: ts.Tokenizer) -> tuple[str, str, str]:
    """A word the tokenizer cuts in two or more pieces: (text, first piece, second piece)."""
    for w in WORDS:
        for text in (" " + w.capitalize(), " " + w.upper(), w.upper()):
            ids = tok.encode(text)
            if len(ids) >= 2:
                a, b = tok.id_to_token(ids[0]), tok.id_to_token(ids[1])
                assert a is not None and b is not None
                return text, a, b
    raise AssertionError("every word is one token")


@pytest.fixture(scope="module")
def texts() -> list[str]:
    """Short generated texts (15 words): a given word is in some of them, not all."""
    return [make_text(1000 + i, n_words=15) for i in range(80)]


# ------------------------------------------------------------ what passes


def test_identical_tokenizer_is_compatible(trained: ts.Tokenizer, texts: list[str]) -> None:
    report = check_compatible(trained, trained, texts)
    assert report.ok and bool(report)
    assert report.failures == []
    assert all(c.passed for c in report.checks)
    assert {c.name for c in report.checks} >= {
        "old ids", "special tokens", "duplicates", "id gaps", "reachability", "round trip",
        "unchanged ids", "vocabulary size"}
    assert report.texts_checked == len(texts)
    assert report.texts_changed == 0 and report.changed_share == 0.0
    assert report.first_differences == []
    assert report.adversarial_checked == len(adversarial_texts())
    assert report.bytes_per_token_before == report.bytes_per_token_after
    assert report.bytes_per_token_before is not None and report.bytes_per_token_before > 1
    assert report.old_vocab_size == report.new_vocab_size == trained.vocab_size
    report.raise_for_failures()  # nothing to raise


def test_added_token_changes_only_the_texts_that_contain_it(
    trained: ts.Tokenizer, texts: list[str]
) -> None:
    word = "lowest"
    new = edited(trained, lambda d: d["added_tokens"].append(
        added_token(word, trained.vocab_size)))
    report = check_compatible(trained, new, texts)
    assert report.ok, report.failures
    assert report.new_vocab_size == trained.vocab_size + 1
    containing = [k for k, t in enumerate(texts) if word in t]
    assert 0 < len(containing) < len(texts)
    assert report.texts_changed == len(containing)
    assert report.changed_share == pytest.approx(len(containing) / len(texts))
    first = report.first_differences[0]
    assert not first.adversarial
    assert first.text_index == containing[0]
    assert trained.vocab_size in first.new_ids
    assert word in first.new_tokens
    assert first.old_ids[: first.position - first.start] == \
        first.new_ids[: first.position - first.start]


def test_new_merge_at_the_end_keeps_other_encodings(trained: ts.Tokenizer,
                                                    texts: list[str]) -> None:
    """Continued training: a new token made by a new last merge."""
    text, a, b = two_token_word(trained)

    def extend(doc: Doc) -> None:
        doc["model"]["vocab"][a + b] = trained.vocab_size
        doc["model"]["merges"].append(f"{a} {b}")

    new = edited(trained, extend)
    assert trained.vocab_size in new.encode(text)
    report = check_compatible(trained, new, [*texts, f"and{text} again"])
    assert report.ok, report.failures
    assert report.texts_changed >= 1
    assert all(trained.vocab_size in d.new_ids for d in report.first_differences)


def test_normalizing_wordpiece_against_itself_is_compatible() -> None:
    """BERT lowercases and strips accents: it does not round-trip, and that is no failure."""
    bert = ts.load(asset("bert-base-uncased", "tokenizer.json"))
    report = check_compatible(bert, bert, ["Hello World! Ça va? 你好", "UPPER case Text"])
    assert report.ok, report.failures
    assert report.texts_changed == 0


def test_cl100k_against_itself_is_compatible() -> None:
    cl100k = ts.load(asset("cl100k_base", "cl100k_base.tiktoken"))
    report = check_compatible(cl100k, cl100k, ["def f(x):\n\treturn x  # 1234567", "héllo"])
    assert report.ok, report.failures
    assert report.old_vocab_size == 100277
    # cl100k has ids without a token (100256, 100261-100275): the same gaps are fine
    gaps = next(c for c in report.checks if c.name == "id gaps")
    assert "as in the old tokenizer" in gaps.detail


# ------------------------------------------------------------ what fails


def test_swapped_ids_fail_and_name_the_ids(trained: ts.Tokenizer, texts: list[str]) -> None:
    def swap(doc: Doc) -> None:
        vocab = doc["model"]["vocab"]
        a, b = (t for t, i in vocab.items() if i in (300, 301))
        vocab[a], vocab[b] = vocab[b], vocab[a]

    report = check_compatible(trained, edited(trained, swap), texts)
    assert not report.ok and not report
    assert "old ids" in failed(report)
    line = next(f for f in report.failures if f.startswith("old ids"))
    assert "id 300" in line and "id 301" in line


def test_id_given_to_another_string_fails(trained: ts.Tokenizer) -> None:
    """An added token put on an id a model token already has."""
    taken = 300
    new = edited(trained, lambda d: d["added_tokens"].append(added_token("zzqx", taken)))
    report = check_compatible(trained, new, ["zzqx and more"], adversarial=False)
    assert not report.ok
    assert any(f"id {taken}" in f for f in report.failures), report.failures


def test_same_string_under_two_ids_fails(trained: ts.Tokenizer) -> None:
    """An existing token added again under a new id."""
    existing = trained.id_to_token(300)
    assert existing is not None
    new = edited(trained, lambda d: d["added_tokens"].append(
        added_token(existing, trained.vocab_size)))
    report = check_compatible(trained, new, adversarial=False)
    assert "duplicates" in failed(report)
    line = next(f for f in report.failures if f.startswith("duplicates"))
    assert "id 300" in line and f"id {trained.vocab_size}" in line


def test_removed_merge_under_a_kept_token_fails_reachability(
    trained: ts.Tokenizer, texts: list[str]
) -> None:
    doc = json.loads(trained.to_str())
    removed = doc["model"]["merges"][50]
    token = "".join(removed.split(" ")) if isinstance(removed, str) else "".join(removed)
    new = edited(trained, lambda d: d["model"]["merges"].pop(50))
    report = check_compatible(trained, new, texts)
    assert not report.ok
    assert "reachability" in failed(report)
    line = next(f for f in report.failures if f.startswith("reachability"))
    assert repr(token) in line and "made by no merge" in line


def test_reordered_merges_change_ids_without_a_new_token(
    trained: ts.Tokenizer, texts: list[str]
) -> None:
    """The same vocabulary and merges, one merge moved to the end: only the texts show it."""
    new = edited(trained, lambda d: d["model"]["merges"].append(d["model"]["merges"].pop(0)))
    assert new.get_vocab() == trained.get_vocab()
    report = check_compatible(trained, new, texts)
    assert failed(report) == {"unchanged ids"}
    line = report.failures[0]
    assert line.startswith("unchanged ids:") and "no new token is used" in line
    assert report.texts_changed > 0


def test_token_without_its_parts_in_a_rank_file_fails() -> None:
    """A rank file (merges implied by ranks): a token none of whose splits are tokens."""
    def rank_file(extra: list[bytes]) -> ts.Tokenizer:
        tokens = [bytes([i]) for i in range(256)] + [b"ab", b"abc", *extra]
        data = "".join(f"{base64.b64encode(t).decode()} {r}\n" for r, t in enumerate(tokens))
        return tiktoken.loads(data.encode(), pattern="cl100k_base",
                              special_tokens={"<|endoftext|>": 1000})

    old = rank_file([])
    assert check_compatible(old, rank_file([b"abcab"]), ["abcab"]).ok  # abc + ab
    report = check_compatible(old, rank_file([b"xyz"]), ["xyz"])
    assert "reachability" in failed(report)
    assert "'xyz'" in next(f for f in report.failures if f.startswith("reachability"))
    assert failed(report) == {"reachability"}


def test_special_token_moved_fails(trained: ts.Tokenizer, texts: list[str]) -> None:
    old_id = trained.special_tokens["<|pad|>"]
    new_id = trained.vocab_size

    def move(doc: Doc) -> None:
        for t in doc["added_tokens"]:
            if t["content"] == "<|pad|>":
                t["id"] = new_id
        doc["model"]["vocab"]["<|pad|>"] = new_id

    report = check_compatible(trained, edited(trained, move), texts)
    assert "special tokens" in failed(report)
    line = next(f for f in report.failures if f.startswith("special tokens"))
    assert "'<|pad|>'" in line and f"id {old_id}" in line and f"id {new_id}" in line


def test_max_vocab(trained: ts.Tokenizer) -> None:
    n = trained.vocab_size
    report = check_compatible(trained, trained, max_vocab=n - 1, adversarial=False)
    assert not report.ok and failed(report) == {"vocabulary size"}
    (line,) = report.failures
    assert f"{n:,}" in line and f"{n - 1:,}" in line
    assert check_compatible(trained, trained, max_vocab=n, adversarial=False).ok
    with pytest.raises(ConfigError, match="max_vocab"):
        check_compatible(trained, trained, max_vocab=0)


def test_gap_in_new_ids(trained: ts.Tokenizer) -> None:
    gap_id = trained.vocab_size + 3
    new = edited(trained, lambda d: d["added_tokens"].append(added_token("qqzz", gap_id)))
    report = check_compatible(trained, new, adversarial=False)
    assert failed(report) == {"id gaps"}
    assert f"id {trained.vocab_size}" in report.failures[0]
    assert check_compatible(trained, new, allow_gaps=True, adversarial=False).ok


def test_removed_token_fails_unless_removed_ok(trained: ts.Tokenizer, texts: list[str]) -> None:
    """A prune that removes the last merged token and keeps every other id."""
    doc = json.loads(trained.to_str())
    last = doc["model"]["merges"][-1]
    a, b = last.split(" ") if isinstance(last, str) else last
    gone = doc["model"]["vocab"][a + b]

    def prune(d: Doc) -> None:
        del d["model"]["vocab"][a + b]
        d["model"]["merges"].pop()

    new = edited(trained, prune)
    uses = [t for t in texts if gone in trained.encode(t, disallowed_special=())]
    assert uses  # texts whose ids must change, and may: they used the removed token
    report = check_compatible(trained, new, texts)
    assert "old ids" in failed(report)
    assert f"id {gone}" in next(f for f in report.failures if f.startswith("old ids"))
    report = check_compatible(trained, new, texts, removed_ok=True)
    assert report.ok, report.failures
    assert report.removed_ids == 1
    assert report.texts_changed == len(uses)


def compacted_without_last_merge(tok: ts.Tokenizer) -> tuple[ts.Tokenizer, list[int]]:
    """The last merged token removed and the ids above it moved down, with the id map."""
    doc = json.loads(tok.to_str())
    last = doc["model"]["merges"].pop()
    a, b = last.split(" ") if isinstance(last, str) else last
    gone = doc["model"]["vocab"].pop(a + b)
    vocab = doc["model"]["vocab"]
    for t, i in vocab.items():
        if i > gone:
            vocab[t] = i - 1
    for entry in doc["added_tokens"]:
        if entry["id"] > gone:
            entry["id"] -= 1
    id_map = [i if i < gone else -1 if i == gone else i - 1 for i in range(tok.vocab_size)]
    return ts.Tokenizer.from_str(json.dumps(doc)), id_map


def test_compacted_ids_with_an_id_map(trained: ts.Tokenizer, texts: list[str]) -> None:
    new, id_map = compacted_without_last_merge(trained)
    assert new.vocab_size == trained.vocab_size - 1
    gone = id_map.index(-1)
    uses = [t for t in texts if gone in trained.encode(t, disallowed_special=())]
    assert uses

    report = check_compatible(trained, new, texts, id_map=id_map)
    assert report.ok, report.failures
    assert report.removed_ids == 1
    assert report.texts_changed == len(uses)  # the others have their old ids, mapped

    # without the map the special tokens moved and old ids mean other tokens
    report = check_compatible(trained, new, texts, removed_ok=True)
    assert {"old ids", "special tokens"} <= failed(report)

    wrong = [*id_map[:-2], id_map[-1], id_map[-2]]  # the two special tokens swapped
    report = check_compatible(trained, new, texts, id_map=wrong)
    assert {"old ids", "special tokens"} <= failed(report)
    with pytest.raises(ConfigError, match="id_map maps"):
        check_compatible(trained, new, id_map=id_map[:-1])
    with pytest.raises(ConfigError, match="not an id of the new tokenizer"):
        check_compatible(trained, new, id_map=[*id_map[:-1], new.vocab_size])


@pytest.mark.parametrize("keep_ids", [False, True])
def test_prune_with_its_id_map(trained: ts.Tokenizer, texts: list[str], keep_ids: bool) -> None:
    from tokensmith.surgery.prune import prune

    new, id_map = prune(trained, texts=texts[:20], keep_ids=keep_ids)
    report = check_compatible(trained, new, texts, id_map=id_map)
    assert report.ok, report.failures
    assert report.removed_ids == len(id_map.removed()) > 0
    if keep_ids:  # the removed ids are unused special tokens now: removed_ok sees that
        assert "old ids" in failed(check_compatible(trained, new, texts))
        report = check_compatible(trained, new, texts, removed_ok=True)
        assert report.ok, report.failures
        assert report.removed_ids == len(id_map.removed())


def test_changed_normalizer_breaks_round_trip_and_ids(trained: ts.Tokenizer) -> None:
    new = edited(trained, lambda d: d.update(normalizer={"type": "Lowercase"}))
    report = check_compatible(trained, new, ["Hello World", "all lower case"])
    assert {"round trip", "unchanged ids"} <= failed(report)
    line = next(f for f in report.failures if f.startswith("round trip"))
    assert "'Hello World' decodes to 'hello world'" in line
    assert report.texts_changed == 1  # "all lower case" keeps its ids


def test_raise_for_failures(trained: ts.Tokenizer) -> None:
    report = check_compatible(trained, trained, max_vocab=10, adversarial=False)
    with pytest.raises(CompatibilityError) as e:
        report.raise_for_failures()
    assert isinstance(e.value, ValueError)
    assert "max_vocab=10" in str(e.value)


def test_shadowed_wordpiece_piece_is_a_warning() -> None:
    """An uppercase piece in an uncased vocabulary can never be produced: warned, not failed."""
    bert = ts.load(asset("bert-base-uncased", "tokenizer.json"))
    new_id = bert.vocab_size
    new = edited(bert, lambda d: d["model"]["vocab"].update({"Zyxwv": new_id}))
    report = check_compatible(bert, new, ["zyxwv Zyxwv"], adversarial=False)
    assert report.ok, report.failures
    assert any("'Zyxwv'" in w and "not produced" in w for w in report.warnings)


# ------------------------------------------------------------ reporting


def test_report_renders(trained: ts.Tokenizer, texts: list[str]) -> None:
    new = edited(trained, lambda d: d["added_tokens"].append(
        added_token("lowest", trained.vocab_size)))
    parallel = {"en": ["the lowest fox", "quick brown"], "de": ["der Fuchs", "schnell braun"]}
    report = check_compatible(trained, new, texts, parallel=parallel, max_vocab=10_000)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["ok"] is True and data["texts_changed"] == report.texts_changed
    assert data["first_differences"][0]["new_tokens"]
    assert report.pivot == "en" and report.parity is not None
    en = next(p for p in report.parity if p.language == "en")
    assert en.premium_before == en.premium_after == 1.0
    # the added token matches "lowest" alone: the space before it becomes a token of its own
    assert en.tokens_after == en.tokens_before + 1
    de = next(p for p in report.parity if p.language == "de")
    assert de.tokens_after == de.tokens_before
    table = report.format_table()
    for name in ("old ids", "round trip", "unchanged ids", "First differences", "Parity"):
        assert name in table
    page = report.to_html()
    assert page.startswith("<!DOCTYPE html>") and "<table" in page and "old ids" in page
    assert "<script" not in page


def test_adversarial_suite_covers_the_hard_cases() -> None:
    suite = adversarial_texts()
    joined = "".join(suite)
    for needle in ("\t-ilrsD", "\t%s", "a" * 5000, "\u200d", "\U0001f3fd", "\u0301",
                   "東京", "ש", "م", "\x00", "\n    \n        "):
        assert needle in joined, needle
    assert all(isinstance(t, str) for t in suite)


# ------------------------------------------------------------ command line


@pytest.fixture(scope="module")
def tok_files(trained: ts.Tokenizer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("check")

    def swap(doc: Doc) -> None:
        vocab = doc["model"]["vocab"]
        a, b = (t for t, i in vocab.items() if i in (300, 301))
        vocab[a], vocab[b] = vocab[b], vocab[a]

    paths = {"old": folder / "old.json", "swapped": folder / "swapped.json",
             "text": folder / "text.txt"}
    trained.save(paths["old"])
    edited(trained, swap).save(paths["swapped"])
    paths["text"].write_text("the lowest fox\n\nran quick 12345\n", encoding="utf-8")
    return paths


def test_cli_exit_codes(tok_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    old, bad, text = (str(tok_files[k]) for k in ("old", "swapped", "text"))
    assert main(["check", old, old, "--text", text, "--string", "naïve"]) == 0
    out = capsys.readouterr().out
    assert "compatible" in out and "old ids" in out and "2 texts checked" not in out

    assert main(["check", old, bad, "--text", text]) == 1
    captured = capsys.readouterr()
    assert "FAIL" in captured.out and "id 300" in captured.out
    assert "not compatible" in captured.err

    assert main(["check", old, str(tok_files["old"].with_name("missing.json"))]) == 2
    assert main(["check", old, old, "--max-vocab", "0"]) == 2
    assert main(["check", old, old, "--text", str(text) + ".missing"]) == 2
    assert main(["check", old]) == 2
    assert main(["check", old, old, "--id-map", str(text) + ".missing"]) == 2
    assert "error" in capsys.readouterr().err


def test_cli_id_map(trained: ts.Tokenizer, tmp_path: Path,
                    capsys: pytest.CaptureFixture[str]) -> None:
    new, table = compacted_without_last_merge(trained)
    old_path, new_path = trained.save(tmp_path / "old.json"), new.save(tmp_path / "new.json")
    map_path = tmp_path / "map.json"
    map_path.write_text(json.dumps({
        "format": "tokensmith.IdMap", "version": 1, "old_size": trained.vocab_size,
        "new_size": new.vocab_size, "keep_ids": False, "gaps": [], "old_to_new": table,
    }), encoding="utf-8")
    args = ["check", str(old_path), str(new_path), "--string", "the lowest fox"]
    assert main(args) == 1
    assert main([*args, "--id-map", str(map_path)]) == 0
    assert "1 old id removed" in capsys.readouterr().out


def test_cli_json_and_html(tok_files: dict[str, Path], tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    old, bad, text = (str(tok_files[k]) for k in ("old", "swapped", "text"))
    assert main(["check", old, old, "--text", text, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True and data["texts_checked"] == 2

    page = tmp_path / "report" / "check.html"
    assert main(["check", old, bad, "--string", "hello", "--html", str(page), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["failures"]
    html_text = page.read_text(encoding="utf-8")
    assert "<table" in html_text and "old ids" in html_text and "FAIL" in html_text


def test_cli_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "tokensmith check" in out and "--max-vocab" in out
