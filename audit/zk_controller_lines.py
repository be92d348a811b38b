"""The ZooKeeper-era controller's lines that become audit rows: the templates and what each makes.

:class:`audit.kafka_log_reader.KafkaLogReader` reads a log line's layout-free pieces and tells who wrote
it (ident prefix, logger, the era); a controller line's body then goes, by its first word
(``ROW_TEMPLATES``), to the few templates of ``audit.kafka_line_patterns`` that may match it, and the
first that does makes its rows here: replica and partition transitions, failed transitions (completed
by the exception class of the stack trace that follows), leader/ISR rewrites, controller elections,
topic deletions, and the ISRs that request lines print (kept to tell an unclean election).
:class:`ZkControllerLines` is the reader's half that does this (a mixin: it uses the reader's state,
``_row``/``_emit``/``_hold`` and ``_tp``). Nearly every row of a ZooKeeper-era file is made by the first
four handlers: they take a match's groups at once and build their rows without keywords.
"""
from __future__ import annotations

from audit import kafka_line_patterns as pat
from audit.rows import (
    CONTROLLER_ELECTED, ENTITY_PARTITION, ENTITY_REPLICA, LEADER_AND_ISR_UPDATED, PARTITION_TRANSITION,
    REPLICA_TRANSITION, TOPIC_DELETION_COMPLETED, TOPIC_DELETION_REQUESTED, TRANSITION_FAILED, AuditRow,
)
from statemachines.states import PartitionState

_NEW = PartitionState.NewPartition.byte
_ONLINE = PartitionState.OnlinePartition.byte
_OFFLINE = PartitionState.OfflinePartition.byte
_NON_EXISTENT = PartitionState.NonExistentPartition.byte
_REPLICA_BYTES = pat.REPLICA_STATE_BYTES
_PARTITION_BYTES = pat.PARTITION_STATE_BYTES
_INTS = pat.INTS
_leadership = pat.leadership
_new_row = tuple.__new__                 # AuditRow(...) without the Python call of its generated __new__
_MADE = ()                               # what a handler returns when it read its line (None: it did not)


