"""Run every fuzz target (or some) for a bounded time; exit 1 on any finding.

    python fuzz/run_all.py --seconds 60              # each target for 60 s, one after another
    python fuzz/run_all.py --total 90                # all targets in about 90 s (CI)
    python fuzz/run_all.py --seconds 1800 --jobs 2   # a long run, two targets at a time
    python fuzz/run_all.py --seconds 600 --keep-going roundtrip   # collect every finding
    python fuzz/run_all.py --seconds 60 -- -seed=1   # more libFuzzer flags after --

Each target runs as ``fuzz/fuzz_<target>.py`` under libFuzzer with ``-max_total_time``,
``-timeout=10`` (a hang is a finding) and ``-rss_limit_mb=2048``, on its corpus
(``fuzz/corpus/<target>/``, kept between runs and ignored by git), the seeds
(``fuzz/seeds/<target>/``) and the regression inputs (``fuzz/regressions/<target>/``).
A crashing input is written to ``fuzz/findings/<target>/`` (ignored by git); the
summary says how to reproduce it and where to keep it. ``--keep-going`` runs libFuzzer
in fork mode, which goes on after a finding, to collect several in one run.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
TARGETS = ("tokenizer_json", "sentencepiece", "tiktoken", "bert_vocab", "gpt2_vocab_merges",
           "roundtrip")


@dataclass
class Result:
    target: str
    returncode: int
    seconds: float
    log: Path
    findings: list[Path] = field(default_factory=list)
    stats: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.returncode != 0 or bool(self.findings)


def _stats(log: str) -> dict[str, str]:
    """Executions, coverage and corpus from libFuzzer's output."""
    out: dict[str, str] = {}
    for line in log.splitlines():
        m = re.match(r"#(\d+):?\s.*?cov: (\d+) ft: (\d+) corp: (\d+)", line)
        if m:
            out.update(units=m[1], cov=m[2], ft=m[3], corpus=m[4])
        m = re.match(r"stat::(\w+):\s*(\d+)", line)
        if m:
            out[m[1]] = m[2]
        m = re.match(r"Done (\d+) runs in (\d+) second", line)
        if m:
            out["runs"] = m[1]
    if "number_of_executed_units" in out:
        out["runs"] = out["number_of_executed_units"]
    return out


def run_target(target: str, seconds: int, args: argparse.Namespace) -> Result:
    corpus = Path(args.corpus_dir) / target
    findings = Path(args.artifacts) / target
    corpus.mkdir(parents=True, exist_ok=True)
    findings.mkdir(parents=True, exist_ok=True)
    harness = FUZZ / f"fuzz_{target}.py"
    flags = [
        f"-max_total_time={seconds}",
        "-timeout=10",
        "-rss_limit_mb=2048",
        f"-artifact_prefix={findings}{os.sep}",
        "-print_final_stats=1",
    ]
    dictionary = FUZZ / "dicts" / f"{target}.dict"
    if dictionary.is_file():
        flags.append(f"-dict={dictionary}")
    env = dict(os.environ)
    if args.keep_going:
        # fork mode starts each job as argv[0]: the script itself, through its
        # `#!/usr/bin/env python3` line, with this interpreter's folder first on PATH
        flags += ["-fork=1", "-ignore_crashes=1", "-ignore_timeouts=1", "-ignore_ooms=1"]
        command = [str(harness)]
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    else:
        command = [sys.executable, str(harness)]
    dirs = [corpus, FUZZ / "seeds" / target, FUZZ / "regressions" / target]
    command += flags + args.libfuzzer + [str(d) for d in dirs if d.is_dir()]
    before = set(findings.iterdir())
    log = findings.parent / f"{target}.log"
    start = time.monotonic()
    with open(log, "w", encoding="utf-8", errors="replace") as out:
        out.write(" ".join(command) + "\n")
        out.flush()
        proc = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                              cwd=FUZZ.parent, timeout=seconds * 2 + 300)
    result = Result(target, proc.returncode, time.monotonic() - start, log)
    result.findings = sorted(p for p in findings.iterdir() if p not in before)
    result.stats = _stats(log.read_text(encoding="utf-8", errors="replace"))
    return result


def report(result: Result) -> str:
    s = result.stats
    line = (f"{result.target:18} {'FINDING' if result.failed else 'ok':8} "
            f"{result.seconds:6.0f} s  runs {s.get('runs', '?'):>9}  "
            f"cov {s.get('cov', '?'):>5}  ft {s.get('ft', '?'):>6}  "
            f"corpus {s.get('corpus', '?'):>5}  exit {result.returncode}")
    if not result.failed:
        return line
    lines = [line]
    tail = result.log.read_text(encoding="utf-8", errors="replace").splitlines()
    interesting = [t for t in tail if "Instrumenting" not in t and not t.startswith("#")]
    lines += ["    | " + t for t in interesting[-25:]]
    for path in result.findings:
        rel = os.path.relpath(path, FUZZ.parent)
        lines.append(f"    finding {rel}")
        lines.append(f"      reproduce: python fuzz/fuzz_{result.target}.py {rel}")
        lines.append(f"      keep it:   git mv or cp it to fuzz/regressions/{result.target}/"
                     f"<what-it-is> (see fuzz/README.md)")
    lines.append(f"    log: {os.path.relpath(result.log, FUZZ.parent)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help=f"default: all ({', '.join(TARGETS)})")
    time_group = parser.add_mutually_exclusive_group()
    time_group.add_argument("--seconds", type=int, default=60, help="per target (default 60)")
    time_group.add_argument("--total", type=int, help="seconds for all targets together")
    parser.add_argument("--jobs", type=int, default=1, help="targets run at the same time")
    parser.add_argument("--keep-going", action="store_true",
                        help="fork mode: go on after a finding, to collect them all")
    parser.add_argument("--corpus-dir", default=str(FUZZ / "corpus"))
    parser.add_argument("--artifacts", default=str(FUZZ / "findings"))
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[: argv.index("--")]
    args = parser.parse_args(argv)
    args.libfuzzer = extra
    targets = args.targets or list(TARGETS)
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        parser.error(f"unknown targets {unknown}; choose from {', '.join(TARGETS)}")
    jobs = max(1, args.jobs)
    if args.total is not None:
        rounds = -(-len(targets) // jobs)
        seconds = max(5, args.total // rounds)
    else:
        seconds = args.seconds
    print(f"fuzzing {len(targets)} targets for {seconds} s each, {jobs} at a time",
          flush=True)
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda t: run_target(t, seconds, args), targets))
    for result in results:
        print(report(result), flush=True)
    failed = [r.target for r in results if r.failed]
    if failed:
        print(f"fuzzing: findings in {', '.join(failed)} (see above and fuzz/README.md)")
        return 1
    print(f"fuzzing: {len(results)} targets, no finding")
    return 0


if __name__ == "__main__":
    sys.exit(main())
