"""The ZooKeeper-era meaning of Kafka's log lines, behind ``audit.kafka_text_logs``: log lines in, audit rows out.

:class:`KafkaLogReader` reads the *items* of one file (or of several read as one: a rotated set, brokers'
files merged by time) that ``audit.log_layouts`` made of its lines, whatever their layout: each log
line's timestamp, level, logger and message (split into its ident prefix and body), continuation lines,
blank and unknown lines. It tells what the prefix means and dispatches the body on its first word to
the few templates that may match it (``audit.kafka_line_patterns``): a line becomes rows, or is a known
line that makes none, or is counted and sampled as not understood. The reader keeps what later lines need: the last
epoch of each controller id, the controller that last took over (for lines that name none), each
partition's last known ISR (to tell an unclean election), and, per stream (a container of a
docker-compose or Kubernetes log), a row waiting for its next line (a failure for its exception class,
an unclean-election warning for the selector's result). It also collects the evidence of the Kafka era
the file comes from.

The KRaft era's meaning is not here: a KRaft broker's ``state.change.logger`` lines go to
:class:`audit.kraft_broker_lines.KraftBrokerLines` and the QuorumController's to
:class:`audit.kraft_controller_lines.KraftControllerLines`, which make :class:`audit.kraft_rows.KraftRow`
rows (``reading.kraft_rows``; kept for files with KRaft evidence only, since ZooKeeper-mode brokers of 3.x
print the same Leader/Follower lines).
"""
from __future__ import annotations

import calendar
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from audit import kafka_line_patterns as pat
from audit.kraft_broker_lines import KEYS as _KRAFT_BROKER_KEYS
from audit.kraft_broker_lines import KraftBrokerLines
from audit.kraft_controller_lines import KraftControllerLines
from audit.kraft_rows import KraftRow
from audit.log_layouts import BLANK, CONT, LOG, PART, LineSplitter
from audit.rows import CONTROLLER_ELECTED, PARTITION_TRANSITION, REPLICA_TRANSITION, TOPIC_CREATED, AuditRow
from audit.zk_controller_lines import ROW_TEMPLATES as _ROW_TEMPLATES
from audit.zk_controller_lines import ZkControllerLines
from statemachines.states import PartitionState

ERA_0_8 = "0.8-0.11"   # no prefix; "Controller N epoch E ..." in the message; partitions as [t,0]
ERA_1_0 = "1.0-2.5"    # "[Controller id=N epoch=E]" prefix; TRACE-level state-change.log by default
ERA_2_6 = "2.6+"       # INFO-level state-change.log by default: no per-replica lines
ERA_KRAFT = "kraft"    # QuorumController / KRaft broker lines: KRaft rows (audit.kraft_rows), no state machines
_ERA_ORDER = (ERA_0_8, ERA_1_0, ERA_2_6)

SAMPLE_SIZE = 10
_NEW = PartitionState.NewPartition.byte
_NON_EXISTENT = PartitionState.NonExistentPartition.byte
# What a logger says about its lines (see _logger_class).
_L_CONTROLLER, _L_KRAFT, _L_ELECTOR, _L_OTHER = 0, 1, 2, 3
_KEYS: dict[str, str] = {}   # a message's first word -> its dispatch key (pat.dispatch_key), remembered
_KRAFT_STATE_CHANGE_KEYS = pat.KRAFT_STATE_CHANGE_KEYS
_EARLY_KRAFT_LINES = 100_000   # broker lines kept while a file has shown no KRaft evidence yet
_SINCE_2_6_KEYS = pat.SINCE_2_6_KEYS
_SINCE_2_6, _KRAFT_STATE_CHANGE = pat.SINCE_2_6.match, pat.KRAFT_STATE_CHANGE.match
_KNOWN_BY_KEY = pat.KNOWN_BY_KEY
_KNOWN_MATCH = {key: known.match for key, known in _KNOWN_BY_KEY.items()}
_EMBEDDED_CONTROLLER = pat.EMBEDDED_CONTROLLER.match
# The KRaft readers a line may go to (see KafkaLogReader._route): none, KRaft's broker (a broker's
# state.change.logger line), none but a state.change.logger line, KRaft's controller.
_F_KRAFT_BROKER, _F_STATE_CHANGE, _F_KRAFT_CONTROLLER = 1, 2, 3
_ELECTOR = ("elector",)                  # the templates of the 0.8–0.10 elector's lines: _elector_line's
_ROW, _OTHER, _NOT_UNDERSTOOD = "row", "other", "not_understood"
_new_row = tuple.__new__                 # AuditRow(...) without the Python call of its generated __new__


