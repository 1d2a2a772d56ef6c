"""Fuzz the real CLI with mutated specs: bad input is exit 2 with no traceback, a build writes all or nothing.

Not collected by pytest (no ``test_`` prefix); run it by hand, it prints its counts (issue 16, "Done when")::

    .venv/bin/python tests/fuzz_specs.py --cases 10000 --seed 1 --timeout 30 --workers 2

Each case mutates one of ``examples/*.yaml`` (value swaps, type changes, extreme numbers, unitless and wrong-unit
strings, deleted and duplicated keys, deep nesting, aliases, YAML 1.1 scalars, look-alike characters, control
characters and terminal escapes, huge numbers, random bytes, truncation, non-UTF-8, empty file) or puts a special
file where the spec belongs (FIFO, device, folder, symlink loop, dangling link), then runs ``clustersmith validate``
and ``clustersmith build -o <tmp>`` with a timeout: by default each in a forked child of a worker that imported the
CLI once (tests/fuzz_fork.py: the same ``main()``, 0.5 s less per command), with ``--subprocess`` as the console
script users start. It counts:

- tracebacks: stderr holds ``Traceback``;
- wrong exit codes: anything but 0 or 2;
- partial outputs: build exit 2 with files written, or build exit 0 with a listed file missing or empty;
- writes after a refusal: build exit 2 and the case's secrets folder holds a file (issue 43 item 4);
- raw control characters: a terminal escape or other control character in what a command printed, which could
  clear or retitle the user's terminal (issue 43 item 5: echoed values are escaped);
- validate/build disagreements: validate exit 0 but build exit 2 (a spec that validates always builds);
- hangs: a command that ran past ``--timeout``.

The first few inputs of each failure class are saved under the folder it prints, with the commands' output.
Exit status: 0 when every count of a failure class is 0, else 1.
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import math
import multiprocessing
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: tests.fuzz_fork, and blueprints from this checkout
    sys.path.insert(0, str(REPO))
from tests.fuzz_fork import Outcome, run_forked  # noqa: E402

EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
FAILURES = ("traceback", "wrong_exit", "partial_output", "write_after_refusal", "raw_control",
            "validate_ok_build_fails", "hang")
# What a command may never print raw: C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI).
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")  # and bidi controls
SPECIAL_FILES = ("fifo", "dev_zero", "dev_null", "directory", "loop", "dangling")
KEEP_PER_CLASS = 5

# Values a mutation puts in place of a leaf: extreme numbers, unitless and wrong-unit strings, other types.
# The float limits (issue 37, item 7): the largest double, the smallest normal and subnormal ones, their negatives.
BIG, TINY = sys.float_info.max, sys.float_info.min
NUMBERS: list[Any] = [0, -1, 1, -0.0, 1e308, -1e308, 1e-300, 5e-324, 10**18, 10**30, 2**63, -(2**63), 7 * 10**4000,
                      math.nan, math.inf, -math.inf, 0.5, 1e20, 123456789012345678, BIG, -BIG, TINY, -TINY, -5e-324]
STRINGS: list[Any] = ["", " ", "500", "<100", ">=500", "100%", "-5%", "1e308%", "1e-300%", "nan", "inf", "-inf",
                      ".nan", ".inf", "500TB/s", "100us", ">=500TB", "<5GB", "400G", "2..8", "H100:8", "1e400B",
                      "-1TB", "0B", "9e24B", ">=1e308GB/s", "<1e-300us", "<-1ms", "10PB/s", ">=10PB/s", "1000EB",
                      "1001EB", "NaNTB", "infTB", ">=nanGB/s", "<infus", "50 %", "５００TB", "500tb", "500 TB",
                      "\x00", "a\nb: c", "{{ x }}", "'\"\\", "🦄" * 50, "x" * 10_000,
                      f">={BIG!r}GB/s", f"<{BIG!r}us", f"{BIG!r}%", f"{BIG!r}TB", f"<{TINY!r}us", f"{TINY!r}%",
                      f">={TINY!r}GB/s", "<5e-324ms", "1.8e308TB", f"{BIG!r}", f"-{BIG!r}%", "1e-320%"]
OTHERS: list[Any] = [None, True, False, [], {}, [1, 2], {"a": 1}, [[[]]], {"value": "500TB"}]


def _leaves(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path in the document (mappings and lists), leaves and inner nodes."""
    out: list[tuple[Any, ...]] = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _leaves(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _leaves(v, (*prefix, i))
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    _get(doc, path[:-1])[path[-1]] = value


def _delete(doc: Any, path: tuple[Any, ...]) -> None:
    del _get(doc, path[:-1])[path[-1]]


# Document mutations: edit the parsed example in place.
def m_swap(rng: random.Random, doc: Any) -> None:
    paths = _leaves(doc)
    a, b = rng.sample(paths, 2)
    if a[: len(b)] == b or b[: len(a)] == a:  # one contains the other: swap with a copy
        _set(doc, a, copy.deepcopy(_get(doc, b)))
        return
    va, vb = _get(doc, a), _get(doc, b)
    _set(doc, a, vb)
    _set(doc, b, va)


def m_number(rng: random.Random, doc: Any) -> None:
    """A number in place of a leaf; half the time, where the leaf is a quantity (``500TB``, ``>=20MB/s``), in place of
    its number only, so the unit stays and the value, not the missing unit, is what gets judged."""
    path = rng.choice(_leaves(doc))
    value, number = _get(doc, path), rng.choice(NUMBERS)
    quantity = re.fullmatch(r"([<>=≤≥]*)\s*[0-9.eE+-]+\s*([A-Za-zμµ/%]+)", value) if isinstance(value, str) else None
    if quantity is not None and rng.random() < 0.5:
        _set(doc, path, f"{quantity.group(1)}{number}{quantity.group(2)}")
    else:
        _set(doc, path, number)


def m_string(rng: random.Random, doc: Any) -> None:
    _set(doc, rng.choice(_leaves(doc)), rng.choice(STRINGS))


def m_type(rng: random.Random, doc: Any) -> None:
    path = rng.choice(_leaves(doc))
    value = _get(doc, path)
    choices = [*OTHERS, str(value), [value], {"x": value}]
    if isinstance(value, str):
        choices += [value.upper(), value.strip("<>="), value + value]
    _set(doc, path, rng.choice(choices))


def m_delete(rng: random.Random, doc: Any) -> None:
    _delete(doc, rng.choice(_leaves(doc)))


def m_add_key(rng: random.Random, doc: Any) -> None:
    maps = [p for p in [(), *_leaves(doc)] if isinstance(_get(doc, p), dict)]
    target = _get(doc, rng.choice(maps))
    name = rng.choice(["extra", "Name", "gpu", "gpus ", "provider", "<<", "0", "", "apiversion", "x" * 300])
    target[name] = rng.choice([*NUMBERS[:4], *STRINGS[:6], *OTHERS[:4]])


def m_nest(rng: random.Random, doc: Any) -> None:
    path = rng.choice(_leaves(doc))
    value = _get(doc, path)
    for _ in range(rng.choice([1, 2, 5, 20, 31, 33, 60, 200])):
        value = [value] if rng.random() < 0.5 else {"k": value}
    _set(doc, path, value)


DOC_MUTATIONS: list[Callable[[random.Random, Any], None]] = [m_swap, m_number, m_string, m_type, m_delete,
                                                            m_add_key, m_nest]


# Text mutations: edit the YAML text (what a document edit cannot express).
def t_duplicate_line(rng: random.Random, text: str) -> str:
    lines = text.splitlines(keepends=True)
    i = rng.randrange(len(lines))
    return "".join([*lines[: i + 1], lines[i], *lines[i + 1:]])


def t_alias(rng: random.Random, text: str) -> str:
    kind = rng.choice(["bomb", "recursive", "many", "merge", "anchor_value"])
    if kind == "bomb":
        levels, width = rng.choice([(4, 9), (7, 9), (9, 9), (12, 3)])
        lines = ["x0: &x0 [" + ", ".join(['"ha"'] * width) + "]"]
        lines += [f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * width) + "]" for i in range(1, levels + 1)]
        return "\n".join(lines) + "\n" + text
    if kind == "recursive":
        return text + rng.choice(["loop: &l [*l]\n", "loop: &l {a: *l}\n", "loop: &l [1, {b: [*l]}]\n"])
    if kind == "many":
        return text.replace("metadata:", "anchors: &a 1\nrefs: [" + ", ".join(["*a"] * rng.choice([10, 65, 500]))
                            + "]\nmetadata:", 1)
    if kind == "merge":
        if rng.random() < 0.5:  # a merge list: the first map wins (blueprints/yaml11.py)
            return text.replace("data:", "b1: &b1 {training_set: 1TB}\nb2: &b2 {training_set: 2TB, hot_fraction: 5%}"
                                "\ndata:\n  <<: [*b1, *b2]", 1)
        return text.replace("data:", "base: &b {training_set: 1B, hot_fraction: 1e-300}\ndata:\n  <<: *b", 1)
    return text.replace("compute:", "compute: &c", 1).replace("target:", "target: *c\nx:", 1)


