"""A real cluster's description, read from what operators have at hand: the text of
``kafka-topics.sh --describe`` (Kafka 0.8 to 4.x, Confluent Server included) or a reassignment JSON.

The result is a :class:`ClusterDescription`: topics -> partitions, each with its replicas, leader,
ISR and the optional columns (``Offline:``, ``Observers:``/``LiveObservers:`` of Confluent Server,
``Adding Replicas:``/``Removing Replicas:`` of an ongoing reassignment, ``Elr:``/``LastKnownElr:``
of KIP-966), and each topic's ``Configs:``. ``sim.whatif`` builds a cluster from it.

What the parser accepts, as the tools wrote it over the years::

    Topic:t PartitionCount:1        ReplicationFactor:2     Configs:             (0.8-1.x headers)
    Topic: t        TopicId: AbC    PartitionCount: 1       ReplicationFactor: 2    Configs: min.insync.replicas=2
            Topic: t        Partition: 0    Leader: 1       Replicas: 1,2   Isr: 1,2
            topic: t        partition: 0    leader: none    replicas: 1,2   isr: 2     (0.8.0 kafka-list-topic.sh)
            Topic: t        Partition: 0    Leader: -1      Replicas: 1,2   Isr: 2     Offline: 1,2   Observers: 3

Columns may be separated by tabs or by spaces (outputs pasted into documents lose their tabs);
keys are matched without regard to case; ``Leader: none`` and ``Leader: -1`` both mean "no
leader". A ``Configs:`` list may be wrapped onto the following lines (as pasted in notes), and its
values may hold commas (``confluent.placement.constraints={...}``, throttled replica lists).
Lines starting with ``#`` are comments (``kcontroller describe`` writes its live brokers in one,
which is used); blank lines are skipped; every other line that is not understood — tool warnings,
prose, markdown fences, ``...`` — is counted and sampled in ``unparsed``, never fatal, unless
nothing at all parses: then :class:`DescriptionError` names the file and the first line.

A file may hold several runs of the tool pasted one after the other (before and after a failure):
a run ends where a topic it already described is described again. By default the *last*
description of each topic is used (the cluster as the last run saw it); ``run=k`` gives the
cluster as it stood after run ``k`` (the last description of each topic in runs 1..k). A reassignment JSON
(``kafka-reassign-partitions.sh`` files, or the "Current partition replica assignment" it prints)
is a description too: replicas only, ISR = replicas, leader = the first replica.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import structlog

from controller.admin_files import AdminFileError, parse_reassignment_json

_log = structlog.get_logger("kcontroller.sim")

FORMAT_DESCRIBE = "kafka-topics --describe"
FORMAT_REASSIGNMENT_JSON = "reassignment json"
UNPARSED_SAMPLE = 10

# "Key:" at the start of the line or after whitespace. Two-word keys are listed (a value such as
# "none" followed by a one-word key must not read as one key).
_KEY = re.compile(r"(?:(?<=\s)|^)(adding replicas|removing replicas|[A-Za-z][A-Za-z0-9_]*)[ \t]*:", re.IGNORECASE)
_CONFIGS = re.compile(r"(?:(?<=\s)|^)configs[ \t]*:", re.IGNORECASE)
_CONFIG_SPLIT = re.compile(r",(?=\s*[A-Za-z0-9_.\-]+=)")
_CONFIG_CONTINUATION = re.compile(r"^[A-Za-z0-9_.\-]+=\S*$")
_KCONTROLLER_HEADER = re.compile(r"^#\s*controller\s+\S+\s+epoch\s+-?\d+,\s*live brokers\s+([0-9,]+|none)")
_FENCE = re.compile(r"^\s*(```|~~~)")

_LIST_KEYS = {"replicas": "replicas", "isr": "isr", "offline": "offline", "observers": "observers",
              "liveobservers": "live_observers", "adding replicas": "adding_replicas",
              "removing replicas": "removing_replicas", "elr": "elr", "lastknownelr": "last_known_elr"}


class DescriptionError(ValueError):
    """A file in which nothing is a topic description (the message names the file and the line)."""


@dataclass
class PartitionDescription:
    """One partition line. ``leader`` is None for ``Leader: none`` / ``Leader: -1``. The optional
    columns are None when the line does not have them (``offline=()`` means an empty ``Offline:``)."""
    topic: str
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...] | None = None
    observers: tuple[int, ...] = ()
    live_observers: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    marked_for_deletion: bool = False
    isr_described: bool = True
    extra: dict[str, str] = field(default_factory=dict)
    line: int = 0

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def being_reassigned(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    def broker_ids(self) -> set[int]:
        ids = set(self.replicas) | set(self.isr) | set(self.observers) | set(self.adding_replicas)
        ids |= set(self.removing_replicas) | set(self.offline or ()) | set(self.live_observers or ())
        if self.leader is not None:
            ids.add(self.leader)
        return ids

    def to_json_dict(self) -> dict:
        out = {"partition": self.partition, "leader": self.leader, "replicas": list(self.replicas),
               "isr": list(self.isr)}
        for name in ("offline", "live_observers", "elr", "last_known_elr"):
            value = getattr(self, name)
            if value is not None:
                out[name] = list(value)
        for name in ("observers", "adding_replicas", "removing_replicas"):
            value = getattr(self, name)
            if value:
                out[name] = list(value)
        if self.marked_for_deletion:
            out["marked_for_deletion"] = True
        if self.extra:
            out["extra"] = dict(self.extra)
        return out


@dataclass
class TopicDescription:
    """A topic: its header (when the output had one) and its described partitions."""
    name: str
    topic_id: str | None = None
    partition_count: int | None = None
    replication_factor: int | None = None
    configs: dict[str, str] = field(default_factory=dict)
    partitions: dict[int, PartitionDescription] = field(default_factory=dict)
    marked_for_deletion: bool = False
    line: int = 0

    def to_json_dict(self) -> dict:
        return {"topic": self.name, "topic_id": self.topic_id, "partition_count": self.partition_count,
                "replication_factor": self.replication_factor, "configs": dict(self.configs),
                "partitions": [p.to_json_dict() for _, p in sorted(self.partitions.items())]}


@dataclass
class ClusterDescription:
    """What a describe output (or reassignment JSON) says about a cluster."""
    source: str
    format: str
    topics: dict[str, TopicDescription] = field(default_factory=dict)
    unparsed_count: int = 0
    unparsed_sample: list[tuple[int, str]] = field(default_factory=list)
    comment_lines: int = 0
    notes: list[str] = field(default_factory=list)
    live_brokers: tuple[int, ...] | None = None   # from a ``kcontroller describe`` header comment
    runs: int = 1                                 # describe runs found in the file
    run: int = 1                                  # the run whose state this is

    def partitions(self) -> list[PartitionDescription]:
        return [p for _, t in sorted(self.topics.items()) for _, p in sorted(t.partitions.items())]

    def broker_ids(self) -> list[int]:
        ids: set[int] = set()
        for p in self.partitions():
            ids |= p.broker_ids()
        return sorted(ids)

    def to_json_dict(self) -> dict:
        return {"source": self.source, "format": self.format, "brokers": self.broker_ids(),
                "live_brokers": None if self.live_brokers is None else list(self.live_brokers),
                "topics": [t.to_json_dict() for _, t in sorted(self.topics.items())],
                "runs": self.runs, "run": self.run,
                "unparsed": {"count": self.unparsed_count,
                             "sample": [{"line": n, "text": s} for n, s in self.unparsed_sample]},
                "notes": list(self.notes)}


# --- entry points ----------------------------------------------------------------------------------------
def load_description(path: str, run: int | None = None) -> ClusterDescription:
    """Read a describe output or a reassignment JSON from ``path`` (the format is detected)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    return parse_description(text, source=path, run=run)


