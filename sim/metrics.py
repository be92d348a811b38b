"""What a simulation run cost: availability, produce errors, elections, failovers and lost writes.

:class:`Metrics` watches every record the run journals (through the journal's sink) and keeps,
per partition, the leader, ISR and replicas the controller last wrote — the state Kafka's own
``OfflinePartitionsCount`` and ``UnderMinIsrPartitionCount`` report. Partition-seconds are
integrated exactly at every change. The producers report each batch's outcome; every batch
acknowledged with acks 1 or all is kept as (leader epoch, first offset, count), and at the end
it is looked up in the log of the partition's leader: an acknowledged record the leader's log
no longer holds (same offset, same epoch) is lost. If the partition has no leader at the end,
records that no replica holds are lost and those only an offline replica holds are
"unavailable". Each leader change also checks the new leader's log, so the timeline shows when
the loss happened (an unclean election, or an acks=1 leader dying before its followers fetched).

``summary()`` is a plain dict (the ``--json`` output); ``format_summary`` prints it for people.
"""
from __future__ import annotations

from events.records import (
    ELECTION_CONTROLLED_SHUTDOWN, ELECTION_OFFLINE, ELECTION_OFFLINE_UNCLEAN, ELECTION_PREFERRED, ELECTION_REASSIGN,
    KINDS, ControllerElected, LeaderAndIsrUpdated, PartitionTransition, TopicDeletionCompleted,
)
from statemachines.states import NON_EXISTENT_PARTITION, OFFLINE_PARTITION

_PT = PartitionTransition.KIND
_LU = LeaderAndIsrUpdated.KIND
_CE = ControllerElected.KIND
_TD = TopicDeletionCompleted.KIND
ELECTION_KINDS = {
    ELECTION_OFFLINE: "clean", ELECTION_OFFLINE_UNCLEAN: "unclean", ELECTION_PREFERRED: "preferred",
    ELECTION_CONTROLLED_SHUTDOWN: "controlled_shutdown", ELECTION_REASSIGN: "reassignment",
}
HEALTH_ACTIONS = ("kill_broker", "controlled_shutdown", "expire_session", "partition_network", "slow_follower",
                  "fail_log_dir", "start_broker", "heal_network", "catch_up", "reassign", "elect_preferred",
                  "elect_unclean", "delete_topic")
FAULT_ACTIONS = ("kill_broker", "controlled_shutdown", "expire_session", "partition_network", "slow_follower",
                 "fail_log_dir")


