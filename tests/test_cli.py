"""The ``tokensmith`` command line, run in-process through ``main([...])``."""

from __future__ import annotations

import io
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith import cli, demo, display
from tokensmith.cli import main

WORDS = (
    "the a tokenizer splits text into pieces and every piece becomes an integer "
    "models read integers merges join frequent pairs of bytes until the vocabulary is full "
    "rare words fall apart into smaller pieces while common words stay whole"
).split()


def make_corpus(n_lines: int = 400, seed: int = 7) -> str:
    """A few KB of generated English-like text, some lines indented like code."""
    rng = random.Random(seed)
    lines = []
    for i in range(n_lines):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
        lines.append(("    " if i % 5 == 0 else "") + words.capitalize() + ".")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(make_corpus(), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tok_path(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tok") / "tok.json"
    assert main(["train", str(corpus), "--vocab-size", "400", "--out", str(out), "-q"]) == 0
    return out


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def set_stdin(monkeypatch: pytest.MonkeyPatch, data: str | bytes) -> None:
    raw = data if isinstance(data, bytes) else data.encode("utf-8")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))


# ------------------------------------------------------------------ train


def test_train_prints_trace_progress_and_saves(corpus, tmp_path, capsys):
    out = tmp_path / "model"
    code, stdout, stderr = run(
        capsys, "train", str(corpus), "--vocab-size", "350", "--out", str(out),
        "--trace", "5", "--vocab-merges", str(tmp_path / "vm"),
    )
    assert code == 0, stderr
    assert "merge 0: (" in stderr and "merge 4: (" in stderr and "merge 5: (" not in stderr
    assert "merges [" in stderr and "100%" in stderr  # the progress bar
    saved = out / "tokenizer.json"
    assert f"saved {saved}" in stdout
    assert (tmp_path / "vm" / "vocab.json").is_file()
    assert (tmp_path / "vm" / "merges.txt").is_file()
    assert "note: vocab.json + merges.txt cannot record the 'gpt4' pre-tokenizer" in stderr
    tok = ts.load(saved)
    assert tok.vocab_size == 350
    assert tok.special_tokens == {"<|endoftext|>": 349}


def test_train_quiet_options_and_json_path(corpus, tmp_path, capsys):
    out = tmp_path / "t.json"
    code, stdout, stderr = run(
        capsys, "train", str(corpus), "--vocab-size", "300", "--out", str(out), "--quiet",
        "--special-token", "<s>", "--special-token", "</s>", "--pattern", "gpt2",
        "--max-token-length", "4",
    )
    assert code == 0, stderr
    assert stderr == ""
    assert stdout.strip() == f"saved {out}"
    tok = ts.load(out)
    assert set(tok.special_tokens) == {"<s>", "</s>"}
    assert max(len(tok.id_to_bytes(i) or b"") for i in range(256, 298)) <= 4


def test_train_from_stdin(tmp_path, capsys, monkeypatch):
    set_stdin(monkeypatch, make_corpus(200, seed=1))
    out = tmp_path / "stdin.json"
    code, stdout, stderr = run(capsys, "train", "-", "--vocab-size", "300", "--out", str(out),
                               "-q")
    assert code == 0, stderr
    assert ts.load(out).decode(ts.load(out).encode("Rare words")) == "Rare words"


def test_train_char_level(corpus, tmp_path, capsys):
    out = tmp_path / "char"
    code, _, stderr = run(capsys, "train", str(corpus), "--vocab-size", "80", "--out", str(out),
                          "--char-level", "--end-of-word-suffix", "</w>", "-q")
    assert code == 0, stderr
    tok = ts.load(out)
    assert not tok.is_byte_level
    code, stdout, _ = run(capsys, "encode", str(out), "the  tokenizer", "--show", "--no-color")
    assert code == 0
    # the spaces the pre-tokenizer drops are drawn between tokens, outside brackets
    assert "]␣␣[" in stdout and "</w>]" in stdout


# ------------------------------------------------------------------ encode / decode / count


def test_encode_decode_round_trip(tok_path, capsys, monkeypatch):
    text = "Rare words fall apart, common words stay whole."
    code, stdout, _ = run(capsys, "encode", str(tok_path), text)
    assert code == 0
    ids = [int(x) for x in stdout.split()]
    assert ids == ts.load(tok_path).encode(text)
    code, stdout, _ = run(capsys, "decode", str(tok_path), *map(str, ids))
    assert code == 0 and stdout == text + "\n"
    # ids from standard input, as a JSON list; -n: exactly the text
    set_stdin(monkeypatch, json.dumps(ids))
    code, stdout, _ = run(capsys, "decode", str(tok_path), "-n")
    assert code == 0 and stdout == text