def parse_description(text: str, source: str = "<describe>", run: int | None = None) -> ClusterDescription:
    """Detect the format: a text whose first significant line opens a JSON object is a reassignment
    JSON; otherwise a describe output, falling back to a JSON object embedded in tool output.
    ``run``: for a describe output holding several runs, the cluster after that run (1-based)."""
    first = _first_significant_line(text)
    if first is not None and first[1].lstrip().startswith("{"):
        if run not in (None, 1):
            raise DescriptionError(f"{source}: a reassignment JSON has a single run")
        return parse_reassignment_description(text, source)
    try:
        return parse_describe(text, source, run=run)
    except DescriptionError as describe_error:
        if _embedded_json_starts(text):
            try:
                if run not in (None, 1):
                    raise describe_error
                return parse_reassignment_description(text, source)
            except DescriptionError:
                pass
        raise describe_error from None


def parse_describe(text: str, source: str = "<describe>", run: int | None = None) -> ClusterDescription:
    """Parse ``kafka-topics.sh --describe`` output; see the module docstring for what is accepted.
    ``run`` (1-based) selects the cluster as it stood after that run of the tool (default: the last)."""
    return _DescribeParser(source).parse(text, run)


def parse_reassignment_description(text: str, source: str = "<reassignment>") -> ClusterDescription:
    """A reassignment JSON as a description: replicas only; ISR = replicas, leader = first replica.

    Comment (``#``) and markdown fence lines are ignored (they are blanked, so JSON errors name the
    file's own line numbers). In tool output holding several JSON documents, the one after "Current
    partition replica assignment" is used (the cluster as it is), else the first."""
    lines = text.splitlines()
    blanked = "\n".join("" if (ln.lstrip().startswith("#") or _FENCE.match(ln)) else ln for ln in lines)
    desc = ClusterDescription(source=source, format=FORMAT_REASSIGNMENT_JSON)
    desc.comment_lines = sum(1 for ln in lines if ln.lstrip().startswith("#"))
    candidates = _json_documents(blanked)
    if not candidates:
        raise DescriptionError(f"{source}: no JSON object found")
    chosen = candidates[0]
    for start, label, doc_text in candidates:
        if "current partition replica assignment" in label.lower():
            chosen = (start, label, doc_text)
            break
    start, _, doc_text = chosen
    if len(candidates) > 1:
        desc.notes.append(f"{len(candidates)} JSON documents in the file; the one at line {start + 1} is used")
    # Pad with the lines before it so that error positions are the file's.
    try:
        plan = parse_reassignment_json("\n" * start + doc_text, source)
    except AdminFileError as e:
        raise DescriptionError(str(e)) from None
    for (topic, partition), replicas in sorted(plan.items()):
        t = desc.topics.setdefault(topic, TopicDescription(topic, line=start + 1))
        t.partitions[partition] = PartitionDescription(topic, partition, replicas[0], tuple(replicas),
                                                       tuple(replicas), line=start + 1)
    for t in desc.topics.values():
        t.partition_count = len(t.partitions)
        rfs = {len(p.replicas) for p in t.partitions.values()}
        t.replication_factor = rfs.pop() if len(rfs) == 1 else None
    desc.notes.append("a reassignment JSON gives replicas only: ISR = replicas, leader = the first replica, "
                      "no topic configs")
    _log.debug("parsed reassignment json", source=source, topics=len(desc.topics),
               partitions=len(desc.partitions()))
    return desc


