"""The JSON files Kafka's admin tools read, parsed with the tools' own checks.

* ``kafka-reassign-partitions.sh --execute|--cancel --reassignment-json-file FILE``::

      {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3],
                                     "log_dirs": ["any", "any", "any"]}]}

  (``log_dirs`` is optional; when given it must have one entry per replica.)
* ``kafka-leader-election.sh --path-to-json-file FILE``::

      {"partitions": [{"topic": "t", "partition": 0}]}

A file that is not what the tool expects raises :class:`AdminFileError` naming the file, the
line and column for JSON syntax errors, and the entry and field that are wrong.
"""
from __future__ import annotations

import json


class AdminFileError(ValueError):
    """An admin-tool JSON file that the tool would reject."""


def _load(text: str, source: str) -> dict:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise AdminFileError(f"{source}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    if not isinstance(doc, dict):
        raise AdminFileError(f"{source}: expected a JSON object with a \"partitions\" array")
    partitions = doc.get("partitions")
    if not isinstance(partitions, list):
        raise AdminFileError(f"{source}: expected a \"partitions\" array")
    return doc


def _topic_partition(entry, where: str) -> tuple[str, int]:
    if not isinstance(entry, dict):
        raise AdminFileError(f"{where}: expected an object with \"topic\" and \"partition\"")
    topic, partition = entry.get("topic"), entry.get("partition")
    if not isinstance(topic, str) or not topic:
        raise AdminFileError(f"{where}: \"topic\" must be a non-empty string")
    if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
        raise AdminFileError(f"{where}: \"partition\" must be a non-negative integer")
    return topic, partition


def parse_reassignment_json(text: str, source: str = "<reassignment>") -> dict[tuple, tuple[int, ...]]:
    """{(topic, partition): target replicas} from a reassignment file (ReassignPartitionsCommand's checks)."""
    doc = _load(text, source)
    version = doc.get("version", 1)
    if version != 1:
        raise AdminFileError(f"{source}: unsupported reassignment file version {version!r} (expected 1)")
    out: dict[tuple, tuple[int, ...]] = {}
    for i, entry in enumerate(doc["partitions"]):
        where = f"{source}: partitions[{i}]"
        tp = _topic_partition(entry, where)
        replicas = entry.get("replicas")
        if (not isinstance(replicas, list)
                or not all(isinstance(r, int) and not isinstance(r, bool) for r in replicas)):
            raise AdminFileError(f"{where}: \"replicas\" must be a list of broker ids")
        if not replicas:
            raise AdminFileError(f"{where}: Partition replica list cannot be empty")
        if len(set(replicas)) != len(replicas):
            raise AdminFileError(f"{where}: Partition replica lists may not contain duplicate entries: "
                                 f"{tp[0]}-{tp[1]} contains {replicas}")
        log_dirs = entry.get("log_dirs")
        if log_dirs is not None:
            if not isinstance(log_dirs, list) or not all(isinstance(d, str) for d in log_dirs):
                raise AdminFileError(f"{where}: \"log_dirs\" must be a list of strings")
            if len(log_dirs) != len(replicas):
                raise AdminFileError(f"{where}: Size of replicas list {replicas} is different from size of log "
                                     f"dirs list {log_dirs} for partition {tp[0]}-{tp[1]}")
        if tp in out:
            raise AdminFileError(f"{where}: Partition reassignment contains duplicate topic partitions: "
                                 f"{tp[0]}-{tp[1]}")
        out[tp] = tuple(replicas)
    if not out:
        raise AdminFileError(f"{source}: Partition reassignment list cannot be empty")
    return out


def parse_election_json(text: str, source: str = "<election>") -> list[tuple[str, int]]:
    """The partitions of a ``kafka-leader-election.sh --path-to-json-file`` file."""
    doc = _load(text, source)
    out: list[tuple[str, int]] = []
    for i, entry in enumerate(doc["partitions"]):
        tp = _topic_partition(entry, f"{source}: partitions[{i}]")
        if tp in out:
            raise AdminFileError(f"{source}: Replication election data contains duplicate partitions: "
                                 f"{tp[0]}-{tp[1]}")
        out.append(tp)
    return out
