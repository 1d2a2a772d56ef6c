"""``clustersmith deploy out/<name>``: provision, inventory, configure, accept — in that order.

Steps (each recorded in ``out/<name>/deploy/state.json``, so a rerun resumes after the last step that
finished; ``--skip`` leaves a step out, ``--redo`` runs a finished one again):

1. ``up``: ``pulumi up`` of ``out/<name>/pulumi`` through the Automation API (the Pulumi CLI must be on
   PATH and the target's credentials present); the ``clustersmith`` output goes to ``deploy/outputs.json``;
2. ``inventory``: ``deploy/outputs.json`` (or ``--outputs FILE``), the fleets' instances named through the
   provider API (``stacks.fleet_inventory``) -> ``ansible/inventory.yml``;
3. ``site``: ``ansible/site.yml`` through ansible-runner, with the repository's roles and ansible.cfg;
4. ``accept``: ``clustersmith accept out/<name>``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from blueprints import atomic
from blueprints.blueprint import Blueprint, load_blueprint
from blueprints.errors import ClusterSmithError, Problem
from stacks import inventory
from stacks.outputs import OUTPUT_NAME

STEPS = ("up", "inventory", "site", "accept")
Step = Literal["up", "inventory", "site", "accept"]
REPO = Path(__file__).resolve().parent.parent

# where each target's SDK looks for credentials (environment variables, then files under $HOME)
CREDENTIALS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "aws": (("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
             "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"),
            (".aws/credentials", ".aws/config")),
    "gcp": (("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CREDENTIALS", "GOOGLE_OAUTH_ACCESS_TOKEN",
             "CLOUDSDK_AUTH_ACCESS_TOKEN"), (".config/gcloud/application_default_credentials.json",)),
    "azure": (("ARM_CLIENT_ID", "AZURE_CLIENT_ID", "ARM_USE_MSI", "ARM_USE_OIDC"), (".azure/azureProfile.json",)),
}


class DeployError(ClusterSmithError):
    """A deploy step could not run or failed; the message says which and what to do."""


def deploy_error(step: str, message: str, folder: Path) -> DeployError:
    return DeployError([Problem(f"deploy.{step}", message)], str(folder), f"deploy step {step!r} failed")


class StepState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Literal["done", "failed", "skipped"]
    at: str
    detail: str = ""


class DeployState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    design: str
    steps: dict[str, StepState] = Field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, design: str) -> DeployState:
        if path.is_file():
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        return cls(design=design)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write(path, self.model_dump_json(indent=2))

    def record(self, step: str, status: Literal["done", "failed", "skipped"], detail: str = "") -> None:
        self.steps[step] = StepState(status=status, at=datetime.now(UTC).isoformat(timespec="seconds"),
                                     detail=detail)

    def done(self, step: str) -> bool:
        s = self.steps.get(step)
        return s is not None and s.status == "done"


class DeployOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    stack: str | None = None
    skip: tuple[str, ...] = ()
    redo: tuple[str, ...] = ()
    outputs: Path | None = None
    ssh_public_key: Path | None = None
    credential_check: bool = True


PULUMI_MISSING = ("the Pulumi CLI is not installed: `pulumi` is not on PATH. Install it "
                  "(https://www.pulumi.com/docs/install/) and log in to a backend (`pulumi login`, or "
                  "`pulumi login --local`)")


def check_pulumi_cli(folder: Path) -> str:
    found = shutil.which("pulumi")
    if found is None:
        raise deploy_error("up", f"{PULUMI_MISSING}, or skip provisioning with --skip up", folder)
    return found


def check_credentials(bp: Blueprint, folder: Path, env: Mapping[str, str], home: Path) -> None:
    provider = bp.target.provider
    if provider == "baremetal":
        if bp.target.machines == "maas" and not env.get("MAAS_API_KEY"):
            raise deploy_error("up", "no MAAS credentials: set MAAS_API_KEY (deploy stores it as the secret "
                               "clustersmith:maasApiKey)", folder)
        return
    names, files = CREDENTIALS[provider]
    if any(env.get(n) for n in names) or any((home / f).is_file() for f in files):
        return
    raise deploy_error("up", f"no {provider} credentials found: none of the environment variables "
                       f"{', '.join(names)} is set and none of ~/{', ~/'.join(files)} exists. Log in with the "
                       f"{provider} CLI or export credentials; where the machine's own role provides them, pass "
                       "--no-credential-check", folder)


def step_up(bp: Blueprint, folder: Path, opts: DeployOptions, state_dir: Path, log: Callable[[str], None]) -> str:
    check_pulumi_cli(folder)
    if opts.credential_check:
        check_credentials(bp, folder, os.environ, Path.home())
    from pulumi import automation as auto

    work_dir = folder / "pulumi"
    stack_name = opts.stack or bp.name
    env = {"PULUMI_PYTHON_CMD": sys.executable}
    try:
        stack = auto.create_or_select_stack(stack_name=stack_name, work_dir=str(work_dir),
                                            opts=auto.LocalWorkspaceOptions(work_dir=str(work_dir), env_vars=env))
        if opts.ssh_public_key is not None:
            key = opts.ssh_public_key.read_text(encoding="utf-8").strip()
            stack.set_config("clustersmith:sshPublicKey", auto.ConfigValue(value=key))
        if os.environ.get("MAAS_API_KEY"):
            stack.set_config("clustersmith:maasApiKey", auto.ConfigValue(value=os.environ["MAAS_API_KEY"],
                                                                         secret=True))
        result = stack.up(on_output=log)
    except FileNotFoundError:
        check_pulumi_cli(folder)  # the CLI vanished between the check and the run
        raise
    except auto.CommandError as exc:
        raise deploy_error("up", f"pulumi up failed: {str(exc).strip()[-2000:]}", folder) from None
    if OUTPUT_NAME not in result.outputs:
        raise deploy_error("up", f"the stack exported no {OUTPUT_NAME!r} output", folder)
    state_dir.mkdir(parents=True, exist_ok=True)
    parsed = inventory.parse_outputs(result.outputs[OUTPUT_NAME].value, f"stack {stack_name}")
    (state_dir / "outputs.json").write_text(parsed.model_dump_json(indent=2), encoding="utf-8")
    return f"stack {stack_name}: {result.summary.result}"


def step_inventory(folder: Path, opts: DeployOptions, state_dir: Path) -> str:
    source = opts.outputs or state_dir / "outputs.json"
    if not source.is_file():
        raise deploy_error("inventory", f"no stack outputs at {source}: run the 'up' step, or pass --outputs "
                           "FILE (from `pulumi stack output --json`)", folder)
    outputs = inventory.with_fleet_hosts(inventory.read_outputs_file(source), str(source))
    path = inventory.write(outputs, folder)
    return f"{len(outputs.hosts)} hosts -> {path}"


def step_site(folder: Path, state_dir: Path) -> str:
    import ansible_runner

    site, inv = folder / "ansible" / "site.yml", folder / "ansible" / "inventory.yml"
    for needed in (site, inv):
        if not needed.is_file():
            raise deploy_error("site", f"{needed} does not exist (build the spec; run the 'inventory' step)",
                               folder)
    env = {"ANSIBLE_ROLES_PATH": str(REPO / "roles")}
    if (REPO / "ansible.cfg").is_file():
        env["ANSIBLE_CONFIG"] = str(REPO / "ansible.cfg")
    runner = ansible_runner.run(private_data_dir=str(state_dir / "runner"), playbook=str(site.resolve()),
                                inventory=str(inv.resolve()), envvars=env, quiet=False)
    if runner.rc != 0 or runner.status != "successful":
        raise deploy_error("site", f"site.yml ended {runner.status} (rc {runner.rc}); the run's events are in "
                           f"{state_dir / 'runner'}", folder)
    return f"site.yml {runner.status}"


def step_accept(folder: Path) -> str:
    run = subprocess.run([sys.executable, "-m", "validators", "accept", str(folder)], check=False)
    if run.returncode != 0:
        raise deploy_error("accept", f"clustersmith accept exited {run.returncode} (1: a check failed; 2: bad "
                           f"input); reports are under {folder / 'acceptance'}", folder)
    return "every acceptance check passed"


def deploy(folder: Path, opts: DeployOptions, log: Callable[[str], None] = print) -> DeployState:
    """Run the steps not yet done (and not skipped), recording each; stop at the first that fails."""
    bp = load_blueprint(folder)
    unknown = [s for s in (*opts.skip, *opts.redo) if s not in STEPS]
    if unknown:
        raise ClusterSmithError([Problem("--skip/--redo", f"unknown step {s!r}; expected one of {', '.join(STEPS)}",
                                         value=s) for s in unknown], str(folder), "invalid deploy options")
    if bp.target.provider == "lab":
        raise ClusterSmithError([Problem("target.provider", "the lab is not deployed with Pulumi; use "
                                         "`clustersmith lab up` and then site.yml")], str(folder), "invalid target")
    state_dir = folder / "deploy"
    state_path = state_dir / "state.json"
    state = DeployState.load(state_path, bp.name)
    for step in STEPS:
        if step in opts.skip:
            log(f"{step}: skipped (--skip)")
            if not state.done(step):
                state.record(step, "skipped", "--skip")
            state.save(state_path)
            continue
        if state.done(step) and step not in opts.redo:
            log(f"{step}: done earlier ({state.steps[step].at}), not run again (--redo {step} to rerun)")
            continue
        log(f"{step}: running")
        try:
            if step == "up":
                detail = step_up(bp, folder, opts, state_dir, log)
            elif step == "inventory":
                detail = step_inventory(folder, opts, state_dir)
            elif step == "site":
                detail = step_site(folder, state_dir)
            else:
                detail = step_accept(folder)
        except ClusterSmithError as exc:
            state.record(step, "failed", str(exc))
            state.save(state_path)
            raise
        state.record(step, "done", detail)
        state.save(state_path)
        log(f"{step}: done ({detail})")
    return state