def test_encode_text_from_file_and_stdin(tok_path, tmp_path, capsys, monkeypatch):
    text = "every piece becomes an integer\n\tand models read integers\n"
    f = tmp_path / "in.txt"
    f.write_text(text, encoding="utf-8")
    expected = " ".join(map(str, ts.load(tok_path).encode(text)))
    assert run(capsys, "encode", str(tok_path), "--file", str(f))[1].strip() == expected
    set_stdin(monkeypatch, text)
    assert run(capsys, "encode", str(tok_path))[1].strip() == expected


def test_show_draws_boundaries(tok_path, capsys):
    text = "the pieces\nand integers"
    code, stdout, _ = run(capsys, "encode", str(tok_path), text, "--show", "--no-color")
    assert code == 0
    drawn, summary_line = stdout.rstrip("\n").rsplit("\n", 1)
    assert drawn.startswith("[") and "][" in drawn and "␣" in drawn and "↵" in drawn
    assert "\x1b[" not in stdout
    n = len(ts.load(tok_path).encode(text))
    assert summary_line.startswith(f"({n} tokens, {len(text)} bytes")
    # the brackets hold exactly the text, whitespace drawn visibly
    inner = drawn.replace("][", "").replace("]\n[", "").strip("[]")
    assert inner.replace("␣", " ").replace("↵", "\n") == text


def test_show_ids_partial_bytes_and_color(tok_path, capsys):
    tok = ts.load(tok_path)
    code, stdout, _ = run(capsys, "encode", str(tok_path), "the integers 分词", "--ids",
                          "--no-color")
    assert code == 0
    drawn = stdout.split("\n")[0]
    ids = tok.encode("the integers 分词")
    assert [int(x.split("|")[-1]) for x in drawn.strip("[]").split("][")] == ids
    assert drawn.startswith(f"[{tok.decode(ids[:1])}|{ids[0]}]")
    # the corpus has no Chinese: its characters fall apart into UTF-8 bytes
    assert "<0xE5>" in stdout and "<0x88>" in stdout
    code, stdout, _ = run(capsys, "encode", str(tok_path), "the pieces", "--show",
                          "--color", "always")
    assert code == 0 and "\x1b[" in stdout and "[the]" not in stdout


def test_special_tokens_need_a_flag(tok_path, capsys):
    tok = ts.load(tok_path)
    code, _, stderr = run(capsys, "encode", str(tok_path), "a<|endoftext|>b")
    assert code == 2 and "--allow-special" in stderr and "Traceback" not in stderr
    code, stdout, _ = run(capsys, "encode", str(tok_path), "a<|endoftext|>b", "--allow-special")
    assert code == 0 and str(tok.special_tokens["<|endoftext|>"]) in stdout.split()
    code, stdout, _ = run(capsys, "count", str(tok_path), "a<|endoftext|>b", "--ordinary")
    assert code == 0 and int(stdout) > 3


def test_count(tok_path, tmp_path, capsys):
    text = make_corpus(20, seed=3)
    f = tmp_path / "c.txt"
    f.write_text(text, encoding="utf-8")
    expected = len(ts.load(tok_path).encode(text))
    assert run(capsys, "count", str(tok_path), text) == (0, f"{expected}\n", "")
    assert run(capsys, "count", str(tok_path), "--file", str(f)) == (0, f"{expected}\n", "")


# ------------------------------------------------------------------ inspect


def test_inspect(tok_path, capsys):
    code, stdout, _ = run(capsys, "inspect", str(tok_path), "--top", "3")
    assert code == 0
    for needle in ("byte-level BPE", "vocab size      400", "<|endoftext|> = 399",
                   "merges          143", "pre_tokenizer:", "Split(gpt4", "ByteLevel",
                   "decoder:", "first merges:", "last merges:", "longest tokens (bytes):"):
        assert needle in stdout, needle
    first = ts.load(tok_path).merges[0]
    assert f"[{first[0].replace('Ġ', '␣')}] + [{first[1].replace('Ġ', '␣')}]" in stdout
    code, stdout, _ = run(capsys, "inspect", str(tok_path), "--json")
    info = json.loads(stdout)
    assert info["vocab_size"] == 400 and info["merges"] == 143
    assert info["pipeline"]["post_processor"] == "none"


# ------------------------------------------------------------------ demo


