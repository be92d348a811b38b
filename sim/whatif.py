"""What-if on a real cluster: which partitions go offline, and which fall under min.insync.replicas,
if these brokers die (``kill``) or are shut down (``shutdown``)?

``what_if(description, kill=..., shutdown=...)`` takes a :class:`sim.describe_parser.ClusterDescription`
(the text of ``kafka-topics.sh --describe``, or a reassignment JSON), rebuilds that cluster around
the embedded controller (``controller.embedding.cluster.Cluster``, seed 0: deterministic), brings every
partition to the described replicas, leader and ISR as far as the controller allows, then plays the
scenario and reports every partition before and after. It is the check that would have prevented
the incident of ``../shared/seeds/004_34d7787fd39b218f.txt``: RF=1 partitions on a broker that was
taken out went offline, because a partition with one replica has nowhere to move.

How the described state is reached, with the controller's own operations only (no epoch is
invented, no znode written behind the controller's back):

1. Brokers: every broker id the description names, started in id order except that a broker the
   description shows alive starts first and becomes the controller (the describe output does not
   say which broker is the controller). Time is then moved past the controller's first automatic
   preferred-leader check (5 s after its election); the next one would be 300 s later, after the
   scenario, so the rebalance never undoes a described non-preferred leader.
2. Topics (``create_topic(name, assignment=..., configs=...)``, every described config, so
   ``min.insync.replicas`` and ``unclean.leader.election.enable`` included), each partition's
   replicas permuted so that the described leader comes first: the controller elects it.
3. A reassignment to the described replica order (``reassign_partitions``, a reorder is a
   reassignment that completes at once: Kafka keeps a live leader that is in the new replicas and
   bumps its leader epoch). This is how an operator gets a leader that is not the first replica,
   too. A partition whose replication factor differs from its topic's partition 0 is created at the
   topic's factor and reassigned to its replicas; its new replicas join the ISR
   (``catch_up_followers``) and the reassignment completes.
4. ISR: the leader sends AlterPartition with the described ISR (shrink, order), as Kafka leaders do.
5. Ongoing reassignments (``Adding Replicas:``/``Removing Replicas:``): reassigned to the target
   replicas, left in progress (the adding replicas are not in the ISR).
6. Brokers the description shows offline (``Offline:`` columns; the ISR of a partition without a
   leader, which in ZooKeeper mode is the last leader, kept when it died) are killed and their
   sessions expire. Their leaderless partitions stay offline with that ISR, as described.

The result is compared with the description: every difference is reported ("could not be
reproduced"). Then the scenario: brokers in ``shutdown`` stop one after the other with a controlled
shutdown (``stop_broker``: Kafka's retries); brokers in ``kill`` die at once (kill -9) and time
passes until their ZooKeeper sessions expire (``zookeeper.session.timeout.ms``, 18 s). The report
lists, per partition, leader and ISR before and after, whether it is offline (no live leader),
whether it is under its ``min.insync.replicas`` (online with |ISR| < min ISR: acks=all producers
fail), whether an unclean election happened, the RF=1 partitions on the affected brokers, advice, and
the reassignment that removes what a reassignment can remove (:func:`plan_reassignment`: one replica
of each partition whose every replica is on the affected brokers moved to a broker that stays up).
Brokers may be given racks (``racks``): they register with them, and the plan prefers other racks.

Not modelled (reported when the description shows them): Confluent observers are ordinary replicas
that are not in the ISR (no automatic observer promotion); ``Elr``/``LastKnownElr`` (KRaft,
KIP-966) have no ZooKeeper-era counterpart; an ``Offline:`` replica on a broker that is alive (a
failed log directory) cannot be made offline alone.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import structlog

from controller.embedding.cluster import Cluster
from events.records import ELECTION_NAMES, ELECTION_NONE, ELECTION_OFFLINE_UNCLEAN, PartitionTransition
from sim.describe_parser import ClusterDescription, PartitionDescription

_log = structlog.get_logger("kcontroller.sim")

SEED = 0
SCENARIO_GAP_MS = 1_000
EXAMPLES = 5
UNCLEAN = "unclean.leader.election.enable"
MIN_ISR = "min.insync.replicas"
# How a leader changed, in words (the JSON keeps events.records.ELECTION_NAMES).
ELECTION_WORDS = {"offline": "failover from the ISR", "offline_unclean": "unclean election",
                  "controlled_shutdown": "controlled shutdown", "preferred": "preferred election",
                  "reassign": "reassignment", "new_partition": "new partition"}
RF1_ADVICE = ("reassign before shutting down (kafka-reassign-partitions.sh) or raise their replication factor: "
              "a partition with one replica goes offline with its broker")


class WhatIfError(ValueError):
    """A scenario that cannot be played on the description (unknown broker, nothing to simulate, ...)."""


# --- the report -------------------------------------------------------------------------------------------
@dataclass
class PartitionOutcome:
    """One described partition before and after the scenario (leader -1: none)."""
    topic: str
    partition: int
    replicas: tuple[int, ...]
    min_isr: int
    described_leader: int | None
    described_isr: tuple[int, ...]
    before_leader: int
    before_isr: tuple[int, ...]
    after_leader: int
    after_isr: tuple[int, ...]
    offline_before: bool
    offline_after: bool
    unclean: bool = False
    election: str | None = None          # how the leader last changed during the scenario
    affected_replicas: tuple[int, ...] = ()

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def under_min_isr_before(self) -> bool:
        return not self.offline_before and len(self.before_isr) < self.min_isr

    @property
    def under_min_isr_after(self) -> bool:
        return not self.offline_after and len(self.after_isr) < self.min_isr

    @property
    def leader_moved(self) -> bool:
        return self.before_leader != self.after_leader

    @property
    def changed(self) -> bool:
        return self.leader_moved or self.before_isr != self.after_isr or self.unclean

    @property
    def notable(self) -> bool:
        return (self.changed or self.offline_before or self.offline_after or self.under_min_isr_before
                or self.under_min_isr_after)

    def to_json_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "replicas": list(self.replicas),
                "min_insync_replicas": self.min_isr,
                "described": {"leader": self.described_leader, "isr": list(self.described_isr)},
                "before": {"leader": self.before_leader, "isr": list(self.before_isr), "offline": self.offline_before,
                           "under_min_isr": self.under_min_isr_before},
                "after": {"leader": self.after_leader, "isr": list(self.after_isr), "offline": self.offline_after,
                          "under_min_isr": self.under_min_isr_after},
                "unclean_election": self.unclean, "election": self.election,
                "replicas_on_affected_brokers": list(self.affected_replicas)}


@dataclass
class WhatIfReport:
    """The answer of :func:`what_if`; ``lines()`` renders it as text, ``to_json_dict()`` as JSON."""
    source: str
    format: str
    brokers: list[int]
    kill: tuple[int, ...]
    shutdown: tuple[int, ...]
    min_insync_replicas: int | None
    unclean: bool
    partitions: list[PartitionOutcome]
    offline_in_description: list[int] = field(default_factory=list)
    controller_before: int = -1
    controller_after: int = -1
    controlled_shutdown: dict[int, bool] = field(default_factory=dict)
    session_timeout_ms: int = 0
    scenario_start_ms: int = 0
    scenario_end_ms: int = 0
    rf1_on_affected: list[tuple[str, int, int]] = field(default_factory=list)
    all_replicas_on_affected: list[tuple[str, int]] = field(default_factory=list)
    deviations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    run: int = 1
    runs: int = 1
    racks: dict[int, str] = field(default_factory=dict)
    plan: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)

    @property
    def affected(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.kill) | set(self.shutdown)))

    def totals(self) -> dict[str, int]:
        ps = self.partitions
        return {
            "partitions": len(ps),
            "offline_before": sum(p.offline_before for p in ps),
            "offline_after": sum(p.offline_after for p in ps),
            "newly_offline": sum(p.offline_after and not p.offline_before for p in ps),
            "under_min_isr_before": sum(p.under_min_isr_before for p in ps),
            "under_min_isr_after": sum(p.under_min_isr_after for p in ps),
            "newly_under_min_isr": sum(p.under_min_isr_after and not p.under_min_isr_before for p in ps),
            "unclean_elections": sum(p.unclean for p in ps),
            "leaders_moved": sum(p.leader_moved and not p.offline_after for p in ps),
            "rf1_on_affected": len(self.rf1_on_affected),
        }

    def partition(self, topic: str, partition: int) -> PartitionOutcome:
        return next(p for p in self.partitions if p.tp == (topic, partition))

    def offline_after(self) -> list[tuple[str, int]]:
        return [p.tp for p in self.partitions if p.offline_after]

    def under_min_isr_after(self) -> list[tuple[str, int]]:
        return [p.tp for p in self.partitions if p.under_min_isr_after]

    def to_json_dict(self) -> dict:
        return {"source": self.source, "format": self.format, "run": self.run, "runs": self.runs,
                "brokers": self.brokers, "offline_in_description": self.offline_in_description,
                "scenario": {"kill": list(self.kill), "shutdown": list(self.shutdown),
                             "min_insync_replicas_default": self.min_insync_replicas,
                             "unclean_leader_election_enable": self.unclean,
                             "start_ms": self.scenario_start_ms, "end_ms": self.scenario_end_ms,
                             "zookeeper_session_timeout_ms": self.session_timeout_ms,
                             "controlled_shutdown_succeeded": {str(b): ok for b, ok in
                                                               sorted(self.controlled_shutdown.items())}},
                "controller": {"before": self.controller_before, "after": self.controller_after},
                "totals": self.totals(),
                "offline_after": [f"{t}-{p}" for t, p in self.offline_after()],
                "under_min_isr_after": [f"{t}-{p}" for t, p in self.under_min_isr_after()],
                "rf1_on_affected": [{"topic": t, "partition": p, "broker": b} for t, p, b in self.rf1_on_affected],
                "rf1_advice": RF1_ADVICE if self.rf1_on_affected else None,
                "all_replicas_on_affected": [f"{t}-{p}" for t, p in self.all_replicas_on_affected],
                "advice": self.advice, "could_not_reproduce": self.deviations, "notes": self.notes,
                "racks": {str(b): r for b, r in sorted(self.racks.items())},
                "plan": [{"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in sorted(self.plan.items())],
                "partitions": [p.to_json_dict() for p in self.partitions]}

    def lines(self, all_partitions: bool = False) -> list[str]:
        """The report as text; only the partitions that change or are in trouble unless ``all_partitions``."""
        t = self.totals()
        what = []
        if self.shutdown:
            what.append(f"shut down {_ints(self.shutdown)}")
        if self.kill:
            what.append(f"kill {_ints(self.kill)}")
            killed_racks = sorted({self.racks[b] for b in self.kill if b in self.racks})
            if killed_racks and all(self.racks.get(b) in killed_racks for b in self.kill):
                what[-1] += f" (rack{'s' if len(killed_racks) > 1 else ''} {', '.join(killed_racks)})"
        out = [f"What if: {' and '.join(what) or 'nothing happens'} — {self.source} ({self.format}, "
               f"{t['partitions']} partitions, brokers {_ints(self.brokers)})"]
        if self.runs > 1:
            out.append(f"  the cluster as describe run {self.run} of {self.runs} shows it")
        if self.offline_in_description:
            out.append(f"  offline in the description: brokers {_ints(self.offline_in_description)}")
        for b, ok in sorted(self.controlled_shutdown.items()):
            out.append(f"  controlled shutdown of broker {b}: "
                       + ("succeeded" if ok else "failed after its retries (it stopped anyway, still leading)"))
        if [b for b in self.kill if b not in self.offline_in_description]:
            out.append(f"  killed at {self.scenario_start_ms} ms; sessions expired by {self.scenario_end_ms} ms "
                       f"(zookeeper.session.timeout.ms={self.session_timeout_ms})")
        out.append(f"  controller: broker {_who(self.controller_before)} before, {_who(self.controller_after)} after")
        out.append("")
        out.append(f"Offline partitions:        {t['offline_before']} -> {t['offline_after']}"
                   f"  (+{t['newly_offline']})")
        mins = f"default {self.min_insync_replicas}" if self.min_insync_replicas is not None else "default 1"
        out.append(f"Under min.insync.replicas: {t['under_min_isr_before']} -> {t['under_min_isr_after']}"
                   f"  (+{t['newly_under_min_isr']}; topic configs, {mins})")
        out.append(f"Unclean elections:         {t['unclean_elections']}")
        out.append(f"Leaders moved:             {t['leaders_moved']}")
        out.append("")
        shown = [p for p in self.partitions if all_partitions or p.notable]
        if shown:
            rows = [("PARTITION", "REPLICAS", "MIN.ISR", "BEFORE", "AFTER", "STATUS")]
            for p in shown:
                rows.append((f"{p.topic}-{p.partition}", _ints(p.replicas), str(p.min_isr),
                             _state(p.before_leader, p.before_isr, p.offline_before),
                             _state(p.after_leader, p.after_isr, p.offline_after), _status(p)))
            widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
            for r in rows:
                out.append("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])
        hidden = len(self.partitions) - len(shown)
        if hidden:
            out.append(f"({hidden} partition(s) unaffected, not listed; --all-partitions lists them)")
        if self.rf1_on_affected:
            out.append("")
            out.append(f"RF=1 partitions on brokers {_ints(self.affected)}: "
                       + _examples([f"{t}-{p} (broker {b})" for t, p, b in self.rf1_on_affected], 20))
            out.append(f"  -> {RF1_ADVICE}")
        if self.all_replicas_on_affected:
            if not self.rf1_on_affected:
                out.append("")
            gone = sorted(set(self.affected) | set(self.offline_in_description))
            out.append(f"Partitions with every replica on the affected or already offline brokers ({_ints(gone)}): "
                       + _examples([f"{t}-{p}" for t, p in self.all_replicas_on_affected], 20))
        if self.advice:
            out.append("")
            out.append("Advice:")
            out.extend(f"  - {a}" for a in self.advice)
        if self.plan:
            out.append("")
            out.append(f"Reassignment that moves a replica of each of these {len(self.plan)} partition(s) to a "
                       f"broker that stays up (--plan FILE writes it):")
            for (t, p), replicas in sorted(self.plan.items()):
                out.append(f"  {t}-{p}: {_ints(self.partition(t, p).replicas)} -> {_ints(replicas)}")
        if self.deviations:
            out.append("")
            out.append("Could not be reproduced from the description:")
            out.extend(f"  - {d}" for d in self.deviations)
        if self.notes:
            out.append("")
            out.append("Notes:")
            out.extend(f"  - {n}" for n in self.notes)
        return out


def _ints(xs: Iterable[int]) -> str:
    return ",".join(map(str, xs))


def _who(b: int) -> str:
    return "none" if b < 0 else str(b)


def _state(leader: int, isr: tuple, offline: bool) -> str:
    return f"{'none' if offline else leader} [{_ints(isr)}]"


def _status(p: PartitionOutcome) -> str:
    s = []
    if p.offline_after:
        s.append("OFFLINE" if p.offline_before else "GOES OFFLINE")
    elif p.under_min_isr_after:
        s.append(f"UNDER MIN ISR ({len(p.after_isr)}<{p.min_isr})")
    if p.unclean:
        s.append("UNCLEAN election (data loss)")
    if p.leader_moved and not p.offline_after:
        s.append(f"leader {_who(p.before_leader) if not p.offline_before else 'none'}->{p.after_leader}"
                 + (f" ({ELECTION_WORDS.get(p.election, p.election)})" if p.election else ""))
    if not s and p.before_isr != p.after_isr:
        s.append("ISR shrinks" if len(p.after_isr) < len(p.before_isr) else "ISR changes")
    return ", ".join(s) or "ok"


def _examples(items: list[str], n: int = EXAMPLES) -> str:
    more = f" ... and {len(items) - n} more" if len(items) > n else ""
    return ", ".join(items[:n]) + more


class _Deviations:
    """Differences from the description, grouped by kind (a thousand partitions make one line)."""

    def __init__(self) -> None:
        self.kinds: dict[str, list[str]] = {}

    def add(self, kind: str, item: str | None = None) -> None:
        self.kinds.setdefault(kind, [])
        if item is not None:
            self.kinds[kind].append(item)

    def lines(self) -> list[str]:
        out = []
        for kind, items in self.kinds.items():
            out.append(f"{kind}: {len(items)} partition(s): {_examples(items)}" if items else kind)
        return out


# --- the plan ---------------------------------------------------------------------------------------------
@dataclass
class _Target:
    """What the controller is driven to for one partition, before the offline brokers die."""
    described: PartitionDescription | None     # None: a placeholder for an undescribed partition number
    leader: int
    origin: tuple[int, ...]                   # ORS: the replicas before an ongoing reassignment (or all)
    target: tuple[int, ...]                   # TRS
    isr: tuple[int, ...]
    init: tuple[int, ...] = ()                # the creation assignment (leader first, topic's RF)


def _tp(t: str, p: int) -> str:
    return f"{t}-{p}"


def _infer_offline(desc: ClusterDescription, dev: _Deviations) -> list[int]:
    """Brokers the description shows offline, minus those it also shows leading a partition."""
    claims: dict[int, str] = {}
    alive: dict[int, str] = {}
    for p in desc.partitions():
        for b in p.offline or ():
            claims.setdefault(b, f"Offline: of {_tp(*p.tp)}")
        if p.leader is None:
            for b in p.isr:
                claims.setdefault(b, f"in the ISR of leaderless {_tp(*p.tp)}")
        else:
            alive.setdefault(p.leader, f"leader of {_tp(*p.tp)}")
    if desc.live_brokers is not None:
        for b in desc.broker_ids():
            if b in desc.live_brokers:
                alive.setdefault(b, "live in the kcontroller header")
            else:
                claims.setdefault(b, "not live in the kcontroller header")
    offline = []
    for b in sorted(claims):
        if b in alive:
            dev.add(f"broker {b} is shown offline ({claims[b]}) but also alive ({alive[b]}): a failed log "
                    f"directory, or two moments mixed; kept alive")
        else:
            offline.append(b)
    return offline


def _plan(desc: ClusterDescription, dev: _Deviations) -> dict[str, dict[int, _Target]]:
    brokers = desc.broker_ids()
    plan: dict[str, dict[int, _Target]] = {}
    for name, topic in sorted(desc.topics.items()):
        if not topic.partitions:
            continue
        targets: dict[int, _Target] = {}
        for n, p in sorted(topic.partitions.items()):
            adding, removing = set(p.adding_replicas), set(p.removing_replicas)
            origin = tuple(r for r in p.replicas if r not in adding) or p.replicas
            target = tuple(r for r in p.replicas if r not in removing) or p.replicas
            isr = tuple(r for r in p.isr if r in origin)
            if len(isr) != len(p.isr):
                dev.add("ISR members that are not (original) replicas, left out", _tp(name, n))
            if p.leader is not None and p.leader in origin:
                leader = p.leader
            else:
                if p.leader is not None:
                    dev.add("described leader is not an (original) replica; the first ISR member leads", _tp(name, n))
                leader = isr[0] if isr else origin[0]
            if leader not in isr:
                if p.leader is not None:
                    dev.add("described leader not in the described ISR; added to it", _tp(name, n))
                isr = (leader,) + isr
            targets[n] = _Target(p, leader, origin, target, isr)
            if p.observers:
                dev.add("Confluent observers modelled as ordinary replicas outside the ISR (no automatic "
                        "observer promotion)", _tp(name, n))
            if p.elr or p.last_known_elr:
                dev.add("Elr/LastKnownElr (KRaft, KIP-966) not modelled by the ZooKeeper-era controller",
                        _tp(name, n))
            if p.marked_for_deletion or topic.marked_for_deletion:
                dev.add("topic marked for deletion: simulated as a live topic", _tp(name, n))
        # Creation: one replication factor per topic (partition 0's); gaps get placeholders.
        top = max(targets)
        first = targets[min(targets)]
        template = (first.leader,) + tuple(r for r in first.origin if r != first.leader)
        rf0 = len(targets[0].origin) if 0 in targets else len(template)
        missing = [n for n in range(top + 1) if n not in targets]
        if missing:
            dev.add(f"topic {name}: partitions {_examples([str(n) for n in missing], 10)} not described; "
                    f"placeholders with replicas {_ints(_resize(template, rf0, brokers))} were created (not reported)")
        for n in range(top + 1):
            if n not in targets:
                init = _resize(template, rf0, brokers)
                targets[n] = _Target(None, init[0], init, init, init, init)
            else:
                t = targets[n]
                t.init = _resize((t.leader,) + tuple(r for r in t.origin if r != t.leader), rf0, brokers)
        plan[name] = targets
    return plan


def _resize(replicas: tuple[int, ...], rf: int, brokers: list[int]) -> tuple[int, ...]:
    if len(replicas) >= rf:
        return replicas[:rf]
    return replicas + tuple(b for b in brokers if b not in replicas)[:rf - len(replicas)]


# --- reading the cluster ----------------------------------------------------------------------------------
def _read(cluster: Cluster, tps: list[tuple[str, int]]) -> dict[tuple[str, int], tuple]:
    """{tp: (leader, isr, offline, replica assignment)} from the store (works without a controller)."""
    admin = cluster.admin
    live = set(admin.get_all_broker_and_epochs_in_cluster())
    assignments = admin.get_full_replica_assignment_for_topics(sorted({t for t, _ in tps}))
    states = admin.get_topic_partition_states(tps)
    out = {}
    for tp in tps:
        info = states.get(tp)
        leader, isr = (-1, ()) if info is None else (info.leader_and_isr.leader, tuple(info.leader_and_isr.isr))
        offline = leader < 0 or leader not in live
        out[tp] = (leader if not offline else -1, isr, offline, assignments.get(tp))
    return out


def _leader_and_isr(cluster: Cluster, tp: tuple[str, int]):
    info = cluster.admin.get_topic_partition_states([tp]).get(tp)
    return None if info is None else info.leader_and_isr


# --- the entry point --------------------------------------------------------------------------------------
def what_if(description: ClusterDescription, *, kill: Iterable[int] = (), shutdown: Iterable[int] = (),
            min_insync_replicas: int | None = None, unclean: bool = False,
            racks: Mapping[int, str] | None = None) -> WhatIfReport:
    """Rebuild the described cluster, kill / shut down brokers, and report what happens (module docstring).
    ``racks`` are the brokers' ``broker.rack`` (they register with them; the plan prefers other racks)."""
    kill, shutdown = tuple(int(b) for b in kill), tuple(int(b) for b in shutdown)
    racks = dict(racks or {})
    brokers = description.broker_ids()
    stray = sorted(set(racks) - set(brokers))
    if stray:
        raise WhatIfError(f"racks given for broker(s) {_ints(stray)} not in the description (its brokers: "
                          f"{_ints(brokers)})")
    if not description.partitions():
        raise WhatIfError(f"{description.source}: no partition is described; nothing to simulate")
    unknown = sorted((set(kill) | set(shutdown)) - set(brokers))
    if unknown:
        raise WhatIfError(f"broker(s) {_ints(unknown)} not in the description (its brokers: {_ints(brokers)})")
    both = sorted(set(kill) & set(shutdown))
    if both:
        raise WhatIfError(f"broker(s) {_ints(both)} both killed and shut down")
    if len(set(kill)) != len(kill) or len(set(shutdown)) != len(shutdown):
        raise WhatIfError("a broker is named twice")
    if min_insync_replicas is not None and min_insync_replicas < 1:
        raise WhatIfError("min.insync.replicas must be at least 1")

    dev = _Deviations()
    notes = list(description.notes)
    offline = _infer_offline(description, dev)
    plan = _plan(description, dev)
    cluster = Cluster(seed=SEED, configs={UNCLEAN: "true"} if unclean else None)
    timeout = cluster.session_timeout_ms   # zookeeper.session.timeout.ms as the server negotiates it

    # 1. Brokers; the controller is a broker that stays alive.
    alive = [b for b in brokers if b not in offline]
    first = alive[0] if alive else brokers[0]
    for b in [first] + [b for b in brokers if b != first]:
        cluster.start_broker(b, rack=racks.get(b), at=0)
    controller = cluster.controller
    due = controller.scheduler.next_deadline() if controller is not None else None
    if due is not None:
        cluster.advance_to(due)
    _build(cluster, description, plan, dev)

    # 6. The brokers the description shows offline.
    if offline:
        for b in offline:
            cluster.kill_broker(b)
        cluster.advance_to(cluster.now + timeout + 1)
    tps = [(t, n) for t, targets in sorted(plan.items()) for n, tg in sorted(targets.items()) if tg.described]
    before = _read(cluster, tps)
    _compare(plan, before, dev)
    controller_before = cluster.controller_id

    # The scenario.
    start = cluster.now + SCENARIO_GAP_MS
    mark = len(cluster.records)
    results: dict[int, bool] = {}
    at: int | None = start
    for b in shutdown:
        if b in offline:
            notes.append(f"broker {b} is already offline in the description: nothing to shut down")
            continue
        results[b] = cluster.stop_broker(b, at=at)
        at = None
    killed_at = None
    for b in kill:
        if b in offline:
            notes.append(f"broker {b} is already offline in the description: nothing to kill")
            continue
        cluster.kill_broker(b, at=at)
        killed_at = cluster.now
        at = None
    if killed_at is not None:
        cluster.advance_to(killed_at + timeout + 1)
    elif at is not None:
        cluster.advance_to(at)
    after = _read(cluster, tps)
    elections: dict[tuple, int] = {}
    unclean_tps: set[tuple] = set()
    for r in cluster.records[mark:]:
        if type(r) is PartitionTransition and r.election != ELECTION_NONE:
            elections[(r.topic, r.partition)] = r.election
            if r.election == ELECTION_OFFLINE_UNCLEAN:
                unclean_tps.add((r.topic, r.partition))

    affected = set(kill) | set(shutdown)
    outcomes = []
    for tp in tps:
        target = plan[tp[0]][tp[1]]
        d = target.described
        topic = description.topics[tp[0]]
        min_isr = _min_isr(topic.configs.get(MIN_ISR), min_insync_replicas, dev, tp[0])
        b_leader, b_isr, b_off, b_assign = before[tp]
        a_leader, a_isr, a_off, _ = after[tp]
        replicas = tuple(b_assign.replicas) if b_assign is not None else d.replicas
        outcomes.append(PartitionOutcome(
            tp[0], tp[1], replicas, min_isr, d.leader, d.isr, b_leader, b_isr, a_leader, a_isr, b_off, a_off,
            unclean=tp in unclean_tps, election=ELECTION_NAMES.get(elections[tp]) if tp in elections else None,
            affected_replicas=tuple(r for r in replicas if r in affected)))

    rf1 = [(p.topic, p.partition, p.replicas[0]) for p in outcomes
           if len(p.replicas) == 1 and p.replicas[0] in affected]
    every = [p.tp for p in outcomes if len(p.replicas) > 1 and set(p.replicas) <= affected | set(offline)]
    report = WhatIfReport(
        description.source, description.format, brokers, kill, shutdown, min_insync_replicas, unclean, outcomes,
        offline_in_description=offline, controller_before=controller_before, controller_after=cluster.controller_id,
        controlled_shutdown=results, session_timeout_ms=timeout, scenario_start_ms=start,
        scenario_end_ms=cluster.now, rf1_on_affected=rf1, all_replicas_on_affected=every,
        deviations=dev.lines(), notes=notes, run=description.run, runs=description.runs, racks=racks)
    report.plan = plan_reassignment(report)
    report.advice = _advice(report)
    _log.info("what-if played", source=description.source, kill=kill, shutdown=shutdown, **report.totals())
    return report