# --- helpers ---------------------------------------------------------------------------------------------
def _first_significant_line(text: str) -> tuple[int, str] | None:
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s and not s.startswith("#") and not _FENCE.match(line):
            return n, line
    return None


def _embedded_json_starts(text: str) -> bool:
    return any(line.lstrip().startswith("{") for line in text.splitlines())


def _json_documents(text: str) -> list[tuple[int, str, str]]:
    """(0-based line, the nearest non-blank line above it, the document's text) of every JSON object
    that starts a line and decodes."""
    decoder = json.JSONDecoder()
    lines = text.splitlines(keepends=True)
    offsets, pos = [], 0
    for line in lines:
        offsets.append(pos)
        pos += len(line)
    out: list[tuple[int, str, str]] = []
    n = 0
    while n < len(lines):
        stripped = lines[n].lstrip()
        if stripped.startswith("{"):
            begin = offsets[n] + (len(lines[n]) - len(stripped))
            try:
                _, end = decoder.raw_decode(text, begin)
            except (ValueError, RecursionError):   # not JSON, a number too long for int(), nesting too deep
                if not out:
                    # Keep the broken one: parse_reassignment_json reports where it breaks.
                    out.append((n, _label_above(lines, n), text[begin:]))
                    return out
                n += 1
                continue
            out.append((n, _label_above(lines, n), text[begin:end]))
            n = text.count("\n", 0, end) + 1
            continue
        n += 1
    return out


def _label_above(lines: list[str], n: int) -> str:
    for k in range(n - 1, -1, -1):
        if lines[k].strip():
            return lines[k].strip()
    return ""


def _int_list(value: str) -> tuple[int, ...] | None:
    """"1,2,3" -> (1, 2, 3); "" -> (); anything else None. Brackets and spaces are tolerated."""
    v = value.strip().strip("[]").strip()
    if not v:
        return ()
    out = []
    for item in v.split(","):
        item = item.strip()
        if not re.fullmatch(r"-?\d+", item):
            return None
        out.append(int(item))
    return tuple(out)


