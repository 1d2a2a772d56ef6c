from pathlib import Path
from stacks.program import run
run(Path(__file__).resolve().parent.parent / "blueprint.yaml")