def plan_reassignment(report: WhatIfReport) -> dict[tuple[str, int], tuple[int, ...]]:
    """The reassignment that removes the risks a reassignment can remove: each partition whose every replica is on
    the affected (or already offline) brokers, RF=1 ones included, gets one of those replicas (its last; the only
    one of an RF=1 partition) moved to a broker that stays up: the one on a rack the partition's other replicas
    are not on (when racks are known), holding the fewest replicas, lowest id first. Empty when there is no such
    partition, or no broker stays up."""
    gone = set(report.affected) | set(report.offline_in_description)
    up = [b for b in report.brokers if b not in gone]
    if not up:
        return {}
    load = {b: 0 for b in report.brokers}
    for p in report.partitions:
        for r in p.replicas:
            load[r] = load.get(r, 0) + 1
    plan = {}
    for p in sorted(report.partitions, key=lambda p: p.tp):
        if p.offline_before or not p.replicas or not set(p.replicas) <= gone:
            continue   # (an offline partition has no leader for a new replica to copy from)
        victim = p.replicas[-1]
        kept_racks = {report.racks.get(r) for r in p.replicas if r != victim} - {None}
        choices = [b for b in up if b not in p.replicas]
        if not choices:
            continue
        target = min(choices, key=lambda b: (report.racks.get(b) in kept_racks, load[b], b))
        plan[p.tp] = tuple(target if r == victim else r for r in p.replicas)
        load[target] += 1
        load[victim] -= 1
    return plan


