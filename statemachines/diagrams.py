"""Mermaid diagrams of both state machines, drawn from the legal-transition tables in ``states``.

``docs/state-machines.md`` embeds them between generated-block markers; a test fails when the
committed diagrams differ from what the tables give. Regenerate with::

    python -m statemachines.diagrams --write docs/state-machines.md
"""
from __future__ import annotations

import argparse
import sys

from statemachines.states import PARTITION_LEGAL, REPLICA_LEGAL, PartitionState, ReplicaState

BEGIN = "<!-- BEGIN GENERATED: {name} (python -m statemachines.diagrams --write docs/state-machines.md) -->"
END = "<!-- END GENERATED: {name} -->"


def mermaid(enum_cls, legal: frozenset, initial: str) -> str:
    """A mermaid stateDiagram-v2 with one edge per legal (from, to) pair, in declaration order."""
    order = [m.value for m in enum_cls]
    lines = ["```mermaid", "stateDiagram-v2", f"    [*] --> {initial}"]
    for src in order:
        for dst in order:
            if (src, dst) in legal:
                lines.append(f"    {src} --> {dst}")
    lines.append("```")
    return "\n".join(lines)


def diagrams() -> dict[str, str]:
    return {
        "replica-state-machine": mermaid(ReplicaState, REPLICA_LEGAL, ReplicaState.NonExistentReplica.value),
        "partition-state-machine": mermaid(PartitionState, PARTITION_LEGAL, PartitionState.NonExistentPartition.value),
    }


def render_into(text: str) -> str:
    """Replace every generated block in ``text`` with the current diagram."""
    for name, body in diagrams().items():
        begin, end = BEGIN.format(name=name), END.format(name=name)
        try:
            head, rest = text.split(begin, 1)
            _, tail = rest.split(end, 1)
        except ValueError:
            raise ValueError(f"markers for {name} not found: expected a line {begin!r} and a line {end!r}") from None
        text = f"{head}{begin}\n{body}\n{end}{tail}"
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Print or update the state machine diagrams.")
    ap.add_argument("--write", metavar="MARKDOWN", help="update the generated blocks of this file in place")
    args = ap.parse_args(argv)
    if args.write:
        with open(args.write, encoding="utf-8") as f:
            text = f.read()
        new = render_into(text)
        if new != text:
            with open(args.write, "w", encoding="utf-8") as f:
                f.write(new)
        return 0
    for name, body in diagrams().items():
        print(f"{name}:\n{body}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