# Plain scalars YAML 1.1 (PyYAML) reads otherwise than YAML 1.2 core, and forms both read alike (issue 43).
YAML11_SCALARS = ("0755", "0512", "08", "1:30", "190:20:30", "1:30.5", "0b1010", "yes", "No", "ON", "off", "y", "true",
                  "False", "1_000", "0x1F", "0o17", "~", ".inf", "-.NaN", "1e400", "-0", "+12")


def _scalar_line(rng: random.Random, text: str) -> tuple[list[str], int, str, str] | None:
    """A random ``key: value`` line of ``text`` (a plain key, a value that is not a comment): the lines, its index,
    its key (with the indent) and value; None when there is none."""
    lines = text.splitlines(keepends=True)
    spots = [i for i, line in enumerate(lines) if re.match(r"^\s*[A-Za-z_]+: [^\s#]", line)]
    if not spots:
        return None
    i = rng.choice(spots)
    key, value = lines[i].rstrip("\n").split(": ", 1)
    return lines, i, key, value


def t_yaml11_scalar(rng: random.Random, text: str) -> str:
    if (found := _scalar_line(rng, text)) is None:
        return text
    lines, i, key, _ = found
    lines[i] = f"{key}: {rng.choice(YAML11_SCALARS)}\n"
    return "".join(lines)