def _min_isr(value: str | None, default: int | None, dev: _Deviations, topic: str) -> int:
    if value is not None:
        try:
            n = int(value)
            if n >= 1:
                return n
        except ValueError:
            pass
        dev.add(f"topic {topic}: min.insync.replicas={value!r} is not a positive number; the default is used")
    return default if default is not None else 1


def _build(cluster: Cluster, desc: ClusterDescription, plan: dict[str, dict[int, _Target]], dev: _Deviations) -> None:
    """Steps 2-5 of the module docstring."""
    created: dict[str, dict[int, _Target]] = {}
    for name, targets in sorted(plan.items()):
        assignment = [targets[n].init for n in range(len(targets))]
        try:
            cluster.create_topic(name, assignment=assignment, configs=desc.topics[name].configs)
        except Exception as e:   # an illegal or colliding name: the rest of the cluster still runs
            dev.add(f"topic {name} could not be created ({type(e).__name__}: {e}); left out")
            continue
        created[name] = targets
    plan.clear()
    plan.update(created)

    # 3. Replica order (and replication factor) by reassignment.
    moves = {(t, n): tg.origin for t, targets in plan.items() for n, tg in targets.items() if tg.init != tg.origin}
    if moves:
        _reassign(cluster, moves, dev, "reordering/resizing the replicas")
        if cluster.list_reassignments():
            cluster.catch_up_followers()
        for tp in sorted(cluster.list_reassignments() or {}):
            dev.add("reassignment to the described replicas did not complete", _tp(*tp))

    # 4. ISRs: the leader's AlterPartition.
    proposals: dict[int, dict] = {}
    for t, targets in sorted(plan.items()):
        for n, tg in sorted(targets.items()):
            lai = _leader_and_isr(cluster, (t, n))
            if lai is None:
                continue
            if tg.described is not None and lai.leader != tg.leader:
                dev.add("the controller elected another leader than the described one", _tp(t, n))
                continue
            if tuple(lai.isr) != tg.isr and lai.leader >= 0:
                proposals.setdefault(lai.leader, {})[(t, n)] = (lai.leader_epoch, tg.isr, 0, lai.partition_epoch)
    for leader, partitions in sorted(proposals.items()):
        response = cluster.alter_partition(leader, partitions)
        if response is None or response.error != "NONE":
            for tp in sorted(partitions):
                dev.add(f"AlterPartition refused ({'no controller' if response is None else response.error})",
                        _tp(*tp))
            continue
        for tp, res in sorted(response.partitions.items()):
            if isinstance(res, str):
                dev.add(f"AlterPartition of the described ISR refused ({res})", _tp(*tp))

    # 5. Ongoing reassignments.
    ongoing = {(t, n): tg.target for t, targets in plan.items() for n, tg in targets.items()
               if tg.described is not None and tg.described.being_reassigned}
    if ongoing:
        _reassign(cluster, ongoing, dev, "the ongoing reassignment")
        still = cluster.list_reassignments() or {}
        for tp in sorted(ongoing):
            if tp not in still:
                dev.add("the described ongoing reassignment completed at once (its adding replicas are in the ISR)",
                        _tp(*tp))


