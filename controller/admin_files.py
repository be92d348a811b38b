"""The JSON files Kafka's admin tools read, parsed with the tools' own checks.

* ``kafka-reassign-partitions.sh --execute|--cancel --reassignment-json-file FILE``::

      {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3],
                                     "log_dirs": ["any", "any", "any"]}]}

  (``log_dirs`` is optional; when given it must have one entry per replica.)
  :func:`format_reassignment_json` writes this form as the tool prints it (compact, ``log_dirs`` "any").
* ``kafka-reassign-partitions.sh --generate --topics-to-move-json-file FILE``::

      {"version": 1, "topics": [{"topic": "t"}]}

* ``kafka-leader-election.sh --path-to-json-file FILE``::

      {"partitions": [{"topic": "t", "partition": 0}]}

A file that is not what the tool expects raises :class:`AdminFileError` naming the file, the
line and column for JSON syntax errors, and the entry and field that are wrong. Files are read
as the tools read them, as UTF-8 (:func:`read_admin_file`); partitions and broker ids are Java
ints (int32), and the input is bounded: at most :data:`MAX_FILE_BYTES` bytes, JSON nested at
most :data:`MAX_DEPTH` deep, numbers of at most :data:`MAX_NUMBER_DIGITS` digits.
"""
from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Mapping

import numpy as np

ANY_LOG_DIR = "any"
MAX_FILE_BYTES = 256 * 2**20
MAX_DEPTH = 64
MAX_NUMBER_DIGITS = 32
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
         (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))


class AdminFileError(ValueError):
    """An admin-tool JSON file that the tool would reject."""


