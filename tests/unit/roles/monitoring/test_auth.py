"""TLS and basic auth of the monitoring listeners: the role's CA module, its web config checked by promtool and
served by Debian's own node_exporter (401 without the account, 200 with it over HTTPS verified against the CA),
and the scrape side of prometheus.yml.

The secrets file is written by hand in the shared schema (kind ClusterSecrets, monitoring: username, password,
password_bcrypt) into a tmp folder; the bcrypt hash is made by crypt(3) (libxcrypt's $2b$) through the scenario's
own writer, roles/monitoring/molecule/default/write_test_secrets.py.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from blueprints.render.monitoring import render
from tests.conftest import require_tool
from tests.promtool.support import EXAMPLES, REPO, blueprint
from tests.roles.library import load

ROLE = REPO / "roles" / "monitoring"
WRITER = ROLE / "molecule" / "default" / "write_test_secrets.py"


tls = load("monitoring", "monitoring_tls.py")
HOSTS = {"storage-1": "127.0.0.1", "client-1": "10.77.1.11"}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_ca_and_host_certificates_are_made_once_with_private_keys(tmp_path: Path) -> None:
    folder = tmp_path / "lab.monitoring-tls"
    assert tls.ensure(folder, "lab", HOSTS) == ["ca.crt", "client-1.crt", "storage-1.crt"]
    assert _mode(folder) == 0o700
    for key in ("ca.key", "client-1.key", "storage-1.key"):
        assert _mode(folder / key) == 0o600, key
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert tls.ensure(folder, "lab", HOSTS) == [], "a second run writes nothing"
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_a_host_certificate_follows_its_address_and_keeps_its_key(tmp_path: Path) -> None:
    from cryptography import x509

    folder = tmp_path / "tls"
    tls.ensure(folder, "lab", HOSTS)
    key = (folder / "client-1.key").read_bytes()
    ca = (folder / "ca.crt").read_bytes()
    assert tls.ensure(folder, "lab", {**HOSTS, "client-1": "10.77.1.12"}) == ["client-1.crt"]
    assert (folder / "client-1.key").read_bytes() == key and (folder / "ca.crt").read_bytes() == ca
    cert = x509.load_pem_x509_certificate((folder / "client-1.crt").read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["client-1"]
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == ["10.77.1.12"]
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca))


def test_a_certificate_of_another_ca_is_issued_again(tmp_path: Path) -> None:
    folder, other = tmp_path / "tls", tmp_path / "other"
    tls.ensure(folder, "lab", HOSTS)
    tls.ensure(other, "lab", HOSTS)
    (folder / "client-1.crt").write_bytes((other / "client-1.crt").read_bytes())  # edit: a foreign certificate
    (folder / "client-1.key").write_bytes((other / "client-1.key").read_bytes())
    assert tls.ensure(folder, "lab", HOSTS) == ["client-1.crt"]


DISTRIBUTION_PYTHON = Path("/usr/bin/python3")  # Debian 12's: cryptography 38.0.4 (python3-cryptography, .ci/run)


def test_the_ca_module_runs_under_the_controllers_distribution_python_too(tmp_path: Path) -> None:
    """Issue 43 item 7: on a Debian 12 controller the task delegated to localhost ran under /usr/bin/python3 (the
    inventory's interpreter for `all` reaches the implicit localhost), whose cryptography 38 lacks
    verify_directly_issued_by: the second site.yml run failed. Real ansible-playbook, the module delegated to
    localhost under the playbook's Python and under the distribution's, each twice: made, then kept."""
    found = subprocess.run([DISTRIBUTION_PYTHON, "-c", "import cryptography; print(cryptography.__version__)"],
                           capture_output=True, text=True, check=False)
    assert found.returncode == 0, f"{DISTRIBUTION_PYTHON} needs python3-cryptography (.ci/run installs it)"
    inventory = {"all": {"vars": {"ansible_python_interpreter": str(DISTRIBUTION_PYTHON)},
                         "children": {"monitoring": {"hosts": {"storage-1": {"ansible_host": "192.0.2.1"}}}}}}
    tasks = []
    for interpreter in ("{{ ansible_playbook_python }}", str(DISTRIBUTION_PYTHON)):
        folder = tmp_path / ("playbook" if "{" in interpreter else "distribution")
        for run in ("first", "second"):
            tasks.append({"name": f"{folder.name} {run}", "monitoring_tls": {"dir": str(folder), "cluster": "lab",
                                                                             "hosts": HOSTS},
                          "delegate_to": "localhost", "run_once": True, "register": f"{folder.name}_{run}",
                          "vars": {"ansible_python_interpreter": interpreter}})
    tasks.append({"name": "Report", "ansible.builtin.debug": {"msg": "{{ [playbook_first.changed, playbook_second"
                  ".changed, distribution_first.changed, distribution_second.changed] | to_json }}"}})
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{"hosts": "monitoring", "gather_facts": False,
                                                         "tasks": tasks}], sort_keys=False))
    done = subprocess.run([Path(sys.executable).parent / "ansible-playbook", "-i", tmp_path / "inventory.yml",
                           tmp_path / "play.yml"], capture_output=True, text=True, timeout=300, check=False,
                          cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "ANSIBLE_NOCOLOR": "1", "HOME": str(tmp_path),
                                             "ANSIBLE_LIBRARY": str(ROLE / "library"),
                                             "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")})
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert '"msg": "[true, false, true, false]"' in output, output[-4000:]
    for folder in (tmp_path / "playbook", tmp_path / "distribution"):
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            ["ca.crt", "ca.key", "client-1.crt", "client-1.key", "storage-1.crt", "storage-1.key"])
        assert tls.ensure(folder, "lab", HOSTS) == [], "what the distribution's Python made is fresh here too"


@pytest.mark.parametrize(("hosts", "message"), [
    ({"client-1": "not-an-address"}, "hosts: client-1 has address 'not-an-address'; expected an IP address"),
    ({"../x": "10.0.0.1"}, "hosts: '../x' is not a usable host name"),
])
def test_bad_hosts_are_refused(tmp_path: Path, hosts: dict[str, str], message: str) -> None:
    with pytest.raises(tls.TlsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tls.ensure(tmp_path / "tls", "lab", hosts)


def _secrets(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    path = tmp_path / "secrets" / "lab.yml"
    subprocess.run([sys.executable, str(WRITER), str(path), "lab"], check=True, capture_output=True)
    assert _mode(path) == 0o600 and _mode(path.parent) == 0o700
    doc = yaml.safe_load(path.read_text())
    assert doc["kind"] == "ClusterSecrets" and doc["cluster"] == "lab"
    return path, doc["monitoring"]


def _web_config(tls_dir: Path, account: dict[str, str]) -> str:
    env = Environment(loader=FileSystemLoader(ROLE / "templates"), undefined=StrictUndefined)
    env.filters["to_json"] = json.dumps
    return env.get_template("web-config.yml.j2").render(
        ansible_managed="Ansible managed", monitoring_tls_dir=str(tls_dir), monitoring_username=account["username"],
        __monitoring_account=account)


def _host_tls(tmp_path: Path) -> Path:
    """The folder layout the role installs on a host (ca.crt, host.crt, host.key) for storage-1 at 127.0.0.1."""
    ca_dir, host_dir = tmp_path / "ca", tmp_path / "host"
    tls.ensure(ca_dir, "lab", HOSTS)
    host_dir.mkdir()
    for src, dest in (("ca.crt", "ca.crt"), ("storage-1.crt", "host.crt"), ("storage-1.key", "host.key")):
        (host_dir / dest).write_bytes((ca_dir / src).read_bytes())
    return host_dir


def test_the_web_config_passes_promtool(tmp_path: Path) -> None:
    promtool = require_tool("promtool", "prometheus")
    _, account = _secrets(tmp_path)
    web = tmp_path / "web.yml"
    web.write_text(_web_config(_host_tls(tmp_path), account))
    doc = yaml.safe_load(web.read_text())
    assert doc["basic_auth_users"] == {"clustersmith": account["password_bcrypt"]}
    assert doc["tls_server_config"]["min_version"] == "TLS12"
    checked = subprocess.run([promtool, "check", "web-config", str(web)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # and promtool refuses a hash that is not bcrypt: the check is not a formality
    web.write_text(web.read_text().replace(account["password_bcrypt"], "plain-text"))
    refused = subprocess.run([promtool, "check", "web-config", str(web)], capture_output=True, text=True, check=False)
    assert refused.returncode != 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, ca: Path | None, auth: tuple[str, str] | None) -> int:
    context = ssl.create_default_context(cafile=str(ca)) if ca else None
    request = urllib.request.Request(url)
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(":".join(auth).encode()).decode())
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


def test_debian_node_exporter_refuses_without_the_account_and_answers_with_it(tmp_path: Path) -> None:
    exporter = require_tool("prometheus-node-exporter", "prometheus-node-exporter")
    _, account = _secrets(tmp_path)
    host = _host_tls(tmp_path)
    web = tmp_path / "web.yml"
    web.write_text(_web_config(host, account))
    port = _free_port()
    # the role's flags (templates/prometheus-node-exporter.default.j2), on loopback, with few collectors
    proc = subprocess.Popen([exporter, f"--web.listen-address=127.0.0.1:{port}", f"--web.config.file={web}",
                             "--collector.disable-defaults", "--collector.loadavg"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"https://127.0.0.1:{port}/metrics"
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.2)
        creds = (account["username"], account["password"])
        assert _get(url, host / "ca.crt", None) == 401
        assert _get(url, host / "ca.crt", (account["username"], "wrong")) == 401
        assert _get(url, host / "ca.crt", creds) == 200
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            _get(url, None, creds)  # the system's CAs do not know the cluster CA
        assert _get(f"http://127.0.0.1:{port}/metrics", None, creds) == 400  # no plain HTTP
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_prometheus_yml_with_its_password_and_ca_files_passes_promtool(example: Path, tmp_path: Path) -> None:
    """promtool check config (not syntax-only) opens the password and CA files prometheus.yml names: written here
    where the role puts them, relative to a tmp root (edit: the absolute paths are rewritten under it)."""
    promtool = require_tool("promtool", "prometheus")
    bp = blueprint(example)
    render(bp, tmp_path)
    auth = bp.monitoring.auth
    root = tmp_path / "root"
    for path, text in ((auth.password_file, "secret"), (auth.ca_file, (_host_tls(tmp_path) / "ca.crt").read_text())):
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    config = tmp_path / "monitoring" / "prometheus.yml"
    text = config.read_text()
    assert auth.password_file in text and auth.ca_file in text
    config.write_text(text.replace(auth.password_file, str(root) + auth.password_file)
                      .replace(auth.ca_file, str(root) + auth.ca_file))
    checked = subprocess.run([promtool, "check", "config", "prometheus.yml"], cwd=config.parent, capture_output=True,
                             text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "WARNING" not in checked.stdout + checked.stderr  # the target files beside it, as the role installs them


def _wait_port(port: int, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, f"exited with {proc.returncode}"
            time.sleep(0.2)


def test_debian_prometheus_scrapes_itself_and_node_exporter_over_tls(tmp_path: Path) -> None:
    """Prometheus 2.42 (Go's TLS client, as on the hosts) with the node and prometheus jobs of the lab's rendered
    prometheus.yml (its client_auth with the two paths moved under tmp_path, its file_sd target files with this
    machine's listeners in place of the lab's hosts) against node_exporter and itself, both serving the role's web
    config: every target up, labelled as the rules read it (instance: the host name, role, exporter)."""
    prometheus = require_tool("prometheus", "prometheus")
    exporter = require_tool("prometheus-node-exporter", "prometheus-node-exporter")

    _, account = _secrets(tmp_path)
    host = tmp_path / "host"
    ca_dir = tmp_path / "ca"
    tls.ensure(ca_dir, "lab", {"localhost": "127.0.0.1"})
    host.mkdir()
    for src, dest in (("ca.crt", "ca.crt"), ("localhost.crt", "host.crt"), ("localhost.key", "host.key")):
        (host / dest).write_bytes((ca_dir / src).read_bytes())
    web = tmp_path / "web.yml"
    web.write_text(_web_config(host, account))
    (tmp_path / "password").write_text(account["password"])
    build = tmp_path / "build"
    render(blueprint(next(e for e in EXAMPLES if e.stem == "lab")), build)
    rendered = yaml.safe_load((build / "monitoring" / "prometheus.yml").read_text())
    node, self_port = _free_port(), _free_port()
    ports = {"node": node, "prometheus": self_port}
    jobs = [j for j in rendered["scrape_configs"] if j["job_name"] in ports]
    labels = {}
    for job in jobs:
        job["basic_auth"]["password_file"] = str(tmp_path / "password")  # edit: the host paths, under tmp_path
        job["tls_config"]["ca_file"] = str(host / "ca.crt")
        first = job["file_sd_configs"][0]["files"][0]  # one target per job: both listen on this machine
        job["file_sd_configs"][0]["files"] = [first]
        (group,) = json.loads((build / "monitoring" / first).read_text())
        labels[job["job_name"]] = {**group["labels"], "job": job["job_name"], "instance": "localhost"}
        group["targets"] = [f"localhost:{ports[job['job_name']]}"]
        (tmp_path / first).parent.mkdir(exist_ok=True)
        (tmp_path / first).write_text(json.dumps([group]))
    config = {"global": {"scrape_interval": "1s"}, "scrape_configs": jobs}
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    procs = [subprocess.Popen([exporter, f"--web.listen-address=127.0.0.1:{node}", f"--web.config.file={web}",
                               "--collector.disable-defaults", "--collector.loadavg"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             subprocess.Popen([prometheus, f"--config.file={tmp_path / 'prometheus.yml'}",
                               f"--web.listen-address=127.0.0.1:{self_port}", f"--web.config.file={web}",
                               f"--storage.tsdb.path={tmp_path / 'data'}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 60
        _wait_port(node, procs[0], deadline)
        _wait_port(self_port, procs[1], deadline)
        url = f"https://localhost:{self_port}/api/v1/targets"
        context = ssl.create_default_context(cafile=str(host / "ca.crt"))
        request = urllib.request.Request(url, headers={"Authorization": "Basic " + base64.b64encode(
            f"{account['username']}:{account['password']}".encode()).decode()})
        while True:
            with urllib.request.urlopen(request, context=context, timeout=10) as answer:
                targets = json.load(answer)["data"]["activeTargets"]
            health = {t["scrapeUrl"]: (t["health"], t["lastError"]) for t in targets}
            if (len(health) == 2 and all(h == "up" for h, _ in health.values())) or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert health == {f"https://localhost:{node}/metrics": ("up", ""),
                          f"https://localhost:{self_port}/metrics": ("up", "")}
        assert sorted((t["labels"] for t in targets), key=lambda t: t["job"]) == [labels["node"], labels["prometheus"]]
        assert labels["node"]["role"] == "gpu_client" and labels["node"]["exporter"] == "node_exporter"
        assert _get(f"https://localhost:{self_port}/api/v1/query?query=up", host / "ca.crt", None) == 401
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=20)