# Characters a reader takes for others (issue 43 item 5): Cyrillic and Greek letters, Unicode dashes and minus, a
# fullwidth digit, no-break and zero-width spaces.
LOOKALIKES = {"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441", "x": "\u0445",
              "i": "\u0456", "B": "\u0392", "T": "\u03a4", "-": "\u2010\u2013\u2212", "0": "\uff10",
              " ": "\u00a0\u200b"}


def t_lookalike(rng: random.Random, text: str) -> str:
    spots = [i for i, ch in enumerate(text) if ch in LOOKALIKES]
    for i in rng.sample(spots, k=min(len(spots), rng.choice([1, 1, 2, 5]))):
        text = text[:i] + rng.choice(LOOKALIKES[text[i]]) + text[i + 1:]
    return text


# Terminal escapes and other controls: raw (YAML refuses most of them) and as double-quoted YAML escapes, which YAML
# reads into the key or value, so a message that echoes it must escape them.
RAW_CONTROLS = ("\x1b[2J", "\x1b]0;owned\x07", "\x07", "\x08\x08", "\r", "\x7f", "\x9b31m", "\u202e", "\x00")
YAML_ESCAPES = (r"\e[2J\e[H", r"\e]0;owned\a", r"\a", r"\b", r"\r", r"\x9b31m", r"\u202e", r"\0", r"\x1b[31m")


