"""ControllerContext: the controller's in-memory metadata cache (Kafka's ControllerContext.scala).

Fields and predicates follow Kafka's, in snake_case. Partitions are ``(topic, partition)``
tuples and replicas ``(topic, partition, replica)`` tuples at the API; inside, each topic keeps
its partitions in columns (``TopicState``): bytes for states, ``array('i')`` for leaders and
epochs, and interned tuples for replica lists and ISRs (clusters share a handful of distinct
assignments), so a million partitions fit in a few hundred megabytes. Touched only from the
controller's event thread; not thread-safe, like Kafka's.
"""
from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator

from events.records import EPOCH_DURING_DELETE, NO_EPOCH, NO_LEADER
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment
from statemachines.states import OFFLINE_PARTITION

ABSENT = 0xFF  # no state recorded (Kafka: key absent from partitionStates)
_EMPTY = ()


class TopicState:
    """All partitions of one topic, column by column; partition ids are 0..n-1 as in Kafka."""

    __slots__ = ("name", "replicas", "adding", "removing", "pstate", "leader", "leader_epoch", "isr",
                 "partition_epoch", "state_controller_epoch", "recovery", "rids", "rstates")

    def __init__(self, name: str):
        self.name = name
        self.replicas: list[tuple] = []          # RS per partition
        self.adding: dict[int, tuple] = {}       # AR, only for partitions being reassigned
        self.removing: dict[int, tuple] = {}     # RR
        self.pstate = bytearray()                # PartitionState byte or ABSENT
        self.leader = array("i")
        self.leader_epoch = array("i")           # -1: no leadership info cached
        self.isr: list[tuple] = []
        self.partition_epoch = array("i")
        self.state_controller_epoch = array("i")
        self.recovery = bytearray()
        self.rids: list[tuple] = []              # replicas that have a state, per partition
        self.rstates: list[bytearray] = []       # their ReplicaState bytes, aligned with rids

    def __len__(self) -> int:
        return len(self.replicas)

    def extend_to(self, n: int) -> None:
        grow = n - len(self.replicas)
        if grow <= 0:
            return
        self.replicas.extend([_EMPTY] * grow)
        self.pstate.extend(b"\xff" * grow)
        self.leader.extend([NO_LEADER] * grow)
        self.leader_epoch.extend([NO_EPOCH] * grow)
        self.isr.extend([_EMPTY] * grow)
        self.partition_epoch.extend([0] * grow)
        self.state_controller_epoch.extend([0] * grow)
        self.recovery.extend(b"\x00" * grow)
        self.rids.extend([_EMPTY] * grow)
        self.rstates.extend(bytearray() for _ in range(grow))


