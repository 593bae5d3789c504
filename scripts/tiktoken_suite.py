"""Run tiktoken's own test suite against ``tokensmith.compat.tiktoken``.

The tests come from the tiktoken sdist on PyPI (the version installed here, or
``--version``), downloaded into a temporary folder at run time and never kept.
A stand-in ``tiktoken`` package put first on ``PYTHONPATH`` makes every
``import tiktoken`` (also in the subprocesses the suite starts) return the
facade. The rank files come from ``../shared/assets``; p50k_base's is derived
from r50k_base's (24 runs of spaces appended) and checked by its SHA-256.

    python scripts/tiktoken_suite.py            # exit status: pytest's
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT.parent / "shared" / "assets"
RANK_FILES = {
    "r50k_base": ("gpt2", "r50k_base.tiktoken"),
    "cl100k_base": ("cl100k_base", "cl100k_base.tiktoken"),
    "o200k_base": ("o200k_base", "o200k_base.tiktoken"),
}
P50K_SHA256 = "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"

SHIM = '''"""Stand-in: tiktoken is tokensmith's facade here (scripts/tiktoken_suite.py)."""
import sys

from tokensmith.compat import tiktoken as _facade
from tokensmith.compat.tiktoken import core, load, model, registry

for _name, _module in {"core": core, "load": load, "model": model, "registry": registry}.items():
    sys.modules["tiktoken." + _name] = _module
sys.modules["tiktoken"] = _facade
'''


# tiktoken's test_hyp_roundtrip encodes any text Hypothesis makes. Hypothesis also draws
# string constants from "local" code (not under site-packages), and tokensmith installed
# editable is local: it drew "<|fim_middle|>" from the facade's own source, which encode()
# rightly refuses as a special token, as tiktoken does. Installed tiktoken is never local,
# so the suite sees the facade the same way.
CONFTEST = '''"""Written by tokensmith's scripts/tiktoken_suite.py (see CONFTEST there)."""
try:
    from hypothesis.internal.conjecture import providers as _providers

    _providers.is_local_module_file = lambda path: False
except (ImportError, AttributeError):  # another Hypothesis: leave it as it is
    pass
'''


def fetch_tests(version: str, into: Path) -> Path:
    """tiktoken's ``tests/`` folder from its sdist, extracted under ``into``."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", f"tiktoken=={version}", "--no-binary",
         ":all:", "--no-deps", "--quiet", "-d", str(into)],
        check=True,
    )
    (sdist,) = into.glob("tiktoken-*.tar.gz")
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if "/tests/" in m.name and m.isfile()]
        tar.extractall(into, members=members, filter="data")
    (tests,) = into.glob("tiktoken-*/tests")
    return tests


def rank_cache(into: Path) -> Path:
    """A tokensmith cache folder holding the rank files the suite loads."""
    into.mkdir()
    for name, parts in RANK_FILES.items():
        shutil.copyfile(ASSETS.joinpath(*parts), into / f"{name}.tiktoken")
    r50k = (into / "r50k_base.tiktoken").read_bytes()
    runs = b"".join(
        base64.b64encode(b" " * n) + b" %d\n" % rank
        for rank, n in zip(range(50257, 50281), range(2, 26), strict=True)
    )
    if hashlib.sha256(r50k + runs).hexdigest() != P50K_SHA256:
        raise SystemExit("p50k_base derived from r50k_base does not match its SHA-256")
    (into / "p50k_base.tiktoken").write_bytes(r50k + runs)
    return into


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default=metadata.version("tiktoken"),
                        help="tiktoken release whose tests to run (default: the installed one)")
    parser.add_argument("pytest_args", nargs="*", help="more arguments for pytest")
    args = parser.parse_args()
    missing = [p for p in RANK_FILES.values() if not ASSETS.joinpath(*p).is_file()]
    if missing:
        print(f"SKIPPED: tiktoken's suite needs the rank files in {ASSETS} ({missing})")
        return 0
    with tempfile.TemporaryDirectory(prefix="tiktoken-suite-") as tmp:
        work = Path(tmp)
        tests = fetch_tests(args.version, work / "sdist")
        conftest = tests / "conftest.py"
        conftest.write_text((conftest.read_text() + "\n" if conftest.exists() else "") + CONFTEST)
        shim = work / "shim" / "tiktoken"
        shim.mkdir(parents=True)
        (shim / "__init__.py").write_text(SHIM)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(shim.parent),
                                                          env.get("PYTHONPATH")]))
        env.update(TOKENSMITH_CACHE=str(rank_cache(work / "ranks")), TOKENSMITH_OFFLINE="1")
        print(f"tiktoken {args.version}'s tests against tokensmith.compat.tiktoken")
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests),
             *args.pytest_args],
            cwd=tests.parent, env=env,
        ).returncode


if __name__ == "__main__":
    sys.exit(main())