def parse_configs(text: str) -> dict[str, str]:
    """``a=1,b={"x":[1,2]},c=0:1,0:2`` -> {a: 1, b: {...}, c: 0:1,0:2}: a comma splits only before
    ``name=``."""
    out: dict[str, str] = {}
    text = text.strip().rstrip(",")
    if not text:
        return out
    for item in _CONFIG_SPLIT.split(text):
        name, sep, value = item.strip().partition("=")
        if sep and name:
            out[name.strip()] = value.strip()
    return out


class _DescribeParser:
    def __init__(self, source: str):
        self.source = source
        self.desc = ClusterDescription(source=source, format=FORMAT_DESCRIBE)
        self.current: TopicDescription | None = None
        self.config_text: str | None = None      # the Configs: text of the current header, while it may wrap
        self.history: list[tuple[int, TopicDescription]] = []   # (run, description) in file order
        self.run = 1
        self.in_run: set[str] = set()
        self.replaced_partitions = 0
        self.no_isr = 0
        self.parsed = 0

    def parse(self, text: str, run: int | None = None) -> ClusterDescription:
        desc = self.desc
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.rstrip("\r\n")
            stripped = line.strip()
            if not stripped:
                continue
            if stripped.startswith("#"):
                desc.comment_lines += 1
                m = _KCONTROLLER_HEADER.match(stripped)
                if m:
                    desc.live_brokers = () if m.group(1) == "none" else tuple(int(b) for b in m.group(1).split(","))
                continue
            if self._line(n, line, stripped):
                self.parsed += 1
            else:
                self.config_text = None
                desc.unparsed_count += 1
                if len(desc.unparsed_sample) < UNPARSED_SAMPLE:
                    desc.unparsed_sample.append((n, stripped))
        self._finish_configs()
        if not self.history:
            if desc.unparsed_sample:
                n, s = desc.unparsed_sample[0]
                raise DescriptionError(f"{self.source}:{n}: no kafka-topics.sh --describe line in the file "
                                       f"(first line not understood: {s[:120]!r})")
            raise DescriptionError(f"{self.source}: no kafka-topics.sh --describe line in the file (it is empty)")
        desc.runs = self.run
        if run is not None and not 1 <= run <= self.run:
            raise DescriptionError(f"{self.source}: run {run} asked, the file holds {self.run} describe run(s)")
        desc.run = self.run if run is None else run
        for r, topic in self.history:
            if r <= desc.run:
                desc.topics[topic.name] = topic      # a later description of a topic replaces an earlier one
        self._notes()
        _log.debug("parsed describe output", source=self.source, topics=len(desc.topics),
                   partitions=len(desc.partitions()), unparsed=desc.unparsed_count)
        return desc

    # --- one line ---
    def _line(self, n: int, line: str, stripped: str) -> bool:
        # A wrapped Configs list: "name=value,..." lines right after the header's Configs.
        if self.config_text is not None and _CONFIG_CONTINUATION.match(stripped) and not _KEY.search(stripped):
            sep = "" if not self.config_text.strip() or self.config_text.rstrip().endswith(",") else ","
            self.config_text = self.config_text.rstrip() + sep + stripped
            return True
        head, configs = line, None
        m = _CONFIGS.search(line)
        if m:
            head, configs = line[:m.start()], line[m.end():]
        fields = self._fields(head)
        if fields is None:
            return False
        keys = set(fields)
        if "partition" in keys and "leader" in keys and "replicas" in keys:
            if configs is not None:
                return False
            return self._partition(n, fields)
        if "partitioncount" in keys or "replicationfactor" in keys or (configs is not None and "topic" in keys):
            return self._header(n, fields, configs)
        if configs is not None and not keys and self.current is not None and not self.current.partitions:
            # "Configs: ..." on a line of its own (a header wrapped when pasted).
            self._finish_configs()
            self.config_text = configs
            return True
        return False

    def _fields(self, text: str) -> dict[str, str] | None:
        """{lower-case key: value} of the "Key: value" fields of a line; None if the line does not start
        with a field (prose that happens to contain a colon)."""
        matches = list(_KEY.finditer(text))
        if not matches:
            return {} if not text.strip() else None
        if text[:matches[0].start()].strip():
            return None
        out: dict[str, str] = {}
        for i, m in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
            key = " ".join(m.group(1).lower().split())
            if key in out:
                return None
            out[key] = text[m.end():end].strip()
        return out

    def _header(self, n: int, fields: dict[str, str], configs: str | None) -> bool:
        name = fields.get("topic", "")
        if not name or " " in name:
            return False
        count = fields.get("partitioncount")
        rf = fields.get("replicationfactor")
        if (count is not None and not count.isdigit()) or (rf is not None and not rf.isdigit()):
            return False
        self._finish_configs()
        topic = TopicDescription(name, topic_id=fields.get("topicid") or None,
                                 partition_count=int(count) if count is not None else None,
                                 replication_factor=int(rf) if rf is not None else None,
                                 marked_for_deletion=fields.get("markedfordeletion", "").lower() == "true", line=n)
        self._new_topic(n, topic)
        self.config_text = configs
        return True

    def _new_topic(self, n: int, topic: TopicDescription) -> None:
        if topic.name in self.in_run:           # described again: the tool was run again
            self.run += 1
            self.in_run = set()
        self.in_run.add(topic.name)
        self.history.append((self.run, topic))
        self.current = topic

    def _finish_configs(self) -> None:
        if self.config_text is not None and self.current is not None:
            self.current.configs.update(parse_configs(self.config_text))
        self.config_text = None

    def _partition(self, n: int, fields: dict[str, str]) -> bool:
        name = fields.get("topic") or (self.current.name if self.current is not None else "")
        if not name or " " in name:
            return False
        p = fields.get("partition", "")
        if not p.isdigit():
            return False
        leader_text = fields["leader"].strip().lower()
        if leader_text in ("none", "-1", ""):
            leader = None
        elif re.fullmatch(r"\d+", leader_text):
            leader = int(leader_text)
        else:
            return False
        lists: dict[str, tuple[int, ...]] = {}
        for key, attr in _LIST_KEYS.items():
            if key in fields:
                value = _int_list(fields[key])
                if value is None:
                    return False
                lists[attr] = value
        replicas = lists.pop("replicas", None)
        if not replicas:
            return False
        isr_described = "isr" in lists
        isr = lists.pop("isr", None)
        if isr is None:
            isr = replicas if leader is not None else ()
            self.no_isr += 1
        known = {"topic", "partition", "leader", "markedfordeletion", *_LIST_KEYS}
        extra = {k: v for k, v in fields.items() if k not in known}
        self._finish_configs()
        topic = self.current if self.current is not None and self.current.name == name else None
        if topic is None and name in self.in_run:
            topic = next(t for _, t in reversed(self.history) if t.name == name)
        if topic is None:      # no header (e.g. --under-replicated-partitions output)
            topic = TopicDescription(name, line=n)
            self._new_topic(n, topic)
        self.current = topic
        if int(p) in topic.partitions:
            self.replaced_partitions += 1
        topic.partitions[int(p)] = PartitionDescription(
            name, int(p), leader, replicas, isr, offline=lists.get("offline"), observers=lists.get("observers", ()),
            live_observers=lists.get("live_observers"), adding_replicas=lists.get("adding_replicas", ()),
            removing_replicas=lists.get("removing_replicas", ()), elr=lists.get("elr"),
            last_known_elr=lists.get("last_known_elr"),
            marked_for_deletion=fields.get("markedfordeletion", "").lower() == "true",
            isr_described=isr_described, extra=extra, line=n)
        return True

    def _notes(self) -> None:
        desc = self.desc
        if self.run > 1:
            starts = [next(t.line for r, t in self.history if r == k) for k in range(1, self.run + 1)]
            desc.notes.append(f"the file holds {self.run} describe runs (starting at lines "
                              f"{', '.join(map(str, starts))}); the cluster as it stood after run {desc.run} is used "
                              f"(the last description of each topic up to it)")
        later = sorted({t.name for r, t in self.history if r > desc.run} - set(desc.topics))
        if later:
            desc.notes.append(f"topic(s) described only after run {desc.run}, left out: {', '.join(later)}")
        if self.replaced_partitions:
            desc.notes.append(f"{self.replaced_partitions} partition line(s) repeated a partition already described; "
                              f"the later line is used")
        if self.no_isr:
            desc.notes.append(f"{self.no_isr} partition line(s) without an Isr column: ISR taken as the replicas")
        for name, t in sorted(desc.topics.items()):
            if not t.partitions:
                desc.notes.append(f"topic {name}: a header without partition lines (nothing to simulate)")
            elif t.partition_count is not None and t.partition_count != len(t.partitions):
                desc.notes.append(f"topic {name}: PartitionCount {t.partition_count} but {len(t.partitions)} "
                                  f"partition line(s); only the described partitions are simulated")
        if desc.unparsed_count:
            desc.notes.append(f"{desc.unparsed_count} line(s) not understood and skipped (first: line "
                              f"{desc.unparsed_sample[0][0]}: {desc.unparsed_sample[0][1][:80]!r})")