class ControllerContext:
    """Kafka's ControllerContext: brokers, topics, assignments, leadership, states, deletion sets."""

    def __init__(self) -> None:
        self._interned: dict[tuple, tuple] = {(): ()}
        self.reset_context()

    # --- lifecycle --------------------------------------------------------------------------
    def reset_context(self) -> None:
        """Forget everything (on resignation), keeping the tuple intern pool."""
        self.epoch = 0
        self.epoch_zk_version = 0
        self.live_broker_epochs: dict[int, int] = {}
        self.broker_info: dict[int, object] = {}  # registration data of live brokers (endpoints, rack)
        self.shutting_down_broker_ids: set[int] = set()
        self.replicas_on_offline_dirs: dict[int, set[tuple]] = {}
        self.topics: dict[str, TopicState] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        # Kafka's topicIds, filled as the controller reads them (a cache: snapshots leave it out).
        self.topic_ids: dict[str, str | None] = {}
        self.partitions_being_reassigned: set[tuple] = set()
        self.topics_to_be_deleted: set[str] = set()
        self.topics_with_deletion_started: set[str] = set()
        self.topics_ineligible_for_deletion: set[str] = set()
        self.offline_partition_count = 0
        self.preferred_replica_imbalance_count = 0
        self.unclean_leader_elections = 0  # UncleanLeaderElectionsPerSec meter count

    def intern(self, t: Iterable[int]) -> tuple:
        t = tuple(t)
        got = self._interned.get(t)
        if got is None:
            self._interned[t] = t
            got = t
        return got

    # --- brokers ----------------------------------------------------------------------------
    def add_live_brokers(self, broker_epochs: dict[int, int]) -> None:
        self.live_broker_epochs.update(broker_epochs)

    def remove_live_brokers(self, broker_ids: Iterable[int]) -> None:
        for b in broker_ids:
            self.live_broker_epochs.pop(b, None)

    def update_broker_metadata(self, broker_id: int, epoch: int) -> None:
        self.live_broker_epochs[broker_id] = epoch

    @property
    def live_broker_ids(self) -> set[int]:
        return self.live_broker_epochs.keys() - self.shutting_down_broker_ids

    @property
    def live_or_shutting_down_broker_ids(self) -> set[int]:
        return set(self.live_broker_epochs)

    def live_or_shutting_down_broker(self, broker_id: int) -> bool:
        return broker_id in self.live_broker_epochs

    def live_broker_id_and_epochs(self) -> dict[int, int]:
        return dict(self.live_broker_epochs)

    def is_replica_online(self, broker_id: int, tp: tuple, include_shutting_down_brokers: bool = False) -> bool:
        if broker_id not in self.live_broker_epochs:
            return False
        if not include_shutting_down_brokers and broker_id in self.shutting_down_broker_ids:
            return False
        offline = self.replicas_on_offline_dirs.get(broker_id)
        return not offline or tp not in offline

    def online_replica_filter(self, include_shutting_down_brokers: bool = False):
        """A fast ``(broker, tp) -> bool`` equivalent of is_replica_online for batch loops."""
        live = set(self.live_broker_epochs)
        if not include_shutting_down_brokers:
            live -= self.shutting_down_broker_ids
        offline_dirs = {b: s for b, s in self.replicas_on_offline_dirs.items() if s}
        if not offline_dirs:
            return lambda b, tp: b in live
        return lambda b, tp: b in live and (b not in offline_dirs or tp not in offline_dirs[b])

    # --- topics and assignments -------------------------------------------------------------
    @property
    def all_topics(self) -> set[str]:
        return set(self.topics)

    def topic_state(self, topic: str) -> TopicState:
        return self.topics[topic]

    def add_topic(self, topic: str, assignment: Iterable[Iterable[int]] = ()) -> TopicState:
        """Register a topic (setAllTopics) with replicas per partition, index = partition id."""
        ts = self.topics.get(topic)
        if ts is None:
            ts = self.topics[topic] = TopicState(topic)
        for p, replicas in enumerate(assignment):
            self.update_partition_full_replica_assignment((topic, p), ReplicaAssignment(tuple(replicas)))
        return ts

    def remove_topic(self, topic: str) -> None:
        ts = self.topics.pop(topic, None)
        if ts is not None:
            for p in range(len(ts)):
                if ts.pstate[p] == OFFLINE_PARTITION and topic not in self.topics_with_deletion_started:
                    self.offline_partition_count -= 1
                if topic not in self.topics_to_be_deleted and not self._has_preferred_leader(ts, p):
                    self.preferred_replica_imbalance_count -= 1
        self.topic_configs.pop(topic, None)
        self.topic_ids.pop(topic, None)
        # As Kafka 3.7's removeTopic: topicsIneligibleForDeletion, partitionsBeingReassigned and
        # replicasOnOfflineDirs keep whatever they had for the topic.
        self.topics_to_be_deleted.discard(topic)
        self.topics_with_deletion_started.discard(topic)

    def _writable(self, topic: str, p: int) -> TopicState:
        """The topic's columns, created and grown so that partition ``p`` exists."""
        ts = self.topics.get(topic)
        if ts is None:
            ts = self.topics[topic] = TopicState(topic)
        if p >= len(ts.replicas):
            ts.extend_to(p + 1)
        return ts

    def partition_replica_assignment(self, tp: tuple) -> tuple:
        """RS of the partition, () if unknown."""
        ts = self.topics.get(tp[0])
        if ts is None or tp[1] >= len(ts.replicas):
            return _EMPTY
        return ts.replicas[tp[1]]

    def partition_full_replica_assignment(self, tp: tuple) -> ReplicaAssignment:
        ts = self.topics.get(tp[0])
        if ts is None or tp[1] >= len(ts.replicas):
            return ReplicaAssignment(_EMPTY)
        p = tp[1]
        return ReplicaAssignment(ts.replicas[p], ts.adding.get(p, _EMPTY), ts.removing.get(p, _EMPTY))

    def update_partition_full_replica_assignment(self, tp: tuple, assignment: ReplicaAssignment) -> None:
        topic, p = tp
        ts = self.topics.get(topic)
        # An unknown partition counts as balanced.
        had_preferred = ts is None or p >= len(ts.replicas) or self._has_preferred_leader(ts, p)
        ts = self._writable(topic, p)
        ts.replicas[p] = self.intern(assignment.replicas)
        for column, values in ((ts.adding, assignment.adding_replicas), (ts.removing, assignment.removing_replicas)):
            if values:
                column[p] = self.intern(values)
            else:
                column.pop(p, None)
        self._adjust_imbalance(ts, p, had_preferred)

    def partition_full_replica_assignment_for_topic(self, topic: str) -> dict[int, ReplicaAssignment]:
        """partition -> ReplicaAssignment of every partition of the topic (Kafka's
        partitionFullReplicaAssignmentForTopic), built from the columns in one pass."""
        ts = self.topics.get(topic)
        if ts is None:
            return {}
        adding, removing, new = ts.adding, ts.removing, tuple.__new__
        if not adding and not removing:
            return {p: new(ReplicaAssignment, (r, _EMPTY, _EMPTY)) for p, r in enumerate(ts.replicas)}
        return {p: new(ReplicaAssignment, (r, adding.get(p, _EMPTY), removing.get(p, _EMPTY)))
                for p, r in enumerate(ts.replicas)}

    def partition_replica_assignment_for_topic(self, topic: str) -> dict[tuple, tuple]:
        ts = self.topics.get(topic)
        return {} if ts is None else {(topic, p): r for p, r in enumerate(ts.replicas)}

    def all_partitions(self) -> Iterator[tuple]:
        for topic, ts in self.topics.items():
            for p in range(len(ts)):
                yield (topic, p)

    def partitions_for_topic(self, topic: str) -> list[tuple]:
        ts = self.topics.get(topic)
        return [] if ts is None else [(topic, p) for p in range(len(ts))]

    def partitions_on_broker(self, broker_id: int) -> list[tuple]:
        return [(topic, p) for topic, ts in self.topics.items()
                for p, replicas in enumerate(ts.replicas) if broker_id in replicas]

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> list[tuple]:
        ids = set(broker_ids)
        out = []
        for topic, ts in self.topics.items():
            for p, replicas in enumerate(ts.replicas):
                for r in replicas:
                    if r in ids:
                        out.append((topic, p, r))
        return out

    def replicas_for_topic(self, topic: str) -> list[tuple]:
        ts = self.topics.get(topic)
        if ts is None:
            return []
        return [(topic, p, r) for p, replicas in enumerate(ts.replicas) for r in replicas]

    def replicas_for_partition(self, partitions: Iterable[tuple]) -> list[tuple]:
        return [(t, p, r) for t, p in partitions for r in self.partition_replica_assignment((t, p))]

    def online_and_offline_replicas(self) -> tuple[list[tuple], list[tuple]]:
        online, offline = [], []
        is_online = self.online_replica_filter()
        for topic, ts in self.topics.items():
            for p, replicas in enumerate(ts.replicas):
                tp = (topic, p)
                for r in replicas:
                    (online if is_online(r, tp) else offline).append((topic, p, r))
        return online, offline

    # --- partition states -------------------------------------------------------------------
    def partition_state(self, tp: tuple) -> int | None:
        ts = self.topics.get(tp[0])
        if ts is None or tp[1] >= len(ts.replicas):
            return None
        s = ts.pstate[tp[1]]
        return None if s == ABSENT else s

    def put_partition_state(self, tp: tuple, state: int) -> None:
        topic, p = tp
        ts = self._writable(topic, p)
        old = ts.pstate[p]
        ts.pstate[p] = state
        if topic not in self.topics_with_deletion_started:
            if old != OFFLINE_PARTITION and state == OFFLINE_PARTITION:
                self.offline_partition_count += 1
            elif old == OFFLINE_PARTITION and state != OFFLINE_PARTITION:
                self.offline_partition_count -= 1

    def partition_states_or_init(self, partitions: list[tuple], default: int) -> list[int]:
        """Current state of each partition; partitions without one get ``default`` first."""
        out = []
        for tp in partitions:
            s = self.partition_state(tp)
            if s is None:
                self.put_partition_state(tp, default)
                s = default
            out.append(s)
        return out

    def put_partition_states(self, partitions: list[tuple], state: int) -> None:
        for tp in partitions:
            self.put_partition_state(tp, state)

    def put_partition_state_if_not_exists(self, tp: tuple, state: int) -> None:
        if self.partition_state(tp) is None:
            self.put_partition_state(tp, state)

    def partitions_in_state(self, state: int, topic: str | None = None) -> list[tuple]:
        return self.partitions_in_states((state,), topic)

    def partitions_in_states(self, states: Iterable[int], topic: str | None = None) -> list[tuple]:
        wanted = set(states)
        topics = self.topics.items() if topic is None else [(topic, self.topics[topic])] if topic in self.topics else []
        return [(t, p) for t, ts in topics for p, s in enumerate(ts.pstate) if s in wanted]

    # --- replica states ---------------------------------------------------------------------
    def replica_state(self, replica: tuple) -> int | None:
        topic, p, r = replica
        ts = self.topics.get(topic)
        if ts is None or p >= len(ts.replicas):
            return None
        rids = ts.rids[p]
        if r in rids:
            return ts.rstates[p][rids.index(r)]
        return None

    def put_replica_state(self, replica: tuple, state: int) -> None:
        topic, p, r = replica
        ts = self._writable(topic, p)
        rids = ts.rids[p]
        if r in rids:
            ts.rstates[p][rids.index(r)] = state
        else:
            ts.rids[p] = self.intern(rids + (r,))
            ts.rstates[p].append(state)

    def replica_states_or_init(self, replicas: list[tuple], default: int) -> list[int]:
        """Current state of each replica; replicas without one get ``default`` first (batched
        ``putReplicaStateIfNotExists`` + ``replicaState``)."""
        out = []
        append = out.append
        topics = self.topics
        last_topic = None
        rids_col = rstates_col = None
        for rep in replicas:
            topic, p, r = rep
            if topic is not last_topic:
                ts = topics.get(topic)
                if ts is None:
                    ts = topics[topic] = TopicState(topic)
                last_topic, rids_col, rstates_col = topic, ts.rids, ts.rstates
            if p >= len(rids_col):
                ts.extend_to(p + 1)
            rids = rids_col[p]
            if r in rids:
                append(rstates_col[p][rids.index(r)])
            else:
                rids_col[p] = self.intern(rids + (r,))
                rstates_col[p].append(default)
                append(default)
        return out

    def put_replica_states(self, replicas: list[tuple], state: int) -> None:
        """``put_replica_state`` for many replicas that already have a state."""
        topics = self.topics
        last_topic = None
        rids_col = rstates_col = None
        for topic, p, r in replicas:
            if topic is not last_topic:
                ts = topics[topic]
                last_topic, rids_col, rstates_col = topic, ts.rids, ts.rstates
            rstates_col[p][rids_col[p].index(r)] = state

    def put_replica_state_if_not_exists(self, replica: tuple, state: int) -> None:
        if self.replica_state(replica) is None:
            self.put_replica_state(replica, state)

    def remove_replica_state(self, replica: tuple) -> None:
        topic, p, r = replica
        ts = self.topics.get(topic)
        if ts is None or p >= len(ts.replicas):
            return
        rids = ts.rids[p]
        if r in rids:
            i = rids.index(r)
            ts.rids[p] = self.intern(rids[:i] + rids[i + 1:])
            del ts.rstates[p][i]

    def replicas_in_state(self, topic: str, state: int) -> list[tuple]:
        ts = self.topics.get(topic)
        if ts is None:
            return []
        return [(topic, p, r) for p, rids in enumerate(ts.rids)
                for r, s in zip(rids, ts.rstates[p]) if s == state]

    def replicas_in_states(self, states: Iterable[int]) -> list[tuple]:
        wanted = set(states)
        return [(topic, p, r) for topic, ts in self.topics.items() for p, rids in enumerate(ts.rids)
                for r, s in zip(rids, ts.rstates[p]) if s in wanted]

    def are_all_replicas_in_state(self, topic: str, state: int) -> bool:
        ts = self.topics.get(topic)
        return ts is None or all(self.replica_state((topic, p, r)) == state
                                 for p, replicas in enumerate(ts.replicas) for r in replicas)

    def is_any_replica_in_state(self, topic: str, state: int) -> bool:
        ts = self.topics.get(topic)
        return ts is not None and any(self.replica_state((topic, p, r)) == state
                                      for p, replicas in enumerate(ts.replicas) for r in replicas)

    # --- leadership ---------------------------------------------------------------------------
    def partition_leadership_info(self, tp: tuple) -> LeaderIsrAndControllerEpoch | None:
        ts = self.topics.get(tp[0])
        p = tp[1]
        if ts is None or p >= len(ts.replicas) or ts.leader_epoch[p] == NO_EPOCH:
            return None
        return LeaderIsrAndControllerEpoch(
            LeaderAndIsr(ts.leader[p], ts.leader_epoch[p], ts.isr[p], ts.recovery[p], ts.partition_epoch[p]),
            ts.state_controller_epoch[p])

    def has_leadership_info(self, tp: tuple) -> bool:
        ts = self.topics.get(tp[0])
        return ts is not None and tp[1] < len(ts.replicas) and ts.leader_epoch[tp[1]] != NO_EPOCH

    def has_leadership_info_mask(self, replicas: list[tuple]) -> list[bool]:
        """For each (topic, partition[, replica]): does its partition have cached leadership info?"""
        out = []
        topics = self.topics
        last_topic = None
        epochs = None
        for rep in replicas:
            topic, p = rep[0], rep[1]
            if topic is not last_topic:
                ts = topics.get(topic)
                last_topic, epochs = topic, (ts.leader_epoch if ts is not None else ())
            out.append(p < len(epochs) and epochs[p] != NO_EPOCH)
        return out

    def leadership_fields(self, tp: tuple) -> tuple | None:
        """(controller_epoch, leader, leader_epoch, isr, partition_epoch, recovery_state), or None:
        partition_leadership_info without building objects, for batch loops."""
        ts = self.topics.get(tp[0])
        p = tp[1]
        if ts is None or p >= len(ts.replicas) or ts.leader_epoch[p] == NO_EPOCH:
            return None
        return (ts.state_controller_epoch[p], ts.leader[p], ts.leader_epoch[p], ts.isr[p], ts.partition_epoch[p],
                ts.recovery[p])

    def put_partition_leadership_info(self, tp: tuple, info: LeaderIsrAndControllerEpoch) -> None:
        topic, p = tp
        ts = self._writable(topic, p)
        had_preferred = self._has_preferred_leader(ts, p)
        lai = info.leader_and_isr
        ts.leader[p] = lai.leader
        ts.leader_epoch[p] = lai.leader_epoch
        ts.isr[p] = self.intern(lai.isr)
        ts.recovery[p] = lai.recovery_state
        ts.partition_epoch[p] = lai.partition_epoch
        ts.state_controller_epoch[p] = info.controller_epoch
        self._adjust_imbalance(ts, p, had_preferred)

    def partition_leader(self, tp: tuple) -> int:
        """The cached leader, or -1 (no leader or no leadership info)."""
        ts = self.topics.get(tp[0])
        if ts is None or tp[1] >= len(ts.replicas) or ts.leader_epoch[tp[1]] == NO_EPOCH:
            return NO_LEADER
        return ts.leader[tp[1]]

    def leader_epoch(self, tp: tuple) -> int:
        """Cached leader epoch; -2 (EpochDuringDelete) for topics queued for deletion, -1 if unknown."""
        if tp[0] in self.topics_to_be_deleted:
            return EPOCH_DURING_DELETE
        ts = self.topics.get(tp[0])
        if ts is None or tp[1] >= len(ts.replicas):
            return NO_EPOCH
        return ts.leader_epoch[tp[1]]

    def partitions_leadership_info(self) -> dict[tuple, LeaderIsrAndControllerEpoch]:
        return {tp: info for tp in self.all_partitions()
                if (info := self.partition_leadership_info(tp)) is not None}

    def partitions_with_leaders(self) -> list[tuple]:
        return [(t, p) for t, ts in self.topics.items() if t not in self.topics_to_be_deleted
                for p in range(len(ts)) if ts.leader_epoch[p] != NO_EPOCH]

    def partitions_with_offline_leader(self) -> list[tuple]:
        is_online = self.online_replica_filter()
        return [(t, p) for t, ts in self.topics.items() if t not in self.topics_to_be_deleted
                for p in range(len(ts))
                if ts.leader_epoch[p] != NO_EPOCH and not is_online(ts.leader[p], (t, p))]

    def partition_leaders_on_broker(self, broker_id: int) -> list[tuple]:
        return [(t, p) for t, ts in self.topics.items() if t not in self.topics_to_be_deleted
                for p in range(len(ts))
                if ts.leader_epoch[p] != NO_EPOCH and ts.leader[p] == broker_id and len(ts.replicas[p]) > 1]

    def partition_with_leaders_count(self) -> int:
        return sum(1 for ts in self.topics.values() for e in ts.leader_epoch if e != NO_EPOCH)

    def clear_partition_leadership_info(self) -> None:
        for ts in self.topics.values():
            n = len(ts)
            ts.leader_epoch = array("i", [NO_EPOCH]) * n
            ts.leader = array("i", [NO_LEADER]) * n
        self._recount_imbalance()

    # --- preferred-replica imbalance (maintained incrementally, as Kafka 3.7 does) -------------
    def _has_preferred_leader(self, ts: TopicState, p: int) -> bool:
        if ts.leader_epoch[p] == NO_EPOCH:
            return True
        replicas = ts.replicas[p]
        if not replicas:
            return True
        preferred = replicas[0]
        adding = ts.adding.get(p)
        if adding and preferred in adding:
            # A reassignment's adding preferred replica counts as balanced until it joins the ISR.
            return preferred not in ts.isr[p] or ts.leader[p] == preferred
        return ts.leader[p] == preferred

    def _adjust_imbalance(self, ts: TopicState, p: int, had_preferred: bool) -> None:
        if ts.name in self.topics_to_be_deleted:
            return
        has = self._has_preferred_leader(ts, p)
        if had_preferred and not has:
            self.preferred_replica_imbalance_count += 1
        elif has and not had_preferred:
            self.preferred_replica_imbalance_count -= 1

    def _recount_imbalance(self) -> None:
        self.preferred_replica_imbalance_count = sum(
            1 for t, ts in self.topics.items() if t not in self.topics_to_be_deleted
            for p in range(len(ts)) if not self._has_preferred_leader(ts, p))

    # --- topic deletion -------------------------------------------------------------------
    def queue_topic_deletion(self, topics: Iterable[str]) -> None:
        for t in topics:
            if t not in self.topics_to_be_deleted:
                ts = self.topics.get(t)
                if ts is not None:
                    self.preferred_replica_imbalance_count -= sum(
                        1 for p in range(len(ts)) if not self._has_preferred_leader(ts, p))
                self.topics_to_be_deleted.add(t)

    def begin_topic_deletion(self, topics: Iterable[str]) -> None:
        # Kafka calls this after the topic's partitions went Offline -> NonExistent, so the
        # offline count has already dropped them; from now on their states are not counted.
        self.topics_with_deletion_started.update(topics)

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        return topic in self.topics_with_deletion_started

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_be_deleted

    def is_topic_eligible_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_be_deleted and topic not in self.topics_ineligible_for_deletion

    def topics_queued_for_deletion(self) -> set[str]:
        return set(self.topics_to_be_deleted)

    # --- configs ------------------------------------------------------------------------------
    def topic_config(self, topic: str, name: str, default: str | None = None) -> str | None:
        return self.topic_configs.get(topic, {}).get(name, default)

    # --- snapshots ------------------------------------------------------------------------------
    def to_state(self) -> list:
        """The whole context as plain lists/ints/bytes (msgpack-able), for cluster snapshots."""
        topics = [[name, list(ts.replicas), sorted(ts.adding.items()), sorted(ts.removing.items()), bytes(ts.pstate),
                   ts.leader.tolist(), ts.leader_epoch.tolist(), list(ts.isr), ts.partition_epoch.tolist(),
                   ts.state_controller_epoch.tolist(), bytes(ts.recovery), list(ts.rids),
                   [bytes(r) for r in ts.rstates]]
                  for name, ts in self.topics.items()]
        return [self.epoch, self.epoch_zk_version, sorted(self.live_broker_epochs.items()),
                sorted(self.shutting_down_broker_ids),
                sorted([b, sorted(s)] for b, s in self.replicas_on_offline_dirs.items()), topics,
                sorted([t, sorted(c.items())] for t, c in self.topic_configs.items()),
                sorted(self.partitions_being_reassigned), sorted(self.topics_to_be_deleted),
                sorted(self.topics_with_deletion_started), sorted(self.topics_ineligible_for_deletion),
                self.offline_partition_count, self.preferred_replica_imbalance_count, self.unclean_leader_elections]

    def load_state(self, state: list) -> None:
        """Restore what ``to_state`` returned (broker_info is not part of it: the caller re-reads it)."""
        (self.epoch, self.epoch_zk_version, live, shutting_down, offline_dirs, topics, configs, reassigning,
         to_delete, deletion_started, ineligible, self.offline_partition_count,
         self.preferred_replica_imbalance_count, self.unclean_leader_elections) = state
        self.live_broker_epochs = {b: e for b, e in live}
        self.broker_info = {}
        self.shutting_down_broker_ids = set(shutting_down)
        self.replicas_on_offline_dirs = {b: {tuple(tp) for tp in s} for b, s in offline_dirs}
        self.topics = {}
        for (name, replicas, adding, removing, pstate, leader, leader_epoch, isr, partition_epoch, ctrl_epoch,
             recovery, rids, rstates) in topics:
            ts = self.topics[name] = TopicState(name)
            ts.replicas = [self.intern(r) for r in replicas]
            ts.adding = {p: self.intern(r) for p, r in adding}
            ts.removing = {p: self.intern(r) for p, r in removing}
            ts.pstate = bytearray(pstate)
            ts.leader, ts.leader_epoch = array("i", leader), array("i", leader_epoch)
            ts.isr = [self.intern(r) for r in isr]
            ts.partition_epoch, ts.state_controller_epoch = array("i", partition_epoch), array("i", ctrl_epoch)
            ts.recovery = bytearray(recovery)
            ts.rids = [self.intern(r) for r in rids]
            ts.rstates = [bytearray(r) for r in rstates]
        self.topic_configs = {t: dict(c) for t, c in configs}
        self.partitions_being_reassigned = {tuple(tp) for tp in reassigning}
        self.topics_to_be_deleted, self.topics_with_deletion_started = set(to_delete), set(deletion_started)
        self.topics_ineligible_for_deletion = set(ineligible)