class ZkControllerLines:
    """The row templates' handlers of :class:`audit.kafka_log_reader.KafkaLogReader` (see the module)."""
    __slots__ = ()

    def _partition_row(self, kind, tp, frm, to, leader, leader_epoch, isr, replicas, unclean) -> AuditRow:
        item = self._item
        ts = item[5]
        ms = self._ts.get(ts)
        if ms is None:
            ms = self._ts_ms(ts)
        return _new_row(AuditRow, (self.run_id, item[2], item[3], item[1], kind, self._cid, self._epoch, ms,
                                   ENTITY_PARTITION if kind == PARTITION_TRANSITION else None, tp[0], tp[1], -1,
                                   frm, to, leader, leader_epoch, isr, replicas, unclean, None))

    def _remember_isr(self, tp, isr: list[int] | None) -> None:
        if isr is None:
            self._isr.pop(tp, None)
        else:
            self._isr[tp] = isr

    def _unclean(self, tp, frm: int | None, to: int, leader: int | None) -> bool | None:
        """An election to OnlinePartition is unclean when its leader was not in the last known ISR."""
        if to != _ONLINE:
            return None
        if frm == _NEW:
            return False                        # a new partition's leader comes from its live replicas
        if leader is None or leader < 0:
            return None
        isr = self._isr.get(tp)
        if isr.__class__ is str:                # a request line's state, read now that it is needed
            lead = pat.parse_leadership(isr)
            isr = lead.isr if lead is not None else None
            self._remember_isr(tp, isr)
        if isr is None:
            return None
        return leader not in isr

    # --- the templates' handlers -------------------------------------------------------------------
    def _replica_states(self, token, frm_name, to_name) -> tuple | None:
        """(partition, from, to) of a replica line; Kafka 0.8.0 printed no from-state (None)."""
        tp = self._tps.get(token)
        if tp is None:
            tp = self._tp(token)
        to = _REPLICA_BYTES.get(to_name)
        frm = _REPLICA_BYTES.get(frm_name) if frm_name is not None else None
        if tp is None or to is None or (frm_name is not None and frm is None):
            return None
        if frm_name is None:
            self._saw_0_8_0()
        return tp, frm, to

    def _on_replica_changed(self, m):
        replica, token, frm_name, to_name = m.groups()          # pat.REPLICA_CHANGED's groups
        states = self._replica_states(token, frm_name, to_name)
        if states is None:
            return None
        tp, frm, to = states
        item = self._item
        ts = item[5]
        ms = self._ts.get(ts)
        if ms is None:
            ms = self._ts_ms(ts)
        self._out.append(_new_row(AuditRow, (self.run_id, item[2], item[3], item[1], REPLICA_TRANSITION, self._cid,
                                             self._epoch, ms, ENTITY_REPLICA, tp[0], tp[1], _INTS[replica], frm, to,
                                             None, None, None, None, None, None)))
        self._made_row = True
        return _MADE

    def _partition_states(self, token, frm_name, to_name) -> tuple | None:
        tp = self._tps.get(token)
        if tp is None:
            tp = self._tp(token)
        frm = _PARTITION_BYTES.get(frm_name)
        to = _PARTITION_BYTES.get(to_name)
        if frm is None or to is None:          # Kafka 0.8.0's short names ("from NotExists to New")?
            frm = pat.ALL_PARTITION_STATE_BYTES.get(frm_name)
            to = pat.ALL_PARTITION_STATE_BYTES.get(to_name)
            if tp is None or frm is None or to is None:
                return None
            self._saw_0_8_0()
        if tp is None:
            return None
        return tp, frm, to

    def _on_partition_state(self, m):
        token, frm_name, to_name, replicas = m.groups()         # pat.PARTITION_CHANGED_STATE's groups
        states = self._partition_states(token, frm_name, to_name)
        if states is None:
            return None
        tp, frm, to = states
        if replicas is not None:
            replicas = pat.parse_ints(replicas)
        if to == _NON_EXISTENT:
            self._isr.pop(tp, None)
        return self._emit(self._partition_row(PARTITION_TRANSITION, tp, frm, to, None, None, None, replicas, None))

    def _on_partition_leader(self, m):
        """0.8–1.0: "... from A to OnlinePartition with leader L". Kafka 0.8.0 printed the state
        *after* the change as the old one, so there the from-state is not known."""
        token, frm_name, to_name, leader = m.groups()           # pat.PARTITION_CHANGED_LEADER's groups
        states = self._partition_states(token, frm_name, to_name)
        if states is None:
            return None
        tp, frm, to = states
        if self._dialect_080 and frm == to == _ONLINE:
            frm = None
        if self._cid >= 0 and self._eras["1.0-2.5"]:          # audit.kafka_log_reader.ERA_1_0
            self._hints.add("1.0")
        leader = int(leader)
        unclean = self._unclean(tp, frm, to, leader)
        self._isr.pop(tp, None)                  # the new ISR is not printed here
        return self._emit(self._partition_row(PARTITION_TRANSITION, tp, frm, to, leader, None, None, None, unclean))

    def _on_partition_with_state(self, m):
        token, frm_name, to_name, state = m.groups()            # pat.PARTITION_CHANGED_WITH_STATE's groups
        states = self._partition_states(token, frm_name, to_name)
        lead = _leadership(state)
        if states is None or lead is None:
            return None
        tp, frm, to = states
        leader, leader_epoch, isr, hint = lead
        if hint is not None:
            self._hints.add(hint)
        if isr is not None:
            isr = list(isr)
        unclean = self._unclean(tp, frm, to, leader)
        self._remember_isr(tp, isr)
        return self._emit(self._partition_row(PARTITION_TRANSITION, tp, frm, to, leader, leader_epoch, isr, None,
                                              unclean))

    def _on_replica_failed(self, m):
        replica, token, frm_name, to_name = m.groups()          # pat.REPLICA_FAILED's groups
        states = self._replica_states(token, frm_name, to_name)
        if states is None:
            return None
        tp, frm, to = states
        self._awaiting_exception = True
        return self._hold(self._row(TRANSITION_FAILED, entity=ENTITY_REPLICA, topic=tp[0], partition=tp[1],
                                    replica=int(replica), frm=frm, to=to), "failure")

    def _on_partition_failed(self, m):
        states = self._partition_states(*m.groups())            # pat.PARTITION_FAILED(_OLD)'s groups
        if states is None:
            return None
        tp, frm, to = states
        self._awaiting_exception = True
        return self._hold(self._row(TRANSITION_FAILED, entity=ENTITY_PARTITION, topic=tp[0], partition=tp[1],
                                    frm=frm, to=to), "failure")

    def _on_isr_removed(self, m):
        token, state = m.group("tp", "state")
        tp = self._tps.get(token)
        if tp is None:
            tp = self._tp(token)
        lead = _leadership(state)
        if tp is None or lead is None:
            return None
        leader, leader_epoch, isr, hint = lead
        if hint is not None:
            self._hints.add(hint)
        if isr is not None:
            isr = list(isr)
        self._remember_isr(tp, isr)
        return self._emit(self._partition_row(LEADER_AND_ISR_UPDATED, tp, None, None, leader, leader_epoch, isr, None,
                                              None))

    def _on_isr_updated(self, m):
        """2.7+: the controller accepted an AlterIsr; only the new ISR is printed."""
        tp = self._tp(m.group("tp"))
        if tp is None:
            return None
        isr = pat.parse_ints(m.group("isr"))
        self._isr[tp] = isr
        return self._emit(self._row(LEADER_AND_ISR_UPDATED, topic=tp[0], partition=tp[1], isr=isr))

    def _on_new_leader_and_isr(self, m):
        return self._on_isr_removed(m)           # 0.8–1.0: the same ISR removal, printed as JSON

    def _on_selected_leader(self, m):
        """0.8–1.0 controller.log: the OfflinePartitionLeaderSelector's result. Without a data-loss
        WARN just before it (see _attach_to_pending), the leader came from the live ISR."""
        tp = self._tp(m.group("tp"))
        lead = pat.parse_leadership(m.group("state"))
        if tp is None or lead is None:
            return None
        self._remember_isr(tp, lead.isr)
        return self._emit(self._row(PARTITION_TRANSITION, entity=ENTITY_PARTITION, topic=tp[0], partition=tp[1],
                                    frm=_OFFLINE, to=_ONLINE, leader=lead.leader, leader_epoch=lead.leader_epoch,
                                    isr=lead.isr, unclean=False))

    def _on_unclean_warning(self, m):
        tp = self._tp(m.group("tp"))
        if tp is None:
            return None
        return self._hold(self._row(PARTITION_TRANSITION, entity=ENTITY_PARTITION, topic=tp[0], partition=tp[1],
                                    frm=_OFFLINE, to=_ONLINE, leader=int(m.group("leader")), unclean=True),
                          "unclean")

    def _elected(self, cid: int, epoch: int):
        self._epochs[cid] = epoch
        self._active, self._cid, self._epoch = cid, cid, epoch
        return self._emit(self._row(CONTROLLER_ELECTED))

    def _on_elected_with_id(self, m):
        return self._elected(int(m.group("id")), int(m.group("epoch")))

    def _on_elected_1_0(self, m):
        if self._cid < 0:
            return None
        return self._elected(self._cid, int(m.group("epoch")))

    def _on_ready_to_serve(self, m):
        cid = int(m.group("id")) if m.group("id") is not None else self._cid
        if cid >= 0:
            self._epochs[cid] = int(m.group("epoch"))
            self._active = cid
        return []

    def _on_resigned(self, m):
        cid = int(m.group("id")) if m.group("id") is not None else self._cid
        if self._active == cid:
            self._active = None
        return []

    def _on_deletion_started(self, m):
        topics = [t.strip() for t in m.group("topics").split(",") if t.strip()]
        for topic in topics:
            self._emit(self._row(TOPIC_DELETION_REQUESTED, topic=topic))
        return []

    def _on_deletion_completed(self, m):
        return self._emit(self._row(TOPIC_DELETION_COMPLETED, topic=m.group("topic")))

    def _on_request_state(self, m):
        """Request lines and election results carry the partition's leadership as the controller knows it."""
        self._learn_isr(m.group("tp"), m.group("state"))
        return []

    def _on_request_line(self, body: str) -> bool:
        parts = pat.split_request_line(body)
        if parts is None:
            return False
        self._learn_isr(parts[1], parts[0])
        return True

    def _learn_isr(self, tp_token: str, state: str) -> None:
        """Keep the state text a request line printed for the partition; its ISR is read only if an
        election needs it (_unclean): most of these lines (one per partition and broker at TRACE) never are."""
        tp = self._tps.get(tp_token)
        if tp is None:
            tp = self._tp(tp_token)
        if tp is not None:
            self._isr[tp] = state