def _reassign(cluster: Cluster, moves: dict, dev: _Deviations, what: str) -> None:
    answer = cluster.reassign_partitions(moves)
    if answer is None:
        for tp in sorted(moves):
            dev.add(f"{what}: no controller answered", _tp(*tp))
        return
    error, results = answer
    for tp in sorted(moves):
        res = results.get(tp, error)
        if res != "NONE":
            dev.add(f"{what} refused ({res})", _tp(*tp))


def _compare(plan: dict[str, dict[int, _Target]], state: dict, dev: _Deviations) -> None:
    """Where the cluster the controller reached differs from the description."""
    for tp, (leader, isr, offline, assignment) in sorted(state.items()):
        d = plan[tp[0]][tp[1]].described
        name = _tp(*tp)
        if d.leader is None and not offline:
            dev.add("described without a leader, but the controller elected one (a live ISR replica)", name)
        elif d.leader is not None and offline:
            dev.add("described with a leader, but offline here", name)
        elif d.leader is not None and leader != d.leader:
            dev.add("leader differs from the described one", name)
        if set(isr) != set(d.isr):
            dev.add("ISR differs from the described one (ZooKeeper-mode controllers take dead brokers out of led "
                    "partitions' ISRs and keep one member in a leaderless one)", name)
        elif tuple(isr) != tuple(d.isr):
            dev.add("ISR order differs from the described one", name)
        if assignment is not None:
            if tuple(assignment.replicas) != tuple(d.replicas):
                dev.add("replica order differs from the described one", name)
            if (tuple(assignment.adding_replicas), tuple(assignment.removing_replicas)) != (
                    tuple(d.adding_replicas), tuple(d.removing_replicas)):
                dev.add("adding/removing replicas differ from the described ones", name)