def t_control(rng: random.Random, text: str) -> str:
    if (found := _scalar_line(rng, text)) is None:
        return text
    lines, i, key, value = found
    indent, name = key[: len(key) - len(key.lstrip())], key.strip()
    where = rng.random()
    if where < 0.4:  # in the value, read by YAML
        lines[i] = f'{key}: "{value.strip(chr(34))}{rng.choice(YAML_ESCAPES)}"\n'
    elif where < 0.7:  # in the key, read by YAML
        lines[i] = f'{indent}"{name}{rng.choice(YAML_ESCAPES)}": {value}\n'
    else:  # raw bytes
        lines[i] = f"{key}: {value}{rng.choice(RAW_CONTROLS)}\n"
    return "".join(lines)


def t_huge_number(rng: random.Random, text: str) -> str:
    """A number longer than Python's int-string limit (4300 digits), or with an exponent far past a double's."""
    numbers = list(re.finditer(r"(?<![\w.])\d+(?:\.\d+)?", text))
    if not numbers:
        return text
    m = rng.choice(numbers)
    huge = rng.choice(["9" * 5000, "1" + "0" * 4400, "1e999999", "-" + "9" * 4301, "0." + "0" * 5000 + "1",
                       "9" * 4300 + ".5", "0x" + "f" * 5000, "1" * 100_000])
    return text[: m.start()] + huge + text[m.end():]


def t_random_bytes(rng: random.Random, data: bytes) -> bytes:
    pos = rng.randrange(len(data) + 1)
    return data[:pos] + rng.randbytes(rng.choice([1, 4, 64, 512])) + data[pos:]


def t_flip_chars(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.choice([1, 3, 10])):
        out[rng.randrange(len(out))] = rng.choice(b":-[]{}&*!|>'\"%@`#,? \t\n\\")
    return bytes(out)


def t_truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))]


def t_non_utf8(rng: random.Random, data: bytes) -> bytes:
    kind = rng.choice(["latin1", "utf16", "lone", "bom"])
    text = data.decode()
    if kind == "latin1":
        return text.replace("description: ", "description: caf\u00e9 ", 1).encode("latin-1", "replace")
    if kind == "utf16":
        return text.encode("utf-16")
    if kind == "bom":
        return b"\xef\xbb\xbf" + data
    pos = rng.randrange(len(data) + 1)
    return data[:pos] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]) + data[pos:]


def t_whole(rng: random.Random, data: bytes) -> bytes:
    return rng.choice([b"", b" ", b"\n", b"---\n", b"---\n...\n---\n", b"~\n", b"[]\n", b"42\n", b"\x00" * 10,
                       data + b"---\n" + data, b"%YAML 1.1\n" + data, b"!!python/object:os.system {}\n",
                       data.replace(b": ", b": !!binary ", 1), data.replace(b"\n", b"\r\n"),
                       data.replace(b"\n", b"\r"), data.replace(b"  ", b"\t", 1)])


@dataclass
class Case:
    index: int
    example: str
    mutations: list[str]
    data: bytes
    special: str | None = None  # one of SPECIAL_FILES in place of the spec file


def make_case(index: int, seed: int) -> Case:
    rng = random.Random(f"{seed}:{index}")
    if rng.random() < 0.02:
        kind = rng.choice(SPECIAL_FILES)
        return Case(index, "-", [f"special_{kind}"], b"", kind)
    example = rng.choice(EXAMPLES)
    text = example.read_text()
    names: list[str] = []
    if rng.random() < 0.75:
        doc = yaml.safe_load(text)
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            fn = rng.choice(DOC_MUTATIONS)
            try:
                fn(rng, doc)
            except (ValueError, IndexError, KeyError, TypeError):  # nothing to mutate there (emptied document)
                continue
            except RecursionError:  # nestings copied into nestings: deeper than this script's own walk goes
                break
            names.append(fn.__name__)
        try:
            text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=rng.random() < 0.5, width=10**6)
        except RecursionError:  # too deep for PyYAML's writer: the case keeps the example's text
            names.clear()
    if rng.random() < 0.3 or not names:
        fn_t = rng.choice([t_duplicate_line, t_alias, t_yaml11_scalar, t_lookalike, t_control, t_huge_number])
        text = fn_t(rng, text)
        names.append(fn_t.__name__)
    data = text.encode()
    if rng.random() < 0.15 or not names:
        fn_b = rng.choice([t_random_bytes, t_flip_chars, t_truncate, t_non_utf8, t_whole])
        data = fn_b(rng, data) if data else data
        names.append(fn_b.__name__)
    return Case(index, example.name, names, data)


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("clustersmith")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "blueprints"]