class Metrics:
    """The running tally of one simulation (see the module docstring)."""

    def __init__(self, sim):
        self.sim = sim
        self.state: dict[tuple, list] = {}   # tp -> [offline, isr size, replica count, min isr, leader, state]
        self.offline = 0
        self.under_min_isr = 0
        self.under_replicated = 0
        self.last_ms = 0
        self.offline_ms = 0             # partition-milliseconds
        self.under_min_isr_ms = 0
        self.under_replicated_ms = 0
        self.timeline: list[list] = [[0, 0, 0, 0, 0]]   # [t, offline, under-replicated, under-min-isr, epoch]
        self.controller_epoch = 0
        self.controller_elections = 0
        self.elections = dict.fromkeys(ELECTION_KINDS.values(), 0)
        self.sent_messages = 0
        self.acked_messages = 0
        self.failed_messages = 0
        self.errors: dict[str, int] = {}          # batches answered with each error
        self.error_messages: dict[str, int] = {}  # messages in them
        self.error_buckets: dict[int, dict] = {}  # second -> {error: batches}
        self.last_error_ms = -1
        self.acked: dict[tuple, list] = {}        # tp -> [[epoch, first, end], ...]
        self.lost_seen: dict[tuple, int] = {}
        self.loss_events: list[tuple] = []        # (t, tp, count, why)
        self.truncated_records = 0
        self.faults: list[dict] = []
        self.observations: list[dict] = []

    # --- the record stream ------------------------------------------------------------------------
    def observe(self, rec: tuple) -> None:
        kind = rec[0]
        if kind == _PT:
            self._advance(rec[5])
            tp = (rec[7], rec[8])
            if rec[10] == NON_EXISTENT_PARTITION:
                self._set(tp, None)
            else:
                self._set(tp, (rec[12], len(rec[14]), len(rec[11]), rec[10]))
            election = ELECTION_KINDS.get(rec[17])
            if election is not None:
                self.elections[election] += 1
        elif kind == _LU:
            self._advance(rec[5])
            tp = (rec[7], rec[8])
            cur = self.state.get(tp)
            if cur is not None:
                self._set(tp, (rec[9], len(rec[11]), cur[2], cur[5]))
        elif kind == _CE:
            self._advance(rec[5])
            self.controller_elections += 1
            self.controller_epoch = rec[4]
            self._point(rec[5])
        elif kind == _TD:
            self._advance(rec[5])
            topic = rec[7]
            for tp in [tp for tp in self.state if tp[0] == topic]:
                self._set(tp, None)
            # A deleted topic's records are gone by design, not lost; a topic re-created under the
            # same name starts again.
            for tp in [tp for tp in self.acked if tp[0] == topic]:
                del self.acked[tp]
                self.lost_seen.pop(tp, None)

    def _min_isr(self, topic: str, replicas: int) -> int:
        return min(self.sim.min_isr(topic), replicas)

    def _set(self, tp: tuple, new: tuple | None) -> None:
        old = self.state.get(tp)
        if old is not None:
            offline, isr, rf, min_isr = old[:4]
            self.offline -= offline
            self.under_replicated -= isr < rf
            self.under_min_isr -= isr < min_isr
        if new is None:
            self.state.pop(tp, None)
        else:
            leader, isr, rf, state = new
            offline = leader < 0 or state == OFFLINE_PARTITION
            min_isr = self._min_isr(tp[0], rf)
            self.state[tp] = [offline, isr, rf, min_isr, leader, state]
            self.offline += offline
            self.under_replicated += isr < rf
            self.under_min_isr += isr < min_isr
        self._point(self.last_ms)

    def min_isr_changed(self, topic: str) -> None:
        for tp, cur in list(self.state.items()):
            if tp[0] == topic or topic == "":
                self._set(tp, (cur[4], cur[1], cur[2], cur[5]))

    def _advance(self, now: int) -> None:
        dt = now - self.last_ms
        if dt > 0:
            self.offline_ms += self.offline * dt
            self.under_min_isr_ms += self.under_min_isr * dt
            self.under_replicated_ms += self.under_replicated * dt
            self.last_ms = now

    def _point(self, now: int) -> None:
        point = [now, self.offline, self.under_replicated, self.under_min_isr, self.controller_epoch]
        last = self.timeline[-1]
        if last[1:] == point[1:]:
            return
        if last[0] == now:
            self.timeline[-1] = point
        else:
            self.timeline.append(point)

    # --- the data plane ---------------------------------------------------------------------------
    def produce_error(self, error: str, messages: int, now: int, batches: int = 1) -> None:
        self.errors[error] = self.errors.get(error, 0) + batches
        self.error_messages[error] = self.error_messages.get(error, 0) + messages
        bucket = self.error_buckets.setdefault(now // 1000, {})
        bucket[error] = bucket.get(error, 0) + batches
        self.last_error_ms = now

    def acknowledged(self, tp: tuple, epoch: int, first: int, count: int) -> None:
        self.acked_messages += count
        ranges = self.acked.get(tp)
        if ranges is None:
            self.acked[tp] = [[epoch, first, first + count]]
            return
        last = ranges[-1]
        if last[0] == epoch and last[2] == first:
            last[2] = first + count
        else:
            ranges.append([epoch, first, first + count])

    def leader_changed(self, replica) -> None:
        """A broker became leader: acknowledged records its log lacks are lost from now on."""
        self._check_loss(replica.tp, replica.log, replica.broker, replica.leader_epoch,
                         f"broker {replica.broker} became leader (epoch {replica.leader_epoch})")

    def truncated(self, replica, removed: int) -> None:
        """A follower truncated its log: acknowledged records the leader never had are gone with it."""
        self.truncated_records += removed
        cur = self.state.get(replica.tp)
        if cur is None or cur[0]:
            return
        leader = cur[4]
        log = self.sim.replication.disks.get(leader, {}).get(replica.tp)
        if log is not None:
            self._check_loss(replica.tp, log, leader, -1,
                             f"broker {replica.broker} truncated them (leader {leader} never had them)")

    def _check_loss(self, tp: tuple, log, leader: int, epoch: int, why: str) -> None:
        ranges = self.acked.get(tp)
        if not ranges:
            return
        missing = sum(end - first - log.holds(e, first, end) for e, first, end in ranges)
        seen = self.lost_seen.get(tp, 0)
        if missing > seen:
            self.lost_seen[tp] = missing
            self.loss_events.append((self.sim.loop.now, tp, missing - seen, why))

    # --- faults and observations ----------------------------------------------------------------
    def step(self, step, now: int) -> None:
        if step.action in HEALTH_ACTIONS:
            self.faults.append({"at_ms": now, "action": step.action, "line": step.line, "note": step.note,
                                "args": {k: v for k, v in step.args.items() if v is not None and k != "reassignment"}})

    def observe_step(self, entry: dict) -> None:
        self.observations.append(entry)

    # --- the end ----------------------------------------------------------------------------------
    def lost_writes(self) -> tuple[int, int, dict]:
        """(lost, unavailable, per-partition lost) of every acknowledged record, now."""
        lost = unavailable = 0
        per_partition: dict[str, int] = {}
        replication = self.sim.replication
        for tp, ranges in self.acked.items():
            total = sum(end - first for _, first, end in ranges)
            cur = self.state.get(tp)
            leader = cur[4] if cur is not None and not cur[0] else -1
            log = replication.disks.get(leader, {}).get(tp) if leader >= 0 else None
            if log is not None:
                held = sum(log.holds(e, f, t) for e, f, t in ranges)
                gone = total - held
            else:
                # No leader: what some replica still holds may come back; the rest is gone.
                held = 0
                for disk in replication.disks.values():
                    other = disk.get(tp)
                    if other is not None:
                        held = max(held, sum(other.holds(e, f, t) for e, f, t in ranges))
                gone = total - held
                unavailable += held
            if gone:
                lost += gone
                per_partition[f"{tp[0]}-{tp[1]}"] = gone
        return lost, unavailable, per_partition

    def _recovery(self, start: int, end: int, column: int | None) -> int | None:
        """How long after ``start`` the cluster was last unhealthy before ``end`` (0: never was);
        None if still unhealthy at ``end``. ``column`` None means offline or under min ISR."""
        def unhealthy(point) -> bool:
            return (point[1] > 0 or point[3] > 0) if column is None else point[column] > 0

        state_at_start = None
        last_bad_end = start
        bad_since = None
        for point in self.timeline:
            t = point[0]
            if t <= start:
                state_at_start = point
                continue
            if t > end:
                break
            if bad_since is None and state_at_start is not None and unhealthy(state_at_start):
                bad_since = start
            state_at_start = None
            if unhealthy(point):
                if bad_since is None:
                    bad_since = t
            elif bad_since is not None:
                last_bad_end = t
                bad_since = None
        if state_at_start is not None and unhealthy(state_at_start):
            return None
        if bad_since is not None:
            return None
        if column is None and self.error_buckets:
            # Produce errors count too (a dead leader the controller has not noticed yet).
            seconds = [s for s in self.error_buckets if start // 1000 <= s <= end // 1000]
            if seconds:
                last_bad_end = max(last_bad_end, (max(seconds) + 1) * 1000)
        return max(0, min(last_bad_end, end) - start)

    def summary(self) -> dict:
        sim = self.sim
        end = sim.loop.now
        self._advance(end)
        lost, unavailable, per_partition = self.lost_writes()
        faults = []
        for i, f in enumerate(self.faults):
            if f["action"] not in FAULT_ACTIONS:
                continue
            # The window of a fault ends at the next step that changes the cluster's health.
            nxt = next((g["at_ms"] for g in self.faults[i + 1:] if g["at_ms"] > f["at_ms"]), end)
            recovered = self._recovery(f["at_ms"], nxt if nxt > f["at_ms"] else end, None)
            replicated = self._recovery(f["at_ms"], end, 2)
            faults.append({
                "at_s": f["at_ms"] / 1000, "action": f["action"], "line": f["line"], "note": f["note"],
                "args": f["args"],
                "recovered_after_s": None if recovered is None else recovered / 1000,
                "window_end_s": nxt / 1000,
                "fully_replicated_after_s": None if replicated is None else replicated / 1000,
            })
        return {
            "scenario": sim.scenario.name,
            "seed": sim.seed,
            "simulated_s": end / 1000,
            "partitions": len(self.state),
            "offline_partition_seconds": round(self.offline_ms / 1000, 3),
            "under_min_isr_partition_seconds": round(self.under_min_isr_ms / 1000, 3),
            "under_replicated_partition_seconds": round(self.under_replicated_ms / 1000, 3),
            "at_end": {"offline": self.offline, "under_min_isr": self.under_min_isr,
                       "under_replicated": self.under_replicated, "controller_id": sim.controller_id,
                       "controller_epoch": self.controller_epoch},
            "produce": {
                "sent_messages": self.sent_messages,
                "acknowledged_messages": self.acked_messages,
                "failed_messages": self.failed_messages,
                "pending_messages": self.sent_messages - self.acked_messages - self.failed_messages,
                "errors": dict(sorted(self.errors.items())),
                "error_messages": dict(sorted(self.error_messages.items())),
            },
            "acknowledged_writes_lost": lost,
            "acknowledged_writes_unavailable": unavailable,
            "lost_by_partition": dict(sorted(per_partition.items())),
            "loss_events": [{"at_s": t / 1000, "partition": f"{tp[0]}-{tp[1]}", "lost": n, "why": why}
                            for t, tp, n, why in self.loss_events],
            "truncated_records": self.truncated_records,
            "elections": dict(self.elections),
            "controller_elections": self.controller_elections,
            "controller_failovers": max(0, self.controller_elections - 1),
            "faults": faults,
            "observations": self.observations,
        }


def _seconds(x: float | None, until: float | None = None) -> str:
    if x is None:
        return "not recovered" + (f" by {until:g}s" if until is not None else "")
    return f"{x:g}s"


def format_summary(s: dict) -> str:
    """The summary for people, one fact per line."""
    p = s["produce"]
    lines = [
        f"scenario {s['scenario']} (seed {s['seed']}): {s['simulated_s']:g}s simulated, {s['partitions']} partitions",
        f"  offline partition-seconds        {s['offline_partition_seconds']:g}",
        f"  under-min-ISR partition-seconds  {s['under_min_isr_partition_seconds']:g}",
        f"  under-replicated partition-secs  {s['under_replicated_partition_seconds']:g}",
        f"  produced {p['sent_messages']} messages: {p['acknowledged_messages']} acknowledged, "
        f"{p['failed_messages']} failed, {p['pending_messages']} still being retried at the end",
    ]
    if p["errors"]:
        lines.append("  produce errors (attempts / messages in them): " + ", ".join(
            f"{code} {n}/{p['error_messages'][code]}" for code, n in p["errors"].items()))
    else:
        lines.append("  produce errors: none")
    lines.append(f"  acknowledged writes lost         {s['acknowledged_writes_lost']}"
                 + (f" (+{s['acknowledged_writes_unavailable']} unavailable: only on offline replicas)"
                    if s["acknowledged_writes_unavailable"] else ""))
    for e in s["loss_events"]:
        lines.append(f"    at {e['at_s']:g}s {e['partition']}: {e['lost']} lost: {e['why']}")
    lines.append("  elections: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in s["elections"].items()))
    lines.append(f"  controller failovers             {s['controller_failovers']} "
                 f"(epoch {s['at_end']['controller_epoch']} at the end, controller {s['at_end']['controller_id']})")
    if s["faults"]:
        lines.append("  faults (recovered = no offline or under-min-ISR partition, no produce error):")
        for f in s["faults"]:
            args = ", ".join(f"{k}={v}" for k, v in f["args"].items())
            note = f"  # {f['note']}" if f.get("note") else ""
            lines.append(f"    {f['at_s']:>7g}s {f['action']}({args}): recovered after "
                         f"{_seconds(f['recovered_after_s'], f['window_end_s'])}, fully replicated after "
                         f"{_seconds(f['fully_replicated_after_s'])}{note}")
    for o in s["observations"]:
        if o["kind"] == "expect":
            mark = "ok" if o["ok"] else "FAILED"
            lines.append(f"  expect at {o['at_s']:g}s (line {o['line']}): {o['what']}: {mark}"
                         + ("" if o["ok"] else f" (actual: {o['actual']})"))
        elif o["kind"] == "describe":
            lines.append(f"  describe at {o['at_s']:g}s (line {o['line']}):")
            lines.extend("    " + row for row in o["lines"])
        elif o["kind"] == "describe_quorum":
            lines.append(f"  describe quorum at {o['at_s']:g}s (line {o['line']}):")
            lines.extend("    " + row for row in o["lines"])
        elif o["kind"] == "note":
            lines.append(f"  note at {o['at_s']:g}s: {o['text']}")
    e = s["at_end"]
    lines.append(f"  at the end: {e['offline']} offline, {e['under_min_isr']} under min ISR, "
                 f"{e['under_replicated']} under-replicated")
    return "\n".join(lines)


assert all(k in KINDS for k in (_PT, _LU, _CE, _TD))
