"""A KRaft metadata quorum running inside a simulation: its leader's log, and who fetches it when.

Role: the scenario's ``quorum`` section (:class:`sim.scenario.QuorumSpec`) made to run on the
simulation's event loop, around :class:`sim.quorum.MetadataQuorum` (Kafka's ``LeaderState``):

- **The voters** are dedicated controllers (``process.roles=controller``). The first voter is the
  leader, elected at time 0 in epoch 1; it writes its epoch's first record then (the
  LeaderChangeMessage KafkaRaftClient appends on election). Elections are not simulated: the
  controllers never fail. The other voters fetch from the leader as the brokers do, but off the
  simulated network (no latency, no faults).
- **The leader's log** grows by one record every ``METADATA_MAX_IDLE_INTERVAL_MS`` (the
  NoOpRecord the active controller appends every ``metadata.max.idle.interval.ms``, 500 ms by
  default, since KIP-835), and by one for each simulation record in ``METADATA_RECORD_KINDS``:
  what a KRaft controller would have written a metadata record for (a broker registering or
  being fenced, a topic, a config, a partition's leader, ISR or replicas changing).
- **Every running broker fetches as an observer, continuously**, as KafkaRaftClient does: a FETCH
  asks from the broker's own log end offset; the leader takes it when it arrives
  (``updateReplicaState``) and answers at once if it has records past that offset, or else parks
  it until its log grows (then takes it again, at that time, and answers) or ``fetch_max_wait_ms``
  passes (default 500 ms, KafkaRaftClient's ``MAX_FETCH_WAIT_MS``; then it answers with nothing,
  and takes nothing). The answer's end offset becomes the broker's own, and the broker sends its
  next FETCH at once. With a NoOpRecord every 500 ms, a live broker's last fetch is never much
  more than 500 ms old. A FETCH travels over the simulated network to ``"zk"``, which stands for
  the controllers (the cluster's metadata service, as ZooKeeper is in the rest of the
  simulation): a broker cut off from ``zk`` cannot fetch; a FETCH unanswered after
  ``controller.quorum.request.timeout.ms`` (2 s) is sent again.
- **A killed or stopped broker stops fetching**; a FETCH it left parked at the leader is still
  taken when the log next grows (the leader does not know the sender is gone), so its last
  fetch is at most that much after its death. A restarted broker resumes from its old offset,
  with the same metadata directory id (its disk is kept).
- **A describe** is a DescribeQuorum request served by the leader at that moment: the observers
  that last fetched 300 000 ms or more before are dropped then, and only then.

The cluster id and the directory ids (``version`` 3.9) are random v4 UUIDs drawn from the run's
seed, so they are the same on every run of the same scenario and seed.
"""
from __future__ import annotations

import base64
import random

from events.records import (
    BrokerStarted, ConfigChanged, LeaderAndIsrUpdated, LiveBrokersChanged, PartitionTransition, PartitionsAdded,
    ReplicaAssignmentChanged, TopicCreated, TopicDeletionCompleted,
)
from sim.quorum import ZERO_UUID, Endpoint, MetadataQuorum, QuorumDescription, Voter, format_replication, format_status

METADATA_MAX_IDLE_INTERVAL_MS = 500   # KafkaConfig's metadata.max.idle.interval.ms default
QUORUM_REQUEST_TIMEOUT_MS = 2_000     # controller.quorum.request.timeout.ms default
CONTROLLER_LISTENER = "CONTROLLER"
CONTROLLER_PORT = 9093                # config/kraft/controller.properties' listeners=CONTROLLER://:9093
LEADER_EPOCH = 1
# A KRaft controller writes a metadata record where the simulation journals one of these:
# RegisterBrokerRecord; BrokerRegistrationChangeRecord (a broker fenced or unfenced: the live
# brokers changed); TopicRecord; PartitionRecord or PartitionChangeRecord (a partition's
# creation, leader, ISR or replicas); ConfigRecord; RemoveTopicRecord.
METADATA_RECORD_KINDS = frozenset(cls.KIND for cls in (
    BrokerStarted, LiveBrokersChanged, TopicCreated, PartitionsAdded, PartitionTransition, LeaderAndIsrUpdated,
    ReplicaAssignmentChanged, ConfigChanged, TopicDeletionCompleted))
_METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid.METADATA_TOPIC_ID, never handed out


def random_uuid(rng: random.Random) -> str:
    """Kafka's Uuid.randomUuid() text: a v4 UUID, base64 URL-safe without padding, never ZERO_UUID,
    METADATA_TOPIC_ID or one starting with '-'."""
    while True:
        raw = bytearray(rng.getrandbits(128).to_bytes(16, "big"))
        raw[6] = raw[6] & 0x0F | 0x40    # java.util.UUID.randomUUID: version 4
        raw[8] = raw[8] & 0x3F | 0x80    # IETF variant
        text = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode("ascii")
        if text not in (ZERO_UUID, _METADATA_TOPIC_ID) and not text.startswith("-"):
            return text


class _Parked:
    """A FETCH the leader holds until its log grows or the wait ends (ThresholdPurgatory's entry)."""

    __slots__ = ("replica_id", "offset", "directory_id", "answer", "timer")

    def __init__(self, replica_id: int, offset: int, directory_id: str | None, answer):
        self.replica_id = replica_id
        self.offset = offset
        self.directory_id = directory_id
        self.answer = answer
        self.timer = None


