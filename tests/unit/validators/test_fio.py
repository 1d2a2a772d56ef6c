"""fio parsing on real recorded output (tests/fixtures/fio, see its README), and the storage measures."""

from __future__ import annotations

from pathlib import Path

import pytest

from validators.errors import ParseError
from validators.fio import (
    FioRun,
    coefficient_of_variation,
    interval_series,
    merged_percentile,
    parse_bw_log,
    parse_fio,
    worst_percentile,
)

FIO = Path(__file__).resolve().parents[2] / "fixtures" / "fio"
RESULTS = FIO / "results" / "fio"


def load(path: Path) -> FioRun:
    return parse_fio(path.read_text(), str(path))


def test_standalone_jobs_with_group_reporting() -> None:
    run = load(RESULTS / "seq_read" / "client-1.json")
    assert run.version == "fio-3.33" and not run.client_server and run.aggregate is None
    assert [j.jobname for j in run.jobs] == ["seq_read"]
    job = run.jobs[0]
    assert job.error == 0 and job.read.bw_bytes > 0 and job.write.bw_bytes == 0
    assert run.bw_bytes("read") == job.read.bw_bytes
    assert job.read.clat_ns is not None and job.read.clat_ns.bins, "json+ carries the latency bins"


def test_client_server_aggregate_and_leading_client_text() -> None:
    text = (FIO / "client-server" / "seq_read.json").read_text()
    assert text.startswith("<"), "fio --client writes the servers' text ahead of the JSON"
    run = parse_fio(text, "seq_read.json")
    assert run.client_server
    assert [(j.hostname, j.port) for j in run.jobs] == [("127.0.0.1", 18765), ("127.0.0.1", 18766)]
    assert run.aggregate is not None and run.aggregate.jobname == "All clients"
    # fio's aggregate: all bytes over the longest runtime, not the sum of the clients' rates
    agg = run.aggregate.read
    assert run.bw_bytes("read") == agg.bw_bytes == pytest.approx(agg.io_bytes / (agg.runtime / 1000), rel=1e-3)
    assert agg.io_bytes == sum(j.read.io_bytes for j in run.jobs)
    assert agg.clat_ns is not None and agg.clat_ns.at(99.0) is None, "the aggregate has no percentiles"


def test_percentile_keys_are_fio_format_strings() -> None:
    job = load(RESULTS / "rand_read_4k" / "client-1.json").jobs[0]
    assert job.read.clat_ns is not None
    assert "99.000000" in job.read.clat_ns.percentile
    assert job.read.clat_ns.at(99.0) == job.read.clat_ns.percentile["99.000000"]


def test_verify_failure_is_a_job_error() -> None:
    run = load(FIO / "verify-failure" / "client-1.json")
    assert run.errors == 1 and run.jobs[0].error == 84  # EILSEQ: crc32c mismatch
    assert "verify failed" in (FIO / "verify-failure" / "stdout.txt").read_text()


def test_verify_messages_ahead_of_the_json_are_skipped() -> None:
    text = (FIO / "verify-failure" / "client-2.json").read_text()
    assert text.startswith("verify: bad magic header")
    assert load(FIO / "verify-failure" / "client-2.json").errors == 1


def test_bandwidth_log_and_summed_intervals() -> None:
    logs = [parse_bw_log(p.read_text(), p.name) for p in sorted((RESULTS / "seq_read").glob("*_bw.*.log"))]
    assert len(logs) == 4 and all(s.direction == 0 for log in logs for s in log)
    series = interval_series(logs, 0, 500)
    first = {round(s.t_ms / 500): 0.0 for log in logs for s in log}
    assert series and len(series) <= len(first)
    t, total = series[0]
    expected = sum(s.kib_s * 1024.0 for log in logs for s in log if round(s.t_ms / 500) == round(t * 2))
    assert total == pytest.approx(expected)
    cv = coefficient_of_variation([bw for _, bw in series])
    assert cv is not None and 0 < cv < 100


def test_merged_p99_lies_between_the_clients_p99s() -> None:
    runs = [load(p) for p in sorted((RESULTS / "rand_read_4k").glob("*.json"))]
    merged = merged_percentile(runs, "read", 99.0)
    worst = worst_percentile(runs, "read", 99.0)
    lowest = min(j.read.clat_ns.at(99.0) for r in runs for j in r.jobs if j.read.clat_ns)  # type: ignore[union-attr]
    assert merged is not None and worst is not None
    assert lowest * 0.9 <= merged <= worst * 1.1


def test_a_single_sample_has_no_variation() -> None:
    assert coefficient_of_variation([5.0]) is None
    assert coefficient_of_variation([0.0, 0.0]) is None


@pytest.mark.parametrize(("text", "field", "message"), [
    ("", "(document)", "expected fio JSON output"),
    ("fio: pid=1, err=2/file:filesetup.c\n", "(document)", "expected fio JSON output"),
    ('{"fio version": "fio-3.33", "disk_util": []}', "jobs", "expected a jobs[] (stand-alone) or client_stats[]"),
    ('{"jobs": []}', "jobs", "expected a non-empty array of jobs"),
    ('{"jobs": [{"jobname": "x", "error": 0, "read": {"io_bytes": "many"}}]}', "jobs.0.read.io_bytes",
     "valid integer"),
    ('{"jobs": [\n{"jobname": ', "(line 2)", "invalid JSON"),
])
def test_bad_fio_output_names_the_field(text: str, field: str, message: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_fio(text, "bad.json")
    problem = err.value.problems[0]
    assert problem.path == field and message in problem.message
    assert "bad.json" in str(err.value)


def test_bad_bandwidth_log_line() -> None:
    with pytest.raises(ParseError, match=r"line 2: expected 'time_ms, KiB/s, direction, bs, offset'"):
        parse_bw_log("500, 1024, 0, 0, 0\nnot a sample\n", "x_bw.1.log")