def _advice(report: WhatIfReport) -> list[str]:
    t = report.totals()
    out = []
    if report.all_replicas_on_affected:
        out.append(f"{len(report.all_replicas_on_affected)} partition(s) have every replica on the affected "
                   f"(or already offline) brokers: move one replica elsewhere first"
                   + (" (what-if --plan FILE writes the reassignment)." if report.plan else "."))
    stuck = [b for b, ok in sorted(report.controlled_shutdown.items()) if not ok]
    if stuck:
        out.append(f"controlled shutdown of broker(s) {_ints(stuck)} could not move every leader (no other live "
                   f"replica in the ISR): let the followers catch up first, or shut down fewer brokers at a time.")
    if t["newly_offline"]:
        lost = [p for p in report.partitions if p.offline_after and not p.offline_before]
        out.append(f"{t['newly_offline']} partition(s) go offline ({_examples([_tp(*p.tp) for p in lost])}): "
                   f"no replica of their ISR survives; they return with their brokers"
                   + ("" if report.unclean else ", or by an unclean election (data loss)") + ".")
    if t["newly_under_min_isr"]:
        out.append(f"{t['newly_under_min_isr']} partition(s) fall under min.insync.replicas: producers with "
                   f"acks=all get NOT_ENOUGH_REPLICAS until the ISR grows back.")
    if t["unclean_elections"]:
        out.append(f"{t['unclean_elections']} unclean election(s): a replica outside the ISR became leader; "
                   f"messages it had not copied are lost.")
    if not out and not report.rf1_on_affected:
        out.append("no partition goes offline or under min.insync.replicas.")
    return out