@dataclass
class Result:
    case: Case
    codes: dict[str, int | str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    details: dict[str, str] = field(default_factory=dict)


def _run(cmd: list[str], timeout: float, cwd: Path, env: dict[str, str]) -> Outcome:
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired as exc:
        return "timeout", (exc.stdout or b"").decode(errors="replace"), (exc.stderr or b"").decode(errors="replace")
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def _forked(cmd: list[str], timeout: float, cwd: Path, env: dict[str, str]) -> Outcome:
    from blueprints.cli import main as cli_main  # imported by the pool's parent before it forked its workers

    return run_forked(cli_main, ["clustersmith", *cmd[len(_cli()):]], timeout, cwd, env)


Runner = Callable[[list[str], float, Path, dict[str, str]], Outcome]


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def _place_special(spec: Path, kind: str) -> None:
    """A special file where the spec belongs; a FIFO gets no writer, so a reader that opens it would block."""
    if kind == "fifo":
        os.mkfifo(spec)
    elif kind == "dev_zero":
        spec.symlink_to("/dev/zero")
    elif kind == "dev_null":
        spec.symlink_to("/dev/null")
    elif kind == "directory":
        spec.mkdir()
    elif kind == "loop":
        spec.symlink_to(spec.name)
    else:
        spec.symlink_to("nowhere.yaml")


def run_case(case: Case, timeout: float, runner: Runner = _run) -> Result:
    res = Result(case)
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        work = Path(tmp)
        spec = work / "spec.yaml"
        if case.special:
            _place_special(spec, case.special)
        else:
            spec.write_bytes(case.data)
        out, secrets = work / "out", work / "secrets"
        env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1", "CLUSTERSMITH_SECRETS_DIR": str(secrets)}
        for cmd in ("validate", "build"):
            argv = [*_cli(), cmd, str(spec), *(["-o", str(out)] if cmd == "build" else [])]
            code, stdout, stderr = runner(argv, timeout, work, env)
            res.codes[cmd] = code
            res.details[cmd] = f"$ {' '.join(argv[-4:])}\nexit {code}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
            if code == "timeout":
                res.failures.append("hang")
                continue
            if "Traceback" in stderr:
                res.failures.append("traceback")
            if code not in (0, 2):
                res.failures.append("wrong_exit")
            if RAW_CONTROL.search(stdout + stderr):
                res.failures.append("raw_control")
            if cmd == "build":
                written = _files(out)
                # the files build lists: the indented lines after "built ...", up to its "next:" steps
                after = f"\n{stdout}".split("\nbuilt ", 1)[1] if "\nbuilt " in f"\n{stdout}" else ""
                listed = [Path(line.strip()) for line in after.split("\nnext:", 1)[0].splitlines()
                          if line.startswith("  ")]
                if code == 2 and written:
                    res.failures.append("partial_output")
                    res.details["partial"] = "written on exit 2: " + ", ".join(map(str, written[:10]))
                if code == 2 and _files(secrets):
                    res.failures.append("write_after_refusal")
                    res.details["secrets"] = "secrets written on exit 2: " + ", ".join(map(str, _files(secrets)))
                if code == 0:
                    bad = [p for p in listed if not p.is_file() or p.stat().st_size == 0]
                    # the build folder's lock file is empty by design (flock on it serialises builds)
                    empty = [p for p in written if p.stat().st_size == 0 and p.name != "lock"]
                    if not listed or bad or empty:
                        res.failures.append("partial_output")
                        res.details["partial"] = f"listed {len(listed)}, missing or empty: {bad[:10]}"
        if res.codes.get("validate") == 0 and res.codes.get("build") == 2:
            res.failures.append("validate_ok_build_fails")
    res.failures = sorted(set(res.failures))
    return res


_TIMEOUT = 30.0  # a forked pool worker's per-command timeout, set by main before the pool forks


def _forked_case(case: Case) -> Result:
    return run_case(case, _TIMEOUT, _forked)


def results(cases: Iterator[Case], timeout: float, workers: int, subprocesses: bool) -> Iterator[Result]:
    """Each case's result, in order: threads waiting on subprocesses, or single-threaded worker processes that fork
    one child per command (tests/fuzz_fork.py)."""
    if subprocesses:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            yield from pool.map(lambda c: run_case(c, timeout), cases)
        return
    global _TIMEOUT
    _TIMEOUT = timeout
    import blueprints.cli  # noqa: F401  (imported once, before the workers fork)

    with multiprocessing.get_context("fork").Pool(workers) as pool:
        yield from pool.imap(_forked_case, cases, chunksize=4)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=200, help="number of mutated specs (default 200)")
    ap.add_argument("--seed", type=int, default=0, help="seed; the same seed gives the same cases (default 0)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per command before it counts as a hang")
    ap.add_argument("--workers", type=int, default=2, help="parallel cases, at most 2 on shared machines (default 2)")
    ap.add_argument("--keep", type=Path, default=None, help="folder for failing inputs (default: a new temp folder)")
    ap.add_argument("--subprocess", action="store_true",
                    help="start the console script for every command, as users do (default: fork a worker that "
                         "imported the CLI once; about 0.5 s less per command)")
    args = ap.parse_args(argv)
    workers = max(1, min(args.workers, 2, os.cpu_count() or 1))
    keep = args.keep or Path(tempfile.mkdtemp(prefix="clustersmith-fuzz-"))
    keep.mkdir(parents=True, exist_ok=True)
    # the CLI's console is made when blueprints.cli is imported: as wide and colourless as each command's own
    os.environ.update({"COLUMNS": "400", "NO_COLOR": "1"})

    codes: collections.Counter[str] = collections.Counter()
    failures: collections.Counter[str] = collections.Counter()
    mutations: collections.Counter[str] = collections.Counter()
    kept: dict[str, list[str]] = collections.defaultdict(list)
    cases = (make_case(i, args.seed) for i in range(args.cases))
    for done, res in enumerate(results(cases, args.timeout, workers, args.subprocess), 1):
        codes[f"validate={res.codes.get('validate')} build={res.codes.get('build')}"] += 1
        mutations.update(set(res.case.mutations))
        for kind in res.failures:
            failures[kind] += 1
            if len(kept[kind]) < KEEP_PER_CLASS:
                folder = keep / kind / f"case-{res.case.index:05d}"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "spec.yaml").write_bytes(res.case.data or f"special file: {res.case.special}\n".encode())
                (folder / "run.txt").write_text(
                    f"example {res.case.example}, mutations {res.case.mutations}\n\n"
                    + "\n\n".join(res.details.values()), encoding="utf-8")
                kept[kind].append(str(folder))
        if done % 100 == 0:
            print(f"... {done}/{args.cases} " + json.dumps(dict(failures)), file=sys.stderr, flush=True)

    how = " ".join(_cli()) + (" (subprocesses)" if args.subprocess else " (main() in forked children)")
    print(f"cases: {args.cases} (seed {args.seed}, timeout {args.timeout}s, {workers} workers, CLI {how})")
    print("exit codes seen:")
    for key, n in sorted(codes.items()):
        print(f"  {key}: {n}")
    print("mutations used (cases): " + ", ".join(f"{k} {v}" for k, v in sorted(mutations.items())))
    for kind in FAILURES:
        print(f"{kind}: {failures[kind]}")
        for folder in kept.get(kind, []):
            print(f"  {folder}")
    if any(failures.values()):
        print(f"failing inputs saved under: {keep}")
    elif args.keep is None:
        shutil.rmtree(keep, ignore_errors=True)
    print(json.dumps({"cases": args.cases, **{k: failures[k] for k in FAILURES}}))
    return 1 if any(failures.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