def read_admin_file(path: str) -> str:
    """The text of an admin-tool file: UTF-8 (a UTF-8 byte order mark is skipped), at most
    :data:`MAX_FILE_BYTES` bytes; AdminFileError naming the file otherwise."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise AdminFileError(f"cannot read {path}: {e.strerror or e}") from None
    return decode_admin_text(data, path)


def decode_admin_text(data: bytes, source: str) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise AdminFileError(f"{source}: larger than {MAX_FILE_BYTES} bytes")
    for bom, name in _BOMS:
        if data.startswith(bom):
            raise AdminFileError(f"{source}: the file is {name} (it starts with a {name} byte order mark); "
                                 f"expected UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise AdminFileError(f"{source}:{line}: byte {e.start} (0x{data[e.start]:02x}) is not UTF-8; "
                             f"expected a UTF-8 text file") from None


def _check_depth(text: str, source: str) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH (brackets outside strings), before the parser recurses."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    skeleton = _STRING.sub("", text).encode("utf-8", "surrogatepass")
    codes = np.frombuffer(skeleton, dtype=np.uint8)
    steps = (np.isin(codes, (0x5B, 0x7B)).astype(np.int32) - np.isin(codes, (0x5D, 0x7D)).astype(np.int32))
    if steps.size and int(np.cumsum(steps).max()) > MAX_DEPTH:
        raise AdminFileError(f"{source}: JSON nested more than {MAX_DEPTH} deep; expected a \"partitions\" array "
                             "of objects")


def _parse_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise AdminFileError(f"a number of {len(digits.lstrip('-'))} digits (at most {MAX_NUMBER_DIGITS})")
    return int(digits)


def _parse_float(text: str) -> float:
    if len(text) > MAX_NUMBER_DIGITS * 2:
        raise AdminFileError(f"a number of {len(text)} characters (at most {MAX_NUMBER_DIGITS * 2})")
    return float(text)


def _parse_constant(name: str):
    raise AdminFileError(f"{name} is not JSON")


def _load(text: str | bytes, source: str, key: str = "partitions") -> dict:
    if isinstance(text, (bytes, bytearray)):
        text = decode_admin_text(bytes(text), source)
    _check_depth(text, source)
    try:
        doc = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except json.JSONDecodeError as e:
        raise AdminFileError(f"{source}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    except AdminFileError as e:
        raise AdminFileError(f"{source}: {e}") from None
    except RecursionError:  # the depth check makes this unreachable; kept as a last guard
        raise AdminFileError(f"{source}: JSON nested too deeply") from None
    if not isinstance(doc, dict):
        raise AdminFileError(f"{source}: expected a JSON object with a \"{key}\" array")
    if not isinstance(doc.get(key), list):
        raise AdminFileError(f"{source}: expected a \"{key}\" array")
    return doc


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _topic_partition(entry, where: str) -> tuple[str, int]:
    if not isinstance(entry, dict):
        raise AdminFileError(f"{where}: expected an object with \"topic\" and \"partition\"")
    topic, partition = entry.get("topic"), entry.get("partition")
    if not isinstance(topic, str) or not topic:
        raise AdminFileError(f"{where}: \"topic\" must be a non-empty string")
    if not _is_int(partition) or not 0 <= partition <= INT32_MAX:
        raise AdminFileError(f"{where}: \"partition\" must be a non-negative integer (at most {INT32_MAX}), "
                             f"got {partition!r:.40}")
    return topic, partition


def parse_reassignment_json(text: str | bytes, source: str = "<reassignment>") -> dict[tuple, tuple[int, ...]]:
    """{(topic, partition): target replicas} from a reassignment file (ReassignPartitionsCommand's checks)."""
    return parse_reassignment_file(text, source)[0]


def parse_reassignment_file(text: str | bytes, source: str = "<reassignment>"
                            ) -> tuple[dict[tuple, tuple[int, ...]], dict[tuple[str, int, int], str]]:
    """The target replicas of a reassignment file, and {(topic, partition, broker): log dir} of the replicas
    whose ``log_dirs`` entry is not "any" (the moves between log directories the file asks for)."""
    doc = _load(text, source)
    version = doc.get("version", 1)
    if version != 1:
        raise AdminFileError(f"{source}: unsupported reassignment file version {version!r} (expected 1)")
    out: dict[tuple, tuple[int, ...]] = {}
    dirs: dict[tuple[str, int, int], str] = {}
    for i, entry in enumerate(doc["partitions"]):
        where = f"{source}: partitions[{i}]"
        tp = _topic_partition(entry, where)
        replicas = entry.get("replicas")
        if not isinstance(replicas, list) or not all(_is_int(r) and INT32_MIN <= r <= INT32_MAX for r in replicas):
            raise AdminFileError(f"{where}: \"replicas\" must be a list of broker ids (integers in "
                                 f"{INT32_MIN}..{INT32_MAX})")
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
            dirs.update(((*tp, r), d) for r, d in zip(replicas, log_dirs) if d != ANY_LOG_DIR)
        if tp in out:
            raise AdminFileError(f"{where}: Partition reassignment contains duplicate topic partitions: "
                                 f"{tp[0]}-{tp[1]}")
        out[tp] = tuple(replicas)
    if not out:
        raise AdminFileError(f"{source}: Partition reassignment list cannot be empty")
    return out, dirs


def format_reassignment_json(assignment: Mapping[tuple, Iterable[int]]) -> str:
    """ReassignPartitionsCommand.formatAsReassignmentJson: the partitions in (topic, partition) order, each
    with ``log_dirs`` "any", as Jackson writes it (no spaces); a file --execute reads back."""
    partitions = [{"topic": t, "partition": p, "replicas": list(replicas),
                   "log_dirs": [ANY_LOG_DIR] * len(list(replicas))}
                  for (t, p), replicas in sorted((tp, tuple(r)) for tp, r in assignment.items())]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"), ensure_ascii=False)


def parse_topics_to_move_json(text: str | bytes, source: str = "<topics-to-move>") -> list[str]:
    """The topics of a ``--topics-to-move-json-file`` (ReassignPartitionsCommand.parseTopicsData, then its
    duplicate check), in file order."""
    doc = _load(text, source, key="topics")
    version = doc.get("version", 1)
    if version != 1:
        raise AdminFileError(f"{source}: Not supported version field value {version!r:.40}")
    topics: list[str] = []
    for i, entry in enumerate(doc["topics"]):
        topic = entry.get("topic") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or not topic:
            raise AdminFileError(f"{source}: topics[{i}]: expected an object with \"topic\", a non-empty string")
        topics.append(topic)
    if not topics:
        raise AdminFileError(f"{source}: the \"topics\" array is empty; name at least one topic to move")
    duplicates = sorted({t for t in topics if topics.count(t) > 1}) if len(set(topics)) != len(topics) else []
    if duplicates:
        raise AdminFileError(f"{source}: List of topics to reassign contains duplicate entries: "
                             f"[{', '.join(duplicates)}]")
    return topics


def parse_election_json(text: str | bytes, source: str = "<election>") -> list[tuple[str, int]]:
    """The partitions of a ``kafka-leader-election.sh --path-to-json-file`` file."""
    doc = _load(text, source)
    out: list[tuple[str, int]] = []
    seen: set = set()
    for i, entry in enumerate(doc["partitions"]):
        tp = _topic_partition(entry, f"{source}: partitions[{i}]")
        if tp in seen:
            raise AdminFileError(f"{source}: Replication election data contains duplicate partitions: "
                                 f"{tp[0]}-{tp[1]}")
        seen.add(tp)
        out.append(tp)
    return out
