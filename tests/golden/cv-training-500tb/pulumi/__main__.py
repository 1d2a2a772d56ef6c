from pathlib import Path
from stacks.program import run
# Not resolved: this file is a link into .generated/, and the files the user edits (machines.yaml, the stack's
# config) are real files beside the link, in the build folder's pulumi/ (blueprints/render/editable.py).
run(Path(__file__).absolute().parent.parent / "blueprint.yaml")