class SimQuorum:
    """The metadata quorum of one :class:`sim.simulation.Simulation` (see the module docstring)."""

    def __init__(self, sim, spec):
        self.sim = sim
        self.spec = spec
        self.loop = sim.loop
        self.cluster_id = self._uuid("cluster-id")
        self.leader_id = spec.voters[0]
        self.directory_ids: dict[int, str] = {}
        voters = [Voter(v, self.directory_id(v), (Endpoint(CONTROLLER_LISTENER, f"controller-{v}", CONTROLLER_PORT),))
                  for v in spec.voters]
        self.state = MetadataQuorum(voters, self.leader_id, LEADER_EPOCH, self.cluster_id, version=spec.version,
                                    epoch_start_offset=0)
        self.end_offset = 0
        self.replica_offsets: dict[int, int] = {}   # node -> its own metadata log end offset
        self._parked: list[_Parked] = []            # in arrival order
        self._in_flight: dict[int, tuple] = {}      # broker -> (its fetch sequence number, request timeout)
        self.started = False

    def _uuid(self, what: str) -> str:
        return random_uuid(random.Random(f"{self.sim.seed}/quorum/{what}"))

    def directory_id(self, node: int) -> str:
        """The node's metadata log directory id (``meta.properties``): one per node, kept across restarts."""
        d = self.directory_ids.get(node)
        if d is None:
            d = self.directory_ids[node] = self._uuid(f"directory/{node}")
        return d

    # --- the leader's log ----------------------------------------------------------------------
    def start(self) -> None:
        """Time 0: the leader is elected and writes its epoch's first record; the other voters start fetching."""
        self.started = True
        self._append()
        self.loop.after(METADATA_MAX_IDLE_INTERVAL_MS, self._no_op, "quorum NoOpRecord")
        for v in self.spec.voters[1:]:
            self._voter_fetch(v)

    def _no_op(self) -> None:
        self._append()
        self.loop.after(METADATA_MAX_IDLE_INTERVAL_MS, self._no_op, "quorum NoOpRecord")

    def observe(self, rec: tuple) -> None:
        """A record the simulation journals: one more metadata record if a KRaft controller would write one."""
        if self.started and rec[0] in METADATA_RECORD_KINDS:
            self._append()

    def _append(self) -> None:
        self.end_offset += 1
        self.state.append(self.end_offset)
        if self._parked:
            # ThresholdPurgatory.maybeComplete: by fetch offset, then arrival
            parked = sorted(self._parked, key=lambda p: p.offset)
            self._parked = []
            for p in parked:
                p.timer.cancel()
                self._take(p.replica_id, p.offset, p.directory_id)
                p.answer(self.end_offset)

    # --- the leader's side of a FETCH ---------------------------------------------------------------
    def _take(self, replica_id: int, offset: int, directory_id: str | None) -> None:
        self.state.fetch(replica_id, offset, self.loop.now, directory_id=directory_id)

    def _serve(self, replica_id: int, offset: int, directory_id: str | None, answer) -> None:
        """A FETCH arrives at the leader; ``answer(end_offset)`` sends the response back."""
        self._take(replica_id, offset, directory_id)
        if self.end_offset > offset:
            answer(self.end_offset)
            return
        p = _Parked(replica_id, offset, directory_id, answer)
        self._parked.append(p)

        def expire() -> None:
            self._parked.remove(p)
            answer(offset)
        p.timer = self.loop.after(self.spec.fetch_max_wait_ms, expire, f"quorum fetch {replica_id} max wait")

    # --- the fetchers ------------------------------------------------------------------------------
    def _voter_fetch(self, v: int) -> None:
        offset = self.replica_offsets.get(v, 0)

        def answered(end_offset: int) -> None:
            self.replica_offsets[v] = max(self.replica_offsets.get(v, 0), end_offset)
            self.loop.after(0, lambda: self._voter_fetch(v), f"quorum fetch {v}")
        self._serve(v, offset, self.directory_id(v), answered)

    def broker_started(self, broker) -> None:
        """A broker process started: it fetches continuously while it runs."""
        self._broker_fetch(broker)

    def _broker_fetch(self, broker) -> None:
        b = broker.broker_id
        network = self.sim.network
        seq = self._in_flight[b][0] + 1 if b in self._in_flight else 0
        offset = self.replica_offsets.get(b, 0)

        def answered(end_offset: int) -> None:
            network.send("zk", b, broker.on(lambda: self._fetched(broker, seq, end_offset)),
                         name=f"quorum fetch response zk->{b}")

        network.send(b, "zk", lambda: self._serve(b, offset, self.directory_id(b), answered),
                     name=f"quorum fetch {b}->zk")
        timeout = self.loop.after(QUORUM_REQUEST_TIMEOUT_MS, broker.on(lambda: self._timed_out(broker, seq)),
                                  f"quorum fetch {b} timeout")
        self._in_flight[b] = (seq, timeout)

    def _fetched(self, broker, seq: int, end_offset: int) -> None:
        b = broker.broker_id
        current, timeout = self._in_flight[b]
        if seq != current:
            return      # the answer to a FETCH already given up on
        timeout.cancel()
        self.replica_offsets[b] = max(self.replica_offsets.get(b, 0), end_offset)
        self._broker_fetch(broker)

    def _timed_out(self, broker, seq: int) -> None:
        if self._in_flight[broker.broker_id][0] == seq:
            self._broker_fetch(broker)

    # --- describe -------------------------------------------------------------------------------
    def describe(self) -> QuorumDescription:
        """A DescribeQuorum request served now (it drops the observers idle for 300 000 ms or more)."""
        return self.state.describe(self.loop.now)

    def describe_text(self, replication: bool = False) -> tuple[QuorumDescription, str]:
        """``kafka-metadata-quorum.sh describe --status`` (or ``--replication``) now, with the observers'
        last-fetch ages on ``#`` lines after Kafka's text."""
        result = self.describe()
        return result, format_replication(result) if replication else format_status(result)
