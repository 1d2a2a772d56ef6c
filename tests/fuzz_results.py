"""Fuzz ``clustersmith parse`` and ``accept --results`` with mutations of recorded real tool output (issue 16).

    .venv/bin/python tests/fuzz_results.py [--cases N] [--seed S]

Every mutation of a tests/fixtures recording (cut, byte flips, NUL and non-UTF-8 bytes, lines repeated or dropped,
numbers replaced by huge, negative, non-finite or non-numeric tokens, JSON values swapped for other types, plus
the file classes: empty, directory, FIFO, symlink loop) must give exit 0 or 1 (parse: 0) or exit 2 without a
traceback, within the timeout, and never print a terminal escape or other control character raw (issue 43: the
tokens include escapes, look-alike digits and minus signs, and numbers past Python's 4300-digit int-string limit).
The mutations are this script's; the recordings are cited in their READMEs.
Prints: cases, tracebacks, wrong exit codes, hangs, raw controls (goal 0, 0, 0, 0).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script
    sys.path.insert(0, str(REPO))
from tests.fuzz_specs import RAW_CONTROL  # noqa: E402  (what no command may print raw)

FIX = REPO / "tests" / "fixtures"
SEEDS = {"fio": sorted((FIX / "fio").rglob("*.json")), "nccl": sorted((FIX / "nccl").glob("*.txt")) +
         sorted((FIX / "nccl").glob("*.json")), "ib_write_bw": sorted(p for p in (FIX / "rdma").glob("*.txt")
                                                     if "lat" not in p.name and "rdma-link" not in p.name),
         "ib_read_lat": sorted((FIX / "rdma").glob("lab-ib_read_lat*.txt"))}
# The float limits (issue 37, item 7): the largest and smallest normal and subnormal doubles, one past the largest
# (read as inf), and their negatives, beside the other bad tokens.
LIMITS = [repr(sys.float_info.max), repr(-sys.float_info.max), repr(sys.float_info.min), "5e-324", "-5e-324", "1e309",
          "-1e309", "1.8e308"]
TOKENS = ["1e308", "-1", "inf", "nan", "-nan", "N/A", "9" * 400, "0x10", "", "abc", "1.5.5", "\u00e9", "null",
          *LIMITS, "9" * 5000, "1" + "0" * 4400, "1e999999", "\u2212" + "1", "\uff11\uff12", "\u0661\u0662",
          "\x1b]0;owned\x07", "\x1b[2J", "12\u202e34", "\x9b31m"]
JSON_VALUES = [None, "x", [], {}, -1, 1e308, True, [1, [2]], "9" * 50, sys.float_info.max, -sys.float_info.max,
               sys.float_info.min, 5e-324, float("inf"), float("-inf"), float("nan")]


def _json_mutation(data: object, rng: random.Random) -> object:
    if isinstance(data, dict) and data:
        key = rng.choice(list(data))
        if rng.random() < 0.3:
            return {k: v for k, v in data.items() if k != key}
        return {**data, key: rng.choice(JSON_VALUES) if rng.random() < 0.4 else _json_mutation(data[key], rng)}
    if isinstance(data, list) and data:
        i = rng.randrange(len(data))
        return [*data[:i], _json_mutation(data[i], rng), *data[i + 1:]]
    return rng.choice(JSON_VALUES)


def mutate(raw: bytes, rng: random.Random) -> bytes:
    kind = rng.randrange(8)
    if kind == 0:
        return raw[: rng.randrange(len(raw) + 1)]
    if kind == 1:
        b = bytearray(raw)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if kind == 2:
        i = rng.randrange(len(raw))
        return raw[:i] + rng.choice([b"\0", b"\xff\xfe", b"\xe9", b"\r", b"\x1b[0m"]) + raw[i:]
    lines = raw.splitlines(keepends=True)
    if kind == 3 and lines:
        i = rng.randrange(len(lines))
        return b"".join(lines[:i] + [lines[i]] * rng.randint(2, 50) + lines[i + 1:])
    if kind == 4 and lines:
        drop = set(rng.sample(range(len(lines)), k=min(len(lines), rng.randint(1, 5))))
        return b"".join(ln for i, ln in enumerate(lines) if i not in drop)
    if kind == 5:
        text = raw.decode("utf-8", errors="replace")
        numbers = list(re.finditer(r"-?\d+(?:\.\d+)?", text))
        for m in rng.sample(numbers, k=min(len(numbers), rng.randint(1, 6))) if numbers else []:
            text = text[: m.start()] + rng.choice(TOKENS) + text[m.end():] if m.end() <= len(text) else text
        return text.encode()
    if kind == 6:
        try:
            return json.dumps(_json_mutation(json.loads(raw), rng)).encode()
        except (ValueError, RecursionError):
            return raw + b"\n{" * rng.randint(1, 3)
    return rng.choice([b"", b"{}", b"[]", b"[" * 100000, b"\n" * 1000, b"#bytes\n", b"# size count busbw\n1 1\n"])


def special(path: Path, kind: str) -> None:
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "loop":
        path.symlink_to(path.name)
    elif kind == "dangling":
        path.symlink_to("nowhere")


def run(args: list[str], timeout: float) -> tuple[int | None, str]:
    try:
        r = subprocess.run([sys.executable, "-m", "validators", *args], cwd=REPO, capture_output=True, text=True,
                           timeout=timeout, env={**os.environ, "COLUMNS": "200"})
    except subprocess.TimeoutExpired:
        return None, ""
    return r.returncode, r.stderr + r.stdout  # accept's exit 2 for a setup error is explained in its table


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=200, help="mutated files per tool (parse), and accept runs")
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--timeout", type=float, default=60)
    opts = ap.parse_args()
    rng = random.Random(opts.seed)
    counts = {"cases": 0, "tracebacks": 0, "wrong exit codes": 0, "hangs": 0, "raw controls": 0}
    bad: list[str] = []

    def judge(label: str, rc: int | None, err: str, ok: set[int]) -> None:
        counts["cases"] += 1
        if rc is None:
            counts["hangs"] += 1
            bad.append(f"hang: {label}")
        elif "Traceback" in err:
            counts["tracebacks"] += 1
            bad.append(f"traceback: {label}: {err.strip().splitlines()[-1]}")
        elif rc not in ok:
            counts["wrong exit codes"] += 1
            bad.append(f"exit {rc}: {label}: {err.strip()[-200:]}")
        elif rc == 2 and "error" not in err:  # "error: ..." (bad input) or a check's "setup_error"
            counts["wrong exit codes"] += 1
            bad.append(f"exit 2 without a message: {label}")
        if rc is not None and RAW_CONTROL.search(err):
            counts["raw controls"] += 1
            bad.append(f"raw control character printed: {label}: {RAW_CONTROL.search(err)!r}")

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        sys.path.insert(0, str(REPO))
        from blueprints.loader import load_requirements
        from blueprints.planner import plan
        from blueprints.render import build

        out, _ = build(plan(load_requirements(REPO / "examples" / "cv-training-500tb.yaml")), tmp / "out")
        n = 0
        for tool, seeds in SEEDS.items():
            for kind in ("directory", "fifo", "loop", "dangling"):
                n += 1
                special(path := tmp / f"case{n}", kind)
                judge(f"parse {tool} <{kind}>", *run(["parse", tool, str(path)], opts.timeout), {2})
            for i in range(opts.cases):
                n += 1
                seed = rng.choice(seeds)
                (path := tmp / f"case{n}").write_bytes(mutate(seed.read_bytes(), rng))
                judge(f"parse {tool} mutation {i} of {seed.name} ({path})", *run(["parse", tool, str(path)],
                                                                               opts.timeout), {0, 2})
        layout = {"fio": "fio/seq_read/client-1.json", "nccl": "nccl/run.txt",
                  "ib_write_bw": "ib_write_bw/rail0/client-1.txt"}
        for i in range(max(1, opts.cases // 4)):
            n += 1
            results = tmp / f"results{n}"
            shutil.copytree(FIX / "fio" / "results", results)
            tool = rng.choice(sorted(layout))
            target = results / layout[tool]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            seed = rng.choice(SEEDS[tool])
            if rng.random() < 0.1:
                special(target, rng.choice(["directory", "fifo", "loop", "dangling"]))
            else:
                target.write_bytes(mutate(seed.read_bytes(), rng))
            judge(f"accept --results with {layout[tool]} from {seed.name} mutation {i} ({results})",
                  *run(["accept", str(out), "--results", str(results), "--report-dir", str(tmp / f"report{n}")],
                       opts.timeout), {0, 1, 2})
    print(", ".join(f"{k}: {v}" for k, v in counts.items()))
    for line in bad[:40]:
        print(" ", line)
    return 0 if counts["tracebacks"] == counts["wrong exit codes"] == counts["hangs"] == counts["raw controls"] == 0 \
        else 1


if __name__ == "__main__":
    sys.exit(main())