_L = ZkControllerLines
# First word of the message body -> the templates tried for it, in order, each with a text the body must
# hold for it to match (None: none), so that the ones that cannot are not run; each pattern as its bound
# ``match``.
ROW_TEMPLATES: dict[str, tuple] = {key: tuple((p.match, h, n) for p, h, n in templates) for key, templates in {
    "changed": ((pat.REPLICA_CHANGED, _L._on_replica_changed, "hanged state of replica "),
                (pat.PARTITION_CHANGED_STATE, _L._on_partition_state, " state from "),
                (pat.PARTITION_CHANGED_LEADER, _L._on_partition_leader, " with leader "),
                (pat.PARTITION_CHANGED_WITH_STATE, _L._on_partition_with_state, " with state ")),
    "initiated": ((pat.REPLICA_FAILED, _L._on_replica_failed, None),
                  (pat.PARTITION_FAILED_OLD, _L._on_partition_failed, None)),
    "failed": ((pat.PARTITION_FAILED, _L._on_partition_failed, None),),
    "partition": ((pat.ISR_REMOVED, _L._on_isr_removed, None),),
    "new": ((pat.NEW_LEADER_AND_ISR, _L._on_new_leader_and_isr, "New leader and ISR for partition "),),
    "selected": ((pat.SELECTED_OFFLINE_LEADER, _L._on_selected_leader, None),),
    "no": ((pat.UNCLEAN_WARNING, _L._on_unclean_warning, ". Elect leader "),),
    "controller": ((pat.ELECTED_OLD, _L._on_elected_with_id, " incremented epoch to "),),
    "incremented": ((pat.ELECTED_1_0, _L._on_elected_1_0, None),),
    "epoch": ((pat.ELECTED_1_0, _L._on_elected_1_0, None),),
    "#": ((pat.ELECTED, _L._on_elected_with_id, None),),
    "ready": ((pat.READY_TO_SERVE, _L._on_ready_to_serve, None),),
    "broker": ((pat.READY_TO_SERVE, _L._on_ready_to_serve, None),
               (pat.RESIGNED, _L._on_resigned, None)),
    "resigned": ((pat.RESIGNED, _L._on_resigned, None),),
    "starting": ((pat.DELETION_STARTED, _L._on_deletion_started, "Starting topic deletion for topics "),),
    "deletion": ((pat.DELETION_COMPLETED, _L._on_deletion_completed, None),),
    "initializing": ((pat.INITIALIZING_LEADER_AND_ISR, _L._on_request_state,
                      "Initializing leader and isr for partition "),),
    "after": ((pat.LEADER_CACHE_UPDATED, _L._on_request_state, None),),
    "isr": ((pat.ISR_UPDATED, _L._on_isr_updated, None),),
}.items()}
