"""The paths probe's settle loop (``settle_paths`` in validators/playbooks/files/job_probe.sh), run by the host's
/bin/sh as the probe's host job runs it.

The kernel's path states cannot be driven on this machine (the lab tier reads real ones), so `nvme` is a
script that replays a sequence of `nvme list-subsys` states, one per call, and counts the calls. The host's
admin timeout is read from a file in place of sysfs. The loop polls every 2 s; the counts below are what its
rules allow. Time is a clock of the test's own: `sleep` advances it and `date +%s` reads it, so the loop's
arithmetic runs exactly as on a host, without the test's waiting the seconds out (22 s of sleeps before).
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
BODY = REPO / "validators" / "playbooks" / "files" / "job_probe.sh"
ADMIN_TIMEOUT = "/sys/module/nvme_core/parameters/admin_timeout"


def settle_script(settle_s: int, reset_extra_s: int, admin_file: Path) -> str:
    """The body's own loop, its sysfs admin timeout pointed at ``admin_file``, with the windows the spec gives it."""
    assert f"nvme_admin_timeout={ADMIN_TIMEOUT}" in BODY.read_text()
    return (f"set -u; . {shlex.quote(str(BODY))}; nvme_admin_timeout={shlex.quote(str(admin_file))}; "
            f"settle_s={settle_s}; reset_extra_s={reset_extra_s}; settle_paths")


def replay(tmp_path: Path, states: list[str], settle_s: int, reset_extra_s: int = 0, admin_s: int = 600) -> int:
    """Run the loop against `nvme` answering `states` in turn (the last one repeats) on a host whose admin
    timeout is `admin_s`; return how many times the loop listed the paths before it ended."""
    (tmp_path / "admin_timeout").write_text(f"{admin_s}\n")
    script = settle_script(settle_s, reset_extra_s, tmp_path / "admin_timeout")
    (tmp_path / "states").write_text("\n".join(states) + "\n")
    calls = tmp_path / "calls"
    calls.write_text("")
    fake = tmp_path / "bin" / "nvme"
    fake.parent.mkdir()
    fake.write_text(f"""#!/bin/bash
echo x >> {calls}
n=$(wc -l < {calls})
state=$(sed -n "${{n}}p" {tmp_path / "states"})
[ -n "$state" ] || state=$(tail -n 1 {tmp_path / "states"})
echo '[{{"Subsystems":[{{"Paths":[{{"Name":"nvme0","State":"live"}},{{"Name":"nvme1","State":"'$state'"}}]}}]}}]'
""")
    fake.chmod(0o755)
    clock = tmp_path / "clock"  # seconds since the epoch, as the loop's `date +%s` reads them
    clock.write_text("1796031000\n")
    (fake.parent / "sleep").write_text(f"""#!/bin/sh
echo $(( $(cat {clock}) + $1 )) > {clock}
""")
    (fake.parent / "date").write_text(f"""#!/bin/sh
[ "$*" = +%s ] || exec /bin/date "$@"
cat {clock}
""")
    for tool in ("sleep", "date"):
        (fake.parent / tool).chmod(0o755)
    done = subprocess.run(
        ["/bin/sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": f"{fake.parent}:/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    return len(calls.read_text().splitlines())


def test_live_paths_are_read_at_once(tmp_path: Path) -> None:
    assert replay(tmp_path, ["live"], settle_s=30) == 1


def test_a_path_that_comes_back_is_waited_for(tmp_path: Path) -> None:
    assert replay(tmp_path, ["connecting", "connecting", "live"], settle_s=30) == 3


def test_a_path_still_connecting_is_judged_after_the_window(tmp_path: Path) -> None:
    """Polls at 0, 2 and 4 s: the third is the first at or past the 4 s window."""
    assert replay(tmp_path, ["connecting"], settle_s=4) == 3


def test_the_connecting_window_starts_when_recovery_ends(tmp_path: Path) -> None:
    """Resetting at 0, 2 and 4 s, then connecting. Timed from the loop's start, a 6 s window would close at the
    first connecting poll (6 s); timed from the end of recovery (4 s) it closes at 10 s, the sixth poll."""
    assert replay(tmp_path, ["resetting"] * 3 + ["connecting"], settle_s=6) == 6


def test_recovery_is_bounded_by_the_admin_timeout_and_the_extra(tmp_path: Path) -> None:
    """A path stuck resetting is judged once the host's admin timeout plus the extra has passed: 2 + 2 s, the
    third poll."""
    assert replay(tmp_path, ["resetting"], settle_s=30, reset_extra_s=2, admin_s=2) == 3