def test_demo(tmp_path, capsys):
    out = tmp_path / "demo"
    code, stdout, stderr = run(capsys, "demo", "--out", str(out), "--vocab-size", "400",
                               "--corpus-mb", "1", "--no-color")
    assert code == 0, stderr
    saved = out / "tokenizer.json"
    assert saved.is_file()
    tok = ts.load(saved)
    assert tok.vocab_size == 400 and tok.is_byte_level
    assert f"saved {saved}" in stdout
    assert f"tokensmith encode {saved}" in stdout
    for needle in ("pydoc_data.topics", "standard-library sources", "merge 0: (", "merge 14: (",
                   "merges [", "English:", "Chinese:", "Python:", "bytes/token", "<0x"):
        assert needle in stdout, needle
    assert "merge 15: (" not in stdout


def test_demo_corpus_is_deterministic_and_skips_tests():
    a, b = demo.find_corpus(2_000_000), demo.find_corpus(2_000_000)
    assert a.files == b.files and a.texts == b.texts
    assert 1_000_000 < a.total_bytes <= 2_000_000
    for p in a.files:
        parts = set(p.relative_to(a.stdlib).parts)
        assert not parts & {"test", "tests", "site-packages", "idle_test"}, p


def test_demo_without_pydoc_data(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(demo, "_doc_topics", lambda: [])
    code, stdout, stderr = run(capsys, "demo", "--out", str(tmp_path / "d.json"),
                               "--vocab-size", "300", "--corpus-mb", "0.3", "--no-color")
    assert code == 0, stderr
    assert "standard-library sources only" in stdout
    assert (tmp_path / "d.json").is_file()


def test_demo_with_no_text_at_all(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(demo, "_doc_topics", lambda: [])
    monkeypatch.setattr(demo.sysconfig, "get_paths", lambda: {"stdlib": str(tmp_path / "no")})
    code, _, stderr = run(capsys, "demo", "--out", str(tmp_path / "d"))
    assert code == 2
    assert "tokensmith: error:" in stderr and "no text to train on" in stderr
    assert "Traceback" not in stderr


# ------------------------------------------------------------------ errors


def test_missing_corpus_file(tmp_path, capsys):
    missing = tmp_path / "nope.txt"
    code, _, stderr = run(capsys, "train", str(missing), "--vocab-size", "300",
                          "--out", str(tmp_path / "t.json"))
    assert code == 2
    assert stderr.startswith("tokensmith: error:") and str(missing) in stderr
    assert "Traceback" not in stderr


def test_missing_tokenizer(tmp_path, capsys):
    code, _, stderr = run(capsys, "encode", str(tmp_path / "none.json"), "hi")
    assert code == 2 and "tokensmith: error:" in stderr and "none.json" in stderr


def test_non_utf8_corpus(tmp_path, capsys, monkeypatch):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("café au lait\n".encode("latin-1") * 3)
    out = str(tmp_path / "t.json")
    code, _, stderr = run(capsys, "train", str(bad), "--vocab-size", "300", "--out", out, "-q")
    assert code == 2
    assert "byte offset 3" in stderr and "errors='replace'" in stderr
    assert "--errors replace" in stderr and "Traceback" not in stderr
    code, _, stderr = run(capsys, "train", str(bad), "--vocab-size", "300", "--out", out, "-q",
                          "--errors", "replace")
    assert code == 0, stderr
    # the same through standard input
    set_stdin(monkeypatch, b"ok\n" + "café".encode("latin-1"))
    code, _, stderr = run(capsys, "train", "-", "--vocab-size", "300", "--out", out, "-q")
    assert code == 2 and "<stdin>" in stderr and "byte offset 6" in stderr


def test_stdin_corpus_blocks(monkeypatch):
    monkeypatch.setattr(cli, "_STDIN_BLOCK", 5)  # force many small reads
    text = "abc défg\nhijklmnop 分词器 qr\n\nstu"
    set_stdin(monkeypatch, text)
    blocks = list(cli._stdin_blocks("strict"))
    assert "".join(blocks) == text and len(blocks) > 1
    assert all(b.endswith("\n") for b in blocks[:-1])
    set_stdin(monkeypatch, text.encode("utf-8") + b"\xff")
    with pytest.raises(ts.CorpusEncodingError, match="byte offset 37"):
        list(cli._stdin_blocks("strict"))
    set_stdin(monkeypatch, b"ab\xffcd\n")
    assert list(cli._stdin_blocks("skip")) == ["abcd\n"]


def test_bad_regex(corpus, tmp_path, capsys):
    code, _, stderr = run(capsys, "train", str(corpus), "--vocab-size", "300", "--pattern", "(",
                          "--out", str(tmp_path / "t.json"))
    assert code == 2 and "tokensmith: error:" in stderr and "regex" in stderr
    assert "Traceback" not in stderr


def test_bad_vocab_size_and_bad_ids(corpus, tok_path, tmp_path, capsys):
    code, _, stderr = run(capsys, "train", str(corpus), "--vocab-size", "10",
                          "--out", str(tmp_path / "t.json"))
    assert code == 2 and "257" in stderr
    code, _, stderr = run(capsys, "train", str(corpus), "--vocab-size", "300",
                          "--end-of-word-suffix", "</w>", "--out", str(tmp_path / "t.json"))
    assert code == 2 and "--char-level" in stderr
    code, _, stderr = run(capsys, "decode", str(tok_path), "12", "x")
    assert code == 2 and "not a token id: 'x'" in stderr
    code, _, stderr = run(capsys, "decode", str(tok_path), "123456789")
    assert code == 2 and "123456789" in stderr


def test_usage_errors(capsys):
    code, _, stderr = run(capsys, "train", "x.txt")  # no --vocab-size / --out
    assert code == 2 and "required" in stderr
    code, _, stderr = run(capsys)
    assert code == 2 and "COMMAND" in stderr


def test_interrupt_and_unexpected_errors(tok_path, capsys, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    def broken(args):
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "cmd_count", interrupted)
    assert run(capsys, "count", str(tok_path), "hi")[0] == 130
    monkeypatch.setattr(cli, "cmd_count", broken)
    code, _, stderr = run(capsys, "count", str(tok_path), "hi")
    assert code == 1 and "boom" in stderr and "bug" in stderr


# ------------------------------------------------------------------ help


@pytest.mark.parametrize("command", ["train", "encode", "decode", "count", "inspect", "demo"])
def test_subcommand_help_has_examples(command, capsys):
    code, stdout, _ = run(capsys, command, "--help")
    assert code == 0
    assert "examples:" in stdout and f"tokensmith {command}" in stdout


def test_python_m_tokensmith_help():
    proc = subprocess.run([sys.executable, "-m", "tokensmith", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: tokensmith")
    for command in ("train", "encode", "decode", "count", "inspect", "demo"):
        assert f"    {command} " in proc.stdout


# ------------------------------------------------------------------ display


def test_display_escapes():
    units = display.escape("a b\t\n\u200b\x00")
    assert "".join(t for t, _ in units) == "a␣b→↵\\u200b\\x00"
    assert [brk for _, brk in units] == [False, False, False, False, True, False, False]
    assert "".join(t for t, _ in display.escape(b"\xe4\xb8\xad\xe4")) == "中<0xE4>"
    assert "".join(t for t, _ in display.escape("a b\n", "backslash")) == "a b\\n"


def test_display_render_line_breaks():
    items = [display.Piece(b"x\n", 1), display.Piece(b"\n  ", 2), display.Piece(b"y", 3)]
    assert display.render(items) == "[x↵]\n[↵\n␣␣][y]"
    assert display.render(items, show_ids=True) == "[x↵|1]\n[↵\n␣␣|2][y|3]"
    colored = display.render(items, color=True)
    assert colored.count("\x1b[0m") >= 3 and "[x" not in colored


def test_train_wordpiece(corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "wp.json"
    assert main(["train", str(corpus), "--model", "wordpiece", "--vocab-size", "300",
                 "--out", str(out), "--quiet"]) == 0
    tok = ts.load(out)
    assert tok.special_tokens.keys() >= {"[CLS]", "[SEP]", "[UNK]"}
    ids = tok.encode("hello world")
    assert ids[0] == tok.token_to_id("[CLS]") and ids[-1] == tok.token_to_id("[SEP]")
    assert main(["train", str(corpus), "--model", "wordpiece", "--vocab-size", "300",
                 "--char-level", "--out", str(tmp_path / "x.json")]) == 2
    assert "apply to --model bpe" in capsys.readouterr().err
    assert main(["train", str(corpus), "--model", "wordpiece", "--vocab-size", "300",
                 "--candidates", "600", "--out", str(tmp_path / "c.json"), "--quiet"]) == 0
    # (this small text runs out of pairs before 300: the same size either way)
    assert ts.load(tmp_path / "c.json").vocab_size == tok.vocab_size <= 300
    assert main(["train", str(corpus), "--model", "wordpiece", "--vocab-size", "300",
                 "--candidates", "100", "--out", str(tmp_path / "y.json"), "--quiet"]) == 2
    assert "candidates=100 is below vocab_size=300" in capsys.readouterr().err
    assert main(["train", str(corpus), "--vocab-size", "300", "--candidates", "600",
                 "--out", str(tmp_path / "z.json"), "--quiet"]) == 2
    assert "--candidates applies to --model wordpiece" in capsys.readouterr().err


# ------------------------------------------------------------------ papercuts
def test_convert_into_a_new_folder(tok_path: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "convert", str(tok_path), str(tmp_path / "new" / "dir") + "/")
    assert code == 0 and (tmp_path / "new" / "dir" / "tokenizer.json").is_file()
    code, _, err = run(capsys, "convert", str(tok_path), str(tmp_path / "x.bin"))
    assert code == 2 and "--format" in err and "format=" in err


def test_a_path_given_as_text_gets_a_hint(tok_path: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "doc.txt").write_text("hello world, a longer text than its name\n")
    code, out, err = run(capsys, "count", str(tok_path), str(tmp_path / "doc.txt"))
    assert code == 0 and f"--file {tmp_path / 'doc.txt'}" in err
    code, out2, err = run(capsys, "count", str(tok_path), "--file", str(tmp_path / "doc.txt"))
    assert code == 0 and err == "" and out2 != out


def test_an_unquoted_text_is_a_one_line_error_with_the_fix(
        tok_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "encode", str(tok_path), "hello", "world")
    assert code == 2
    assert err.strip().splitlines() == [
        "tokensmith: error: unrecognized arguments: world; quote a text that has spaces: "
        "tokensmith encode TOKENIZER 'hello world'"]


def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "train", "--vocab-size", "many")
    assert code == 2
    assert err.strip().splitlines() == [
        "tokensmith train: error: argument --vocab-size: invalid int value: 'many' "
        "(see tokensmith train --help)"]


def test_compare_fails_when_a_tokenizer_cannot_be_loaded(
        tok_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "compare", str(tok_path), str(tmp_path / "missing.json"),
                         "--string", "hello world", "--no-diagnostics")
    assert code == 1
    assert "tok" in out  # what could be measured is shown
    assert "missing could not be loaded" in err


def test_train_on_a_folder_leaves_out_hidden_and_binary_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "repo"
    (folder / ".git" / "objects").mkdir(parents=True)
    (folder / ".git" / "objects" / "ab").write_text("zzzz " * 500)  # would be learned
    (folder / "docs").mkdir()
    (folder / "docs" / "a.txt").write_text("hello world, the cats sat on the mat\n" * 50)
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 40)
    out = tmp_path / "tok.json"
    with pytest.warns(UserWarning, match=r"left out 1 binary file\(s\): logo.png"):
        code, _, _ = run(capsys, "train", str(folder), "--vocab-size", "300", "--out", str(out),
                         "-q")
    assert code == 0
    vocab = ts.load(out).get_vocab()
    assert "zz" not in vocab and "zzzz" not in vocab  # .git was not read
    assert not any("PNG" in t for t in vocab)


def test_encode_and_count_print_json(tok_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tok = ts.load(tok_path)
    code, out, _ = run(capsys, "encode", str(tok_path), "héllo world", "--json")
    data = json.loads(out)
    assert code == 0 and data["ids"] == tok.encode("héllo world")
    assert len(data["tokens"]) == len(data["ids"])
    code, out, _ = run(capsys, "count", str(tok_path), "héllo world", "--json")
    assert json.loads(out) == {"tokens": len(data["ids"]), "characters": 11, "bytes": 12}


@pytest.mark.skipif(not shutil.which("bash"), reason="needs bash")
def test_bash_completion_knows_commands_and_options(capsys: pytest.CaptureFixture[str]) -> None:
    code, script, _ = run(capsys, "completion", "bash")
    assert code == 0
    probe = '_tokensmith; echo "${COMPREPLY[*]}"'

    def complete(*words: str) -> list[str]:
        setup = f"COMP_WORDS=({' '.join(words)}); COMP_CWORD={len(words) - 1}; "
        done = subprocess.run(["bash", "-c", script + setup + probe], capture_output=True,
                              text=True, check=True)
        return done.stdout.split()
    assert complete("tokensmith", "ext") == ["extend"]
    assert "--json" in complete("tokensmith", "count", "--")
    assert complete("tokensmith", "train", "--text-f") == ["--text-field"]