@dataclass
class LineCounts:
    """How the lines of a file were read; every line is counted in exactly one field."""
    rows: int = 0            # understood, and became one or more audit rows
    other: int = 0           # understood controller/broker/KRaft line that makes no row
    continuation: int = 0    # stack-trace or multi-line message continuation (or a partial line)
    header: int = 0          # header ('#') and blank lines
    not_understood: int = 0

    @property
    def total(self) -> int:
        return self.rows + self.other + self.continuation + self.header + self.not_understood


@dataclass
class KafkaLogReading:
    """What one file (or one set of files read as one) said: its rows, how its lines were read, what kind
    of log it is."""
    path: str
    run_id: str
    rows: list[AuditRow]
    counts: LineCounts
    not_understood_sample: list[tuple[int, str]]   # (line number, line), the first SAMPLE_SIZE
    era: str | None                                # ERA_* or None when nothing told
    kraft: bool                                    # KRaft lines seen: no controller state machines here
    is_log4j: bool                                 # any line in a known log layout at all
    version_hints: tuple[str, ...] = ()            # finer version evidence ("0.8.0", "3.5+", ...)
    notes: tuple[str, ...] = field(default_factory=tuple)
    layouts: dict[str, int] = field(default_factory=dict)   # log lines per layout ("kafka", "compose+strimzi")
    sources: tuple[str, ...] = ()                  # the files read, in reading order (when more than one)
    kraft_rows: list[KraftRow] = field(default_factory=list)   # KRaft-era files: what their lines said

    @property
    def understood(self) -> bool:
        """Whether any line was understood: a log line (row or not) or a continuation of one."""
        c = self.counts
        return bool(c.rows or c.other or c.continuation)


