"""``python -m stacks.lab``: the lab's CLI without the rest of clustersmith (molecule uses it)."""

from stacks.lab.cli import lab

if __name__ == "__main__":
    lab(prog_name="python -m stacks.lab")