class KafkaLogReader(ZkControllerLines):
    """Streams one file's rows (:meth:`rows`); afterwards :meth:`reading` tells the rest.

    ``lines`` are the file's text lines; or give ``items`` (``audit.log_layouts`` items, e.g. several
    files chained or merged, with the ``splitter`` that made them) instead."""
    __slots__ = ("path", "run_id", "sources", "sample_size", "counts", "sample", "_splitter", "_items", "_eras",
                 "_hints", "_kraft_lines", "_state_change_lines", "_dialect_080", "_epochs", "_isr", "_tps",
                 "_existing", "_active", "_pending", "_pending_kind", "_awaiting_exception", "_stream", "_parked",
                 "_minute_ms", "_ts", "_idents", "_routes", "_item", "_cid", "_epoch", "_out", "_made_row", "_kraft_rows",
                 "_kraft_broker", "_kraft_controller", "_kraft_row_lines", "_kraft_counted", "_kraft_early")

    def __init__(self, path: str, lines: Iterable[str] | None, *, run_id: str, sample_size: int = SAMPLE_SIZE,
                 items: Iterable[tuple] | None = None, splitter: LineSplitter | None = None,
                 sources: tuple[str, ...] = ()):
        self.path = path
        self.run_id = run_id
        self._splitter = splitter or LineSplitter()
        self._items = items if items is not None else self._splitter.split(lines, path)
        self.sources = sources
        self.sample_size = sample_size
        self.counts = LineCounts()
        self.sample: list[tuple[int, str]] = []
        self._eras = {ERA_0_8: 0, ERA_1_0: 0, ERA_2_6: 0}   # era -> whether (how many) lines told it
        self._hints: set[str] = set()
        self._kraft_lines = 0
        self._state_change_lines = 0
        self._dialect_080 = False              # Kafka 0.8.0 quirks seen (see _on_partition_leader)
        self._epochs: dict[int, int] = {}      # controller id -> last epoch seen in the file
        self._isr: dict[tuple[str, int], list[int] | str] = {}   # partition -> last known ISR (or state text)
        self._tps: dict[str, tuple[str, int]] = {}   # partition as printed -> (topic, partition)
        self._existing: dict[str, set[int]] = {}   # topic -> partitions whose last state is not NonExistent
        self._active: int | None = None        # the controller that last took over, for ident-less lines
        self._pending: AuditRow | None = None  # a row waiting for its next line (exception, selector)
        self._pending_kind: str | None = None
        self._awaiting_exception = False
        self._stream = None                    # the stream of the line being read
        self._parked: dict = {}                # stream -> its (pending, kind, awaiting) while others are read
        self._minute_ms: dict[str, int] = {}    # "yyyy-MM-dd HH:mm" and "yyyy-MM-dd HH:mm:ss" -> ms
        self._ts: dict[str, int | None] = {}    # a whole timestamp -> ms (rows of one line, or of a burst, share it)
        self._idents: dict = {}                # ident prefix -> (role, controller id, epoch)
        self._routes: dict = {}                # (ident, logger as printed, first word) -> what they decide
        # Context of the log line being read.
        self._item: tuple = (LOG, 0, path, 0, "", None, None, None, None, None, None, "")   # the log line being read
        self._cid = -1
        self._epoch = -1
        self._out: list[AuditRow] = []
        self._made_row = False
        # The KRaft era's meaning, in modules of its own (audit.kraft_broker_lines, audit.kraft_controller_lines).
        self._kraft_rows: list[KraftRow] = []
        self._kraft_broker = KraftBrokerLines(self._kraft_rows)
        self._kraft_controller = KraftControllerLines(self._kraft_rows)
        self._kraft_row_lines = 0              # lines that made KRaft rows (counted as "other" until the end)
        self._kraft_counted = False
        # Broker lines seen before any KRaft evidence (ZooKeeper-mode 3.x brokers print the same Leader lines):
        # read only once the file turns out to be KRaft's (the batch line that tells it comes first as a rule).
        self._kraft_early: list = []

    # --- driving -------------------------------------------------------------------------------
    def rows(self) -> Iterator[AuditRow]:
        out = self._out
        counts = self.counts
        for item in self._items:
            kind = item[0]
            if item[9] is not self._stream and item[9] != self._stream and kind <= CONT:
                self._switch_stream(item[9])
            if kind == LOG:
                self._log_line(item)
            elif kind == CONT:
                counts.continuation += 1
                if self._awaiting_exception:
                    self._continuation(item[4])
            elif kind == PART:
                counts.continuation += 1
            elif kind == BLANK:
                counts.header += 1
            else:
                self._not_understood(item[3], item[4])
            if out:
                yield from out
                out.clear()
        self._flush_pending()
        for stream in list(self._parked):
            self._switch_stream(stream)
            self._flush_pending()
        yield from out
        out.clear()

    def _switch_stream(self, stream) -> None:
        """Park the waiting row of the stream being left; take up the one of ``stream``."""
        if self._pending is not None:
            self._parked[self._stream] = (self._pending, self._pending_kind, self._awaiting_exception)
        self._pending, self._pending_kind, self._awaiting_exception = self._parked.pop(stream, (None, None, False))
        self._stream = stream

    def reading(self, rows: list[AuditRow]) -> KafkaLogReading:
        kraft = self._kraft_lines > 0
        if kraft and not self._kraft_counted:
            # Lines that made KRaft rows were counted as "other" while the era was not known yet.
            self._kraft_counted = True
            self.counts.rows += self._kraft_row_lines
            self.counts.other -= self._kraft_row_lines
        # The Leader/Follower lines of ZooKeeper-mode 3.x brokers make KRaft rows too: kept for KRaft files only.
        kraft_rows = list(self._kraft_rows) if kraft else []
        return KafkaLogReading(
            path=self.path, run_id=self.run_id, rows=rows, counts=self.counts,
            not_understood_sample=list(self.sample), era=self.era, kraft=kraft,
            is_log4j=bool(self._splitter.layouts), version_hints=tuple(sorted(self._hints)), notes=self._notes(rows),
            layouts=self._layouts(), sources=tuple(self.sources), kraft_rows=kraft_rows)

    def _layouts(self) -> dict[str, int]:
        """Log lines per layout, the most used first."""
        return dict(sorted(self._splitter.layouts.items(), key=lambda kv: (-kv[1], kv[0])))

    @property
    def era(self) -> str | None:
        if self._kraft_lines:
            return ERA_KRAFT
        seen = [e for e in _ERA_ORDER if self._eras[e]]
        return seen[-1] if seen else None

    def _notes(self, rows: list[AuditRow]) -> tuple[str, ...]:
        notes = []
        if self._kraft_lines:
            notes.append(f"KRaft: no controller state machines here; {self._kraft_lines} KRaft lines, "
                         f"{len(self._kraft_rows)} KRaft rows (audited by the KRaft checks)")
        if not self._splitter.layouts and self.counts.total > self.counts.header:
            notes.append("no line in any known log layout: not a Kafka log file")
        layouts = self._layouts()
        if layouts and set(layouts) != {"kafka"}:
            notes.append("log layouts read: " + ", ".join(f"{k} ({n} lines)" for k, n in layouts.items()))
        if (self.era == ERA_2_6 and self._state_change_lines
                and not any(r.kind == REPLICA_TRANSITION for r in rows)):
            notes.append("INFO-level state-change logging (Kafka 2.6+ default): per-replica transitions "
                         "are not in this file")
        if self._dialect_080:
            notes.append("Kafka 0.8.0 dialect: replica lines print no from-state, and 'with leader' lines "
                         "print the new state as the old one (read as unknown)")
        return tuple(notes)

    # --- one line ------------------------------------------------------------------------------
    def _not_understood(self, no: int, text: str) -> None:
        self.counts.not_understood += 1
        if len(self.sample) < self.sample_size:
            self.sample.append((no, text))

    def _continuation(self, text: str) -> None:
        self._awaiting_exception = False
        head = pat.EXCEPTION_HEAD.match(text.strip())
        if head is not None and self._pending is not None and self._pending_kind == "failure":
            cls = head.group("cls").rsplit(".", 1)[-1].rsplit("$", 1)[-1]
            self._pending = self._pending._replace(error=cls)

    def _log_line(self, item: tuple) -> None:
        # One function for the whole reading of a line: nearly every line of a file comes here, and each
        # call saved is a few per cent of the reading speed. What the line's ident, logger and first word
        # decide is decided once per distinct triple (_route); the line's own text is read here.
        self._item = item
        ident = item[10]                         # the message's "[ident] " (pat.IDENT), split off by the layout
        body = item[11]
        self._awaiting_exception = False
        if self._pending is not None:
            if self._attach_to_pending(body):
                return
            self._flush_pending()
        self._made_row = False
        cut = body.find(" ")
        word = body[:cut] if cut >= 0 else body
        route = self._routes.get((ident, item[7], word))
        if route is None:
            route = self._route(ident, item[7], word)
        flow, kraft, node, key, cid, epoch, era, s26, logger, templates, known = route
        counts = self.counts
        if flow:
            if flow == _F_STATE_CHANGE or flow == _F_KRAFT_BROKER:
                self._state_change_lines += 1
                if key in _KRAFT_STATE_CHANGE_KEYS and not kraft and _KRAFT_STATE_CHANGE(body) is not None:
                    kraft = True                 # pat.is_kraft_state_change
                if flow == _F_KRAFT_BROKER:
                    if self._kraft_lines or kraft:
                        if self._kraft_early:
                            self._read_early_kraft_lines()
                        if self._kraft_broker.line(self._kraft_head, node, key, body):
                            self._kraft_row_lines += 1
                    elif len(self._kraft_early) < _EARLY_KRAFT_LINES:
                        self._kraft_early.append((item, node, key, body))
            else:                                # _F_KRAFT_CONTROLLER
                if self._kraft_early:
                    self._read_early_kraft_lines()
                if self._kraft_controller.line(self._kraft_head, node, key, body):
                    self._kraft_row_lines += 1
        if kraft:
            self._kraft_lines += 1
            counts.other += 1
            return
        # An era is told by any line of it (self._eras is read as flags): once told, it is not looked for.
        eras = self._eras
        if era is not None:
            if era is ERA_1_0:
                if not eras[ERA_1_0]:
                    eras[ERA_1_0] = 1            # "[Controller id=N ...]" / "[Broker id=N]": 1.0+
            else:
                eras[ERA_0_8] += 1               # "[Controller N]: "
        if s26 and not eras[ERA_2_6] and _SINCE_2_6(body) is not None:   # pat.is_since_2_6
            eras[ERA_2_6] = 1
        if templates is None:                    # broker, network, log manager, ZooKeeper client ...
            counts.other += 1
            return
        if templates is _ELECTOR:
            category = self._elector_line(body)
        else:
            # The controller's lines: a "Controller N epoch E ..." in the message (0.8–0.11; 1.1+ failures),
            # else the controller of the prefix, or the one that last took over.
            em = _EMBEDDED_CONTROLLER(body) if key == "controller" and body[:11] == "Controller " else None
            if em is not None:
                if ident is None:
                    eras[ERA_0_8] += 1
                if cid is None:
                    cid = int(em.group("id"))
                if epoch is None:
                    epoch = int(em.group("epoch"))
                body = body[em.end():]
                key = pat.dispatch_key(body)
                templates = _ROW_TEMPLATES.get(key, ())
                known = _KNOWN_MATCH.get(key)
            elif key == "broker" and ident is None and logger in ("state.change.logger", None) \
                    and body.startswith("Broker "):
                eras[ERA_0_8] += 1
                counts.other += 1                # 0.8–0.11 broker side: "Broker 1 received ..."
                return
            if cid is None:
                cid = self._active if self._active is not None else -1
            if epoch is not None:
                if cid >= 0:
                    self._epochs[cid] = epoch
            else:
                epoch = self._epochs.get(cid, -1)
            self._cid = cid
            self._epoch = epoch
            category = _NOT_UNDERSTOOD
            if key == "sending" and self._on_request_line(body):
                category = _OTHER
            else:
                for pattern, handler, needle in templates:
                    if needle is None or needle in body:
                        m = pattern(body)
                        if m is not None and handler(self, m) is not None:
                            category = _ROW if self._made_row else _OTHER
                            break
                else:
                    if known is not None and known(body) is not None:
                        category = _OTHER
        if category is _ROW or self._made_row:
            counts.rows += 1
        elif category is _OTHER:
            counts.other += 1
        else:
            self._not_understood(item[3], self._line_text(item[5], item[6], item[4], logger))

    def _route(self, ident: str | None, logger: str | None, word: str) -> tuple:
        """What a line's ident prefix, logger and first word decide, whatever the rest of the line:
        ``(flow, kraft, node, key, cid, epoch, era, since_2_6, logger, templates, known)`` — ``flow`` the
        KRaft readers that may take the line (_F_*), ``kraft`` whether it is a KRaft line already, ``node``
        the node for those readers, ``key`` the dispatch key (pat.dispatch_key), ``cid``/``epoch`` the
        prefix's controller, ``era`` the era the prefix tells (or None), ``since_2_6`` whether the line may
        tell 2.6+, ``logger`` the full name, ``templates`` the row templates to try (None: no controller
        line; _ELECTOR: the elector's) and ``known`` the catalogue's pattern for the key."""
        role = self._idents.get(ident)
        if role is None:
            role = self._idents[ident] = self._ident_role(ident)
        key = _KEYS.get(word)
        if key is None:
            key = pat.dispatch_key(word)
            if len(_KEYS) < 65536:
                _KEYS[word] = key
        full = pat.full_logger_name(logger)
        lclass = self._logger_class(full)
        kind, cid, epoch = role
        kraft = kind == "kraft" or (lclass == _L_KRAFT and full != "state.change.logger")
        node = cid
        if full == "state.change.logger":
            flow = _F_KRAFT_BROKER if key in _KRAFT_BROKER_KEYS and kind == "broker" else _F_STATE_CHANGE
        elif lclass == _L_KRAFT:
            flow = _F_KRAFT_CONTROLLER
            node = cid if kind == "kraft" else None
        else:
            flow = 0
        era = ERA_1_0 if kind == "controller" or kind == "broker" else ERA_0_8 if kind == "controller-old" else None
        if lclass == _L_OTHER or kind == "broker":
            templates = known = None
        elif lclass == _L_ELECTOR:
            templates, known = _ELECTOR, None
        else:
            templates, known = _ROW_TEMPLATES.get(key, ()), _KNOWN_MATCH.get(key)
        route = (flow, kraft, node, key, cid, epoch, era, key in _SINCE_2_6_KEYS, full, templates, known)
        if len(self._routes) >= 65536:
            self._routes.clear()
        self._routes[(ident, logger, word)] = route
        return route

    @staticmethod
    def _line_text(ts: str | None, level: str, msg: str, logger: str | None) -> str:
        return f"[{ts}] {level} {msg}" + (f" ({logger})" if logger else "")

    @staticmethod
    def _logger_class(logger: str | None) -> int:
        """What a logger's lines are: KRaft's, the 0.8–0.10 elector's, the controller's, or others'."""
        if pat.is_kraft_logger(logger):
            return _L_KRAFT
        if logger is not None and logger.startswith(pat.ELECTOR_LOGGER):
            return _L_ELECTOR
        if pat.is_controller_logger(logger):
            return _L_CONTROLLER
        return _L_OTHER

    def _elector_line(self, body: str) -> str:
        m = pat.ELECTED_LEADER.match(body)
        if m is None:
            return "other"                       # "New leader is 1", ...
        self._eras[ERA_0_8] += 1
        cid = int(m.group("id"))
        self._active = cid
        self._cid, self._epoch = cid, -1         # the elector does not print the new epoch
        self._emit(self._row(CONTROLLER_ELECTED))
        return "row"

    # --- prefixes, time --------------------------------------------------------------------------
    @staticmethod
    def _ident_role(ident: str | None) -> tuple[str | None, int | None, int | None]:
        """(role, controller id, controller epoch) told by an ident prefix."""
        if ident is None:
            return None, None, None
        m = pat.IDENT_CONTROLLER.match(ident)
        if m is not None:
            epoch = m.group("epoch")
            return "controller", int(m.group("id")), int(epoch) if epoch is not None else None
        m = pat.IDENT_BROKER.match(ident)
        if m is not None:
            return "broker", int(m.group("id")), None
        m = pat.IDENT_KRAFT.match(ident)
        if m is not None:
            return "kraft", int(m.group("id")), None
        m = pat.IDENT_OLD_CONTROLLER.match(ident)
        if m is not None:
            return "controller-old", int(m.group("id")), None
        m = pat.IDENT_COMPONENT_ID.search(ident)
        return "component", int(m.group("id")) if m else None, None

    def _ts_ms(self, ts: str) -> int | None:
        """The line's time in ms, read as UTC (log4j prints the broker's local time, without a zone);
        remembered by the whole timestamp (``self._ts``: look there first)."""
        ms = self._time_ms(ts)
        if ms is not None:
            if len(self._ts) >= 4096:
                self._ts.clear()
            self._ts[ts] = ms
        return ms

    def _time_ms(self, ts: str) -> int | None:
        if ts is None:
            return None
        frac = ts[20:23]
        if len(frac) == 3:                       # the usual ",SSS": the second from the cache
            second = self._minute_ms.get(ts[:19])
            if second is not None:
                try:
                    return second + int(frac)
                except ValueError:
                    return None
        try:
            base = self._minute_ms.get(ts[:16])
            if base is None:
                base = calendar.timegm((int(ts[0:4]), int(ts[5:7]), int(ts[8:10]), int(ts[11:13]),
                                        int(ts[14:16]), 0)) * 1000
                if len(self._minute_ms) > 4096:
                    self._minute_ms.clear()
                self._minute_ms[ts[:16]] = base
            second = base + int(ts[17:19]) * 1000
            if len(frac) == 3:
                self._minute_ms[ts[:19]] = second
            return second + (int(frac.ljust(3, "0")) if frac else 0)
        except ValueError:
            return None

    def _read_early_kraft_lines(self) -> None:
        """The broker lines read before the file turned out to be KRaft's, read as KRaft lines now."""
        current = self._item
        for item, node, key, body in self._kraft_early:
            self._item = item
            if self._kraft_broker.line(self._kraft_head, node, key, body):
                self._kraft_row_lines += 1
        self._kraft_early.clear()
        self._item = current

    # --- rows ------------------------------------------------------------------------------------
    def _kraft_head(self) -> tuple:
        """(run_id, source, position, seq, time_ms) of the line being read, for a KRaft row."""
        item = self._item
        ms = self._ts.get(item[5])
        return self.run_id, item[2], item[3], item[1], ms if ms is not None else self._ts_ms(item[5])

    def _row(self, kind: str, *, entity=None, topic=None, partition=-1, replica=-1, frm=None, to=None,
             leader=None, leader_epoch=None, isr=None, replicas=None, unclean=None, error=None) -> AuditRow:
        item = self._item
        ms = self._ts.get(item[5])
        if ms is None:
            ms = self._ts_ms(item[5])
        return _new_row(AuditRow, (self.run_id, item[2], item[3], item[1], kind, self._cid, self._epoch, ms, entity, topic, partition, replica, frm, to, leader,
                                   leader_epoch, isr, replicas, unclean, error))

    def _emit(self, row: AuditRow) -> list:
        if row.kind == PARTITION_TRANSITION:
            self._track_partition(row)
        self._out.append(row)
        self._made_row = True
        return []

    def _track_partition(self, row: AuditRow) -> None:
        """Infer topic creations: a NonExistentPartition -> NewPartition transition of a topic none of whose
        partitions is known to exist, or of a partition known to exist (the topic was removed from the
        controller without the log showing it: a deletion at INFO level, whose transitions are TRACE, or
        its znodes removed by hand), starts a new incarnation of the topic. A ``topic_created`` row says so,
        just before the transition: same line, position 0 (the reader inferred it, no line is it)."""
        existing = self._existing.setdefault(row.topic, set())
        if row.from_state == _NON_EXISTENT and row.to_state == _NEW and (
                row.partition in existing or not existing):
            existing.clear()
            self._out.append(self._row(TOPIC_CREATED, topic=row.topic)._replace(position=0))
        if row.to_state == _NON_EXISTENT:
            existing.discard(row.partition)
        elif row.to_state is not None:
            existing.add(row.partition)

    def _hold(self, row: AuditRow, kind: str) -> list:
        self._pending, self._pending_kind = row, kind
        self._made_row = True
        return []

    def _flush_pending(self) -> None:
        if self._pending is not None:
            self._out.append(self._pending)
        self._pending = self._pending_kind = None

    def _attach_to_pending(self, body: str) -> bool:
        """The selector's "Selected new leader and ISR ..." completes the unclean-election row
        its "There's potential data loss" WARN started."""
        if self._pending_kind != "unclean":
            return False
        m = pat.SELECTED_OFFLINE_LEADER.match(body)
        if m is None or self._tp(m.group("tp")) != (self._pending.topic, self._pending.partition):
            return False
        lead = pat.parse_leadership(m.group("state"))
        if lead is not None:
            self._pending = self._pending._replace(leader=lead.leader, leader_epoch=lead.leader_epoch, isr=lead.isr)
            self._remember_isr((self._pending.topic, self._pending.partition), lead.isr)
        self.counts.other += 1
        self._flush_pending()
        return True

    def _tp(self, token: str) -> tuple[str, int] | None:
        """pat.parse_tp, remembered: a file names the same partitions over and over."""
        tp = self._tps.get(token)
        if tp is None:
            tp = pat.parse_tp(token)
            if tp is not None:
                if len(self._tps) > 65536:
                    self._tps.clear()
                self._tps[token] = tp
        return tp

    # --- evidence ----------------------------------------------------------------------------------
    def _saw_0_8_0(self) -> None:
        self._dialect_080 = True
        self._hints.add("0.8.0")
