"""The KRaft metadata quorum as its leader tracks it, and as ``kafka-metadata-quorum.sh describe`` prints it.

Role: a deterministic model of Kafka's ``LeaderState`` replica tracking (3.7, and 3.9 with KIP-853
voter changes) — the leader's log end offset, the voters' fetch offsets and the high watermark they
make, and the observers: every non-voter replica (in practice a broker) that fetched the metadata
log, kept in a map that only a DescribeQuorum request prunes, and only of entries whose last fetch is
``OBSERVER_SESSION_TIMEOUT_MS`` (300 000 ms) or more in the past. So a broker that stops fetching
stays in ``CurrentObservers`` until the first describe made five minutes after its last fetch, and if
nobody describes the quorum the map never shrinks.

``MetadataQuorum.describe`` is the DescribeQuorum response as the Admin client turns it into a
``QuorumInfo``; ``format_status`` / ``format_replication`` are MetadataQuorumCommand's
``describe --status`` / ``describe --replication`` text, byte for byte for the chosen version, with,
beyond Kafka and on lines of their own starting with ``#``, how long ago each observer last fetched.

Time is always passed in (``now_ms``); nothing reads the wall clock. The lists come out in the order
Kafka prints them, which is ``java.util.HashMap`` iteration order over the leader's maps; that order
is modelled here (``_JavaHashMap``), except inside a bucket that Java would turn into a tree (nine or
more colliding keys in a table of 64 or more), where insertion order is kept. Not modelled: the
check-quorum and BeginQuorumEpoch timers, AddVoter/RemoveVoter handlers, offset metadata (segment
positions) and fetch validation — ``fetch`` stands for a *valid* FETCH the leader answers with
records, which is when Kafka calls ``updateReplicaState``.
"""
from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

import structlog

_log = structlog.get_logger("kcontroller.sim")

OBSERVER_SESSION_TIMEOUT_MS = 300_000
VERSIONS = ("3.7", "3.9")
Version = Literal["3.7", "3.9"]
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID.toString(): "no directory id"


class QuorumStateError(RuntimeError):
    """What Kafka's LeaderState throws as IllegalStateException (a bug in the caller, not a network error)."""


class DescribeToolError(RuntimeError):
    """kafka-metadata-quorum.sh fails instead of printing (the exception Kafka's tool would die with)."""


# --- Java hashing and HashMap iteration order -------------------------------------------------

def _int32(x: int) -> int:
    x &= 0xFFFF_FFFF
    return x - (1 << 32) if x & 0x8000_0000 else x


def _java_string_hash(s: str) -> int:
    data = s.encode("utf-16-be")  # String.hashCode() runs over UTF-16 code units
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFF_FFFF
    return _int32(h)


def _uuid_bytes(directory_id: str) -> bytes:
    """Kafka's Uuid.fromString: URL-safe base64 without padding, 16 bytes."""
    if len(directory_id) > 24:
        raise ValueError(f"Input string with prefix `{directory_id[:24]}` is too long to be decoded as a base64 UUID")
    try:
        raw = base64.b64decode(directory_id + "=" * (-len(directory_id) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"Input string `{directory_id}` is not a base64 UUID: {exc}") from None
    if len(raw) != 16:
        raise ValueError(f"Input string `{directory_id}` decoded as {len(raw)} bytes, which is not equal to "
                         f"the expected 16 bytes of a base64-encoded UUID")
    return raw


def canonical_directory_id(directory_id: str | None) -> str | None:
    """A directory id as Kafka prints it (Uuid.toString), or None for none; ZERO_UUID means none (ReplicaKey.of)."""
    if directory_id is None:
        return None
    text = base64.urlsafe_b64encode(_uuid_bytes(directory_id)).rstrip(b"=").decode("ascii")
    return None if text == ZERO_UUID else text


def _uuid_hash(directory_id: str) -> int:
    raw = _uuid_bytes(directory_id)
    x = int.from_bytes(raw[:8], "big") ^ int.from_bytes(raw[8:], "big")
    return _int32((x >> 32) ^ (x & 0xFFFF_FFFF))


def _replica_key_hash(key: tuple[int, str | None]) -> int:
    # ReplicaKey.hashCode() = Objects.hash(id, Optional<Uuid> directoryId)
    replica_id, directory_id = key
    return _int32(31 * (31 + replica_id) + (_uuid_hash(directory_id) if directory_id is not None else 0))


def _id_key_hash(key) -> int:
    # Integer.hashCode(); the 3.7 observer map is keyed by node id alone
    return _int32(key[0] if isinstance(key, tuple) else key)


def _table_size_for(capacity: int) -> int:
    n = 1
    while n < capacity:
        n <<= 1
    return n


class _JavaHashMap:
    """The iteration order of a ``java.util.HashMap`` with the same keys put and removed in the same order.

    Buckets are indexed by ``(h ^ (h >>> 16)) & (capacity - 1)``; the table starts at 16 (or at
    ``tableSizeFor(initial_capacity)``), doubles when the size passes 3/4 of it or when a bucket
    reaches nine keys while the table is under 64; a bucket keeps insertion order.
    """

    def __init__(self, key_hash: Callable[[object], int], initial_capacity: int | None = None):
        self._key_hash = key_hash
        self._table: list[list] | None = None
        self._threshold = 0 if initial_capacity is None else _table_size_for(initial_capacity)
        self._values: dict = {}
        self._spread: dict = {}

    def get(self, key, default=None):
        return self._values.get(key, default)

    def keys(self) -> list:
        return [key for bucket in self._table or () for key in bucket]

    def values(self) -> list:
        return [self._values[key] for key in self.keys()]

    def items(self) -> list:
        return [(key, self._values[key]) for key in self.keys()]

    def put(self, key, value) -> None:
        if key in self._values:
            self._values[key] = value
            return
        if self._table is None:
            self._resize()
        h = self._key_hash(key) & 0xFFFF_FFFF
        h ^= h >> 16
        self._spread[key] = h
        self._values[key] = value
        bucket = self._table[h & (len(self._table) - 1)]
        bucket.append(key)
        if len(bucket) >= 9 and len(self._table) < 64:
            self._resize()  # treeifyBin() on a small table resizes instead
        if len(self._values) > self._threshold:
            self._resize()

    def put_if_absent(self, key, value):
        if key not in self._values:
            self.put(key, value)
        return self._values[key]

    def remove(self, key) -> None:
        if key in self._values:
            h = self._spread.pop(key)
            del self._values[key]
            self._table[h & (len(self._table) - 1)].remove(key)

    def remove_if(self, predicate: Callable[[object, object], bool]) -> None:
        for key, value in self.items():
            if predicate(key, value):
                self.remove(key)

    def _resize(self) -> None:
        old_cap = len(self._table) if self._table is not None else 0
        if old_cap > 0:
            new_cap = old_cap * 2
            new_thr = self._threshold * 2 if old_cap >= 16 else 0
        elif self._threshold > 0:
            new_cap, new_thr = self._threshold, 0
        else:
            new_cap, new_thr = 16, 12
        self._threshold = new_thr or int(new_cap * 0.75)
        old_keys = self.keys()
        self._table = [[] for _ in range(new_cap)]
        # Java splits each bucket into a low and a high half keeping relative order: the same
        # as re-appending the keys in their old iteration order.
        for key in old_keys:
            self._table[self._spread[key] & (new_cap - 1)].append(key)


# --- public value types ----------------------------------------------------------------------

@dataclass(frozen=True)
class Endpoint:
    """A voter listener; ``str()`` is RaftVoterEndpoint.toString(): ``NAME://host:port``, IPv6 hosts in brackets."""

    name: str
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        name, sep, address = text.partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not name or not host or not port.isdigit():
            raise ValueError(f"not a listener endpoint NAME://host:port: {text!r}")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        return cls(name.upper(), host, int(port))  # ListenerName.normalised() upper-cases

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


@dataclass(frozen=True)
class Voter:
    """A member of the voter set: id, directory id (3.9; None when the set has none) and listeners."""

    id: int
    directory_id: str | None = None
    endpoints: tuple[Endpoint, ...] = ()

    def __post_init__(self):
        if self.id < 0:
            raise ValueError(f"voter id must be >= 0, got {self.id}")
        object.__setattr__(self, "directory_id", canonical_directory_id(self.directory_id))
        endpoints = tuple(Endpoint.parse(e) if isinstance(e, str) else e for e in self.endpoints)
        names = [e.name for e in endpoints]
        if len(set(names)) != len(names):
            raise ValueError(f"voter {self.id} has a listener name twice: {names}")
        object.__setattr__(self, "endpoints", endpoints)


@dataclass(frozen=True)
class ReplicaDescription:
    """One replica of a DescribeQuorum answer, as QuorumInfo.ReplicaState; ``-1`` means unknown."""

    replica_id: int
    directory_id: str | None  # always None in 3.7 (DescribeQuorum v1 has no directory ids)
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


@dataclass(frozen=True)
class QuorumDescription:
    """A DescribeQuorum answer plus what the tool adds: the cluster id, and the time it was served."""

    version: str
    cluster_id: str
    leader_id: int
    leader_epoch: int
    high_watermark: int  # -1 until the leader has one
    voters: tuple[ReplicaDescription, ...]
    observers: tuple[ReplicaDescription, ...]
    # 3.9: each voter's listeners by node id (DescribeQuorum v2 "nodes"); empty in 3.7
    nodes: Mapping[int, tuple[Endpoint, ...]] = field(default_factory=lambda: MappingProxyType({}))
    now_ms: int = 0


# --- the leader's replica tracking -----------------------------------------------------------

class _ReplicaState:
    """LeaderState.ReplicaState: one voter or observer as the leader sees it."""

    __slots__ = ("key", "listeners", "end_offset", "last_fetch_timestamp", "last_fetch_leader_log_end_offset",
                 "last_caught_up_timestamp", "has_acknowledged_leader")

    def __init__(self, key: tuple[int, str | None], has_acknowledged_leader: bool, listeners: tuple[Endpoint, ...]):
        self.key = key
        self.listeners = listeners
        self.end_offset: int | None = None
        self.last_fetch_timestamp = -1
        self.last_fetch_leader_log_end_offset = -1
        self.last_caught_up_timestamp = -1
        self.has_acknowledged_leader = has_acknowledged_leader

    def matches_key(self, key: tuple[int, str | None]) -> bool:
        # A state without a directory id (3.7, or a 3.9 voter set without them) matches any key of its id.
        return self.key[0] == key[0] and (self.key[1] is None or self.key[1] == key[1])

    def set_replica_key(self, key: tuple[int, str | None]) -> None:
        if self.key[0] != key[0] or (self.key[1] is not None and self.key != key):
            raise ValueError(f"Attempting to update the replica key {_java_key(self.key)} with {_java_key(key)}")
        self.key = key

    def update_follower_state(self, now_ms: int, fetch_offset: int, leader_end_offset: int | None) -> None:
        # lastCaughtUpTimestamp first: catching up to the leader's end offset as of the previous
        # fetch means the replica was caught up at the previous fetch's time.
        if leader_end_offset is not None:
            if fetch_offset >= leader_end_offset:
                self.last_caught_up_timestamp = max(self.last_caught_up_timestamp, now_ms)
            elif self.last_fetch_leader_log_end_offset > 0 and fetch_offset >= self.last_fetch_leader_log_end_offset:
                self.last_caught_up_timestamp = max(self.last_caught_up_timestamp, self.last_fetch_timestamp)
            self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_timestamp = max(self.last_fetch_timestamp, now_ms)
        self.end_offset = fetch_offset
        self.has_acknowledged_leader = True

    def java_str(self, version: str) -> str:
        end = "Optional.empty" if self.end_offset is None else \
            f"Optional[LogOffsetMetadata(offset={self.end_offset}, metadata=Optional.empty)]"
        who = f"nodeId={self.key[0]}" if version == "3.7" else f"replicaKey={_java_key(self.key)}"
        return (f"ReplicaState({who}, endOffset={end}, lastFetchTimestamp={self.last_fetch_timestamp}, "
                f"lastCaughtUpTimestamp={self.last_caught_up_timestamp}, "
                f"hasAcknowledgedLeader={str(self.has_acknowledged_leader).lower()})")


def _java_key(key: tuple[int, str | None]) -> str:
    directory = "Optional.empty" if key[1] is None else f"Optional[{key[1]}]"
    return f"ReplicaKey(id={key[0]}, directoryId={directory})"


def _as_voters(voters: Iterable[int | Voter]) -> list[Voter]:
    out = [v if isinstance(v, Voter) else Voter(int(v)) for v in voters]
    ids = [v.id for v in out]
    if not out:
        raise ValueError("the voter set is empty")
    if len(set(ids)) != len(ids):
        raise ValueError(f"a voter id appears twice: {ids}")
    return out


class MetadataQuorum:
    """The quorum leader's view of the metadata log's replicas (Kafka's LeaderState) for one epoch.

    ``voters`` are ids or ``Voter``s (directory ids and endpoints matter in 3.9 only; 3.7 ignores
    them, as its protocol has none). The leader must be a voter. ``epoch_start_offset`` is the
    leader's log end offset when it was elected: the high watermark only moves past it.
    ``leader_directory_id`` (3.9) is the leader's own directory id when it differs from its voter
    entry's, e.g. a voter set without directory ids (``controller.quorum.voters``).
    """

    def __init__(self, voters: Iterable[int | Voter], leader_id: int, leader_epoch: int, cluster_id: str, *,
                 version: Version = "3.7", epoch_start_offset: int = 0, leader_directory_id: str | None = None):
        if version not in VERSIONS:
            raise ValueError(f"version must be one of {VERSIONS}, got {version!r}")
        self.version = version
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.cluster_id = cluster_id
        self.epoch_start_offset = epoch_start_offset
        voter_list = self._version_voters(_as_voters(voters))
        leader = next((v for v in voter_list if v.id == leader_id), None)
        if leader is None:
            raise ValueError(f"leader {leader_id} is not one of the voters {[v.id for v in voter_list]}")
        if version == "3.9" and leader_directory_id is not None:
            self._local_key = (leader_id, canonical_directory_id(leader_directory_id))
        else:
            self._local_key = (leader_id, leader.directory_id)
        self._voter_set = voter_list
        self._high_watermark: int | None = None
        self._voters = _JavaHashMap(_id_key_hash)
        for v in voter_list:
            state = _ReplicaState((v.id, v.directory_id), False, v.endpoints)
            state.has_acknowledged_leader = state.matches_key(self._local_key)
            self._voters.put(v.id, state)
        self._observers = _JavaHashMap(_replica_key_hash if version == "3.9" else _id_key_hash)

    # --- what the leader knows --------------------------------------------------------------
    @property
    def high_watermark(self) -> int | None:
        return self._high_watermark

    @property
    def leader_end_offset(self) -> int | None:
        state = self._get_replica_state(self._local_key)
        return None if state is None else state.end_offset

    @property
    def voter_ids(self) -> tuple[int, ...]:
        """The current voters, in the order Kafka lists them."""
        return tuple(self._voters.keys())

    def tracked_observers(self) -> tuple[tuple[int, str | None], ...]:
        """Every observer entry (id, directory id) the leader holds right now, without pruning anything."""
        return tuple(self._observers.keys())

    def non_acknowledging_voters(self) -> frozenset[int]:
        """Voters that have not fetched from (or otherwise acknowledged) this leader yet."""
        return frozenset(s.key[0] for s in self._voters.values() if not s.has_acknowledged_leader)

    def replica(self, replica_id: int, directory_id: str | None = None) -> ReplicaDescription | None:
        """The raw tracked state of one replica (LeaderState.getReplicaState), or None; prunes nothing."""
        state = self._get_replica_state((replica_id, self._directory(directory_id)))
        if state is None:
            return None
        return ReplicaDescription(state.key[0], state.key[1], -1 if state.end_offset is None else state.end_offset,
                                  state.last_fetch_timestamp, state.last_caught_up_timestamp)

    # --- inputs ------------------------------------------------------------------------------
    def append(self, leader_end_offset: int, *, voters: Iterable[int | Voter] | None = None) -> bool:
        """The leader's log end offset moved (updateLocalState); True if the high watermark moved.

        In 3.9 ``voters`` is the latest voter set in the log (default: unchanged), applied as
        updateVoterAndObserverStates does. A smaller end offset than before is an error, as in Kafka.
        """
        new_voters = None if voters is None else self._version_voters(_as_voters(voters))
        if new_voters is not None and self.version == "3.7":
            raise ValueError("voter changes need KIP-853 (version 3.9)")
        state = self._get_or_create(self._local_key)
        if state.end_offset is not None and state.end_offset > leader_end_offset:
            raise QuorumStateError(f"Detected non-monotonic update of local end offset: "
                                   f"{state.end_offset} -> {leader_end_offset}")
        state.end_offset = leader_end_offset
        if self.version == "3.9":
            if new_voters is not None:
                self._voter_set = new_voters
            self._update_voter_and_observer_states(self._voter_set)
        return self._maybe_update_high_watermark()

    def set_voters(self, voters: Iterable[int | Voter]) -> bool:
        """A new voter set (3.9, KIP-853): as ``append`` at the current end offset with these voters.

        Old voters that leave become observers (putIfAbsent, listeners cleared); new voters are
        taken out of the observers, keeping the fetch state the leader had for them. True if the
        high watermark moved (it never moves back).
        """
        if self.version == "3.7":
            raise ValueError("voter changes need KIP-853 (version 3.9)")
        leo = self.leader_end_offset
        if leo is not None:
            return self.append(leo, voters=voters)
        # No end offset yet, so no updateLocalState in Kafka either; apply the voter set alone.
        self._voter_set = self._version_voters(_as_voters(voters))
        self._update_voter_and_observer_states(self._voter_set)
        return self._maybe_update_high_watermark()

    def fetch(self, replica_id: int, fetch_offset: int, now_ms: int, directory_id: str | None = None) -> bool:
        """The leader serves a valid FETCH at ``fetch_offset`` (updateReplicaState); True if the high watermark moved.

        Negative ids (not a replica) are ignored; a non-voter becomes an observer on its first fetch.
        ``directory_id`` is the fetcher's metadata directory id (Fetch v17, 3.9); 3.7 has no such field
        and ignores it. An offset below the replica's previous one is logged as a warning and taken.
        """
        if replica_id < 0:
            return False
        key = (replica_id, self._directory(directory_id))
        if replica_id == self.leader_id:
            who = replica_id if self.version == "3.7" else _java_key(key)
            raise QuorumStateError(f"Remote replica ID {who} matches the local leader ID")
        state = self._get_or_create(key)
        if state.end_offset is not None and state.end_offset > fetch_offset:
            who = state.key[0] if self.version == "3.7" else _java_key(state.key)
            _log.warning(f"Detected non-monotonic update of fetch offset from nodeId {who}: "
                         f"{state.end_offset} -> {fetch_offset}",
                         replica_id=replica_id, previous_offset=state.end_offset, fetch_offset=fetch_offset)
        if self.version == "3.7":
            leader_end_offset = self._voters.get(self.leader_id).end_offset
        else:
            leader_end_offset = self._get_or_create(self._local_key).end_offset
        state.update_follower_state(now_ms, fetch_offset, leader_end_offset)
        return self._is_voter(state.key) and self._maybe_update_high_watermark()

    def describe(self, now_ms: int) -> QuorumDescription:
        """Serve a DescribeQuorum request at ``now_ms``: first drop every observer whose last fetch is
        300 000 ms or more before ``now_ms`` (never the leader itself), then report. This is the only
        place observers are dropped."""
        self._observers.remove_if(
            lambda key, state: now_ms - state.last_fetch_timestamp >= OBSERVER_SESSION_TIMEOUT_MS
            and key != self._local_key)  # the leader's own key: a 3.9 clause; in 3.7 it is never an observer
        voters = self._voters.values()
        nodes = {}
        if self.version == "3.9":
            nodes = {state.key[0]: _java_listener_order(state.listeners) for state in voters}
        return QuorumDescription(
            version=self.version,
            cluster_id=self.cluster_id,
            leader_id=self.leader_id,
            leader_epoch=self.leader_epoch,
            high_watermark=-1 if self._high_watermark is None else self._high_watermark,
            voters=tuple(self._describe_replica(s, now_ms) for s in voters),
            observers=tuple(self._describe_replica(s, now_ms) for s in self._observers.values()),
            nodes=MappingProxyType(nodes),
            now_ms=now_ms,
        )

    # --- internals ---------------------------------------------------------------------------
    def _version_voters(self, voters: list[Voter]) -> list[Voter]:
        if self.version == "3.7":  # no directory ids or endpoints in 3.7's quorum state
            return [Voter(v.id) for v in voters]
        return voters

    def _directory(self, directory_id: str | None) -> str | None:
        return canonical_directory_id(directory_id) if self.version == "3.9" else None

    def _get_or_create(self, key: tuple[int, str | None]) -> _ReplicaState:
        state = self._voters.get(key[0])
        if state is None or not state.matches_key(key):
            return self._observers.put_if_absent(key, _ReplicaState(key, False, ()))
        return state

    def _get_replica_state(self, key: tuple[int, str | None]) -> _ReplicaState | None:
        state = self._voters.get(key[0])
        if state is None or not state.matches_key(key):
            state = self._observers.get(key)
        return state

    def _is_voter(self, key: tuple[int, str | None]) -> bool:
        state = self._voters.get(key[0])
        return state is not None and state.matches_key(key)

    def _maybe_update_high_watermark(self) -> bool:
        states = self._voters.values()
        offsets = sorted((s.end_offset for s in states if s.end_offset is not None), reverse=True)
        index = len(states) // 2  # the offset at least a majority (the leader counts) has reached
        if index >= len(offsets):
            return False
        candidate = offsets[index]
        if candidate <= self.epoch_start_offset:
            # A leader exposes nothing before it has committed an offset of its own epoch.
            return False
        if self._high_watermark is None or candidate > self._high_watermark:
            self._high_watermark = candidate
            return True
        if candidate < self._high_watermark:
            voter_states = "[" + ", ".join(s.java_str(self.version) for s in states) + "]"
            if self.version == "3.7":
                _log.error(f"The latest computed high watermark {candidate} is smaller than the current value "
                           f"{self._high_watermark}, which suggests that one of the voters has lost committed "
                           f"data. Full voter replication state: {voter_states}")
            else:
                _log.info(f"The latest computed high watermark {candidate} is smaller than the current value "
                          f"{self._high_watermark}, which should only happen when voter set membership changes. "
                          f"If the voter set has not changed this suggests that one of the voters has lost "
                          f"committed data. Full voter replication state: {voter_states}")
        return False

    def _update_voter_and_observer_states(self, voter_set: list[Voter]) -> None:
        new_voters = _JavaHashMap(_id_key_hash)
        # Kafka walks a HashMap copy whose table size depends on the JDK; its order only matters
        # between former voters that collide in one observer bucket, so the current order is kept.
        old_voters = dict(self._voters.items())
        for v in voter_set:
            voter_key = (v.id, v.directory_id)
            state = self._get_replica_state(voter_key) or _ReplicaState(voter_key, False, v.endpoints)
            old_voters.pop(v.id, None)
            self._observers.remove(voter_key)
            state.set_replica_key(voter_key)
            state.listeners = v.endpoints
            new_voters.put(v.id, state)
        self._voters = new_voters
        for state in old_voters.values():
            state.listeners = ()
            self._observers.put_if_absent(state.key, state)

    def _describe_replica(self, state: _ReplicaState, now_ms: int) -> ReplicaDescription:
        if state.key[0] == self.leader_id:
            caught_up = fetched = now_ms  # the leader is always "caught up" and "fetching" now
        else:
            caught_up, fetched = state.last_caught_up_timestamp, state.last_fetch_timestamp
        return ReplicaDescription(state.key[0], state.key[1] if self.version == "3.9" else None,
                                  -1 if state.end_offset is None else state.end_offset, fetched, caught_up)


def _java_listener_order(endpoints: tuple[Endpoint, ...]) -> tuple[Endpoint, ...]:
    # Endpoints holds a HashMap<ListenerName, address> sized to the listener count.
    by_name = _JavaHashMap(_java_string_hash, len(endpoints))
    for endpoint in endpoints:
        by_name.put(endpoint.name, endpoint)
    return tuple(by_name.values())


# --- kafka-metadata-quorum.sh describe -------------------------------------------------------

def _leader(result: QuorumDescription) -> ReplicaDescription:
    for voter in result.voters:
        if voter.replica_id == result.leader_id:
            return voter
    # voters().stream().filter(...).findFirst().get(): a leader removed from the voter set (3.9)
    raise DescribeToolError("java.util.NoSuchElementException: No value present")


def _replica_node(result: QuorumDescription, replica: ReplicaDescription) -> str:
    # MetadataQuorumCommand.Node.toString(); endpoints are looked up by id among the voters'
    # nodes, so an observer sharing a voter's id is printed with that voter's endpoints.
    directory = "null" if replica.directory_id is None else f'"{replica.directory_id}"'
    text = f'{{"id": {replica.replica_id}, "directoryId": {directory}'
    endpoints = result.nodes.get(replica.replica_id, ())
    if endpoints:
        text += ', "endpoints": [' + ", ".join(f'"{e}"' for e in endpoints) + "]"
    return text + "}"


def _replica_list(result: QuorumDescription, replicas: tuple[ReplicaDescription, ...]) -> str:
    if result.version == "3.7":
        return "[" + ",".join(str(r.replica_id) for r in replicas) + "]"
    return "[" + ", ".join(_replica_node(result, r) for r in replicas) + "]"


def _observer_age_lines(result: QuorumDescription) -> str:
    """Beyond Kafka: how long before the describe each observer last fetched, so a dead broker shows."""
    if not result.observers:
        return ""
    lines = [f"# beyond Kafka: each observer's last fetch before this describe (at {result.now_ms} ms); "
             f"a describe {OBSERVER_SESSION_TIMEOUT_MS:,} ms or more after it drops the observer"]
    for o in result.observers:
        who = f"observer {o.replica_id}"
        if result.version == "3.9":
            who += f" (directoryId {o.directory_id or 'null'})"
        if o.last_fetch_timestamp < 0:
            lines.append(f"# {who}: never fetched")
            continue
        age = result.now_ms - o.last_fetch_timestamp
        left = OBSERVER_SESSION_TIMEOUT_MS - age
        lines.append(f"# {who}: last fetch {age:,} ms ago (dropped by a describe {max(left, 0):,} ms or more from now)")
    return "\n".join(lines) + "\n"


def format_status(result: QuorumDescription, *, observer_ages: bool = True) -> str:
    """``kafka-metadata-quorum.sh describe --status`` stdout for ``result``'s version (then, unless
    ``observer_ages`` is False, the ``#`` lines with each observer's last-fetch age)."""
    leader = _leader(result)
    # Stream.min keeps the first of equal elements: voter order decides ties, and only the
    # leader itself being that first minimum gives 0 below.
    max_lag_follower = min(result.voters, key=lambda r: r.log_end_offset)
    max_follower_lag = leader.log_end_offset - max_lag_follower.log_end_offset
    if max_lag_follower is leader:
        max_follower_lag_time_ms = 0
    elif leader.last_caught_up_timestamp != -1 and max_lag_follower.last_caught_up_timestamp != -1:
        max_follower_lag_time_ms = leader.last_caught_up_timestamp - max_lag_follower.last_caught_up_timestamp
    else:
        max_follower_lag_time_ms = -1
    text = (
        "ClusterId:              " + result.cluster_id +
        "\nLeaderId:               " + str(result.leader_id) +
        "\nLeaderEpoch:            " + str(result.leader_epoch) +
        "\nHighWatermark:          " + str(result.high_watermark) +
        "\nMaxFollowerLag:         " + str(max_follower_lag) +
        "\nMaxFollowerLagTimeMs:   " + str(max_follower_lag_time_ms) +
        "\nCurrentVoters:          " + _replica_list(result, result.voters) +
        "\nCurrentObservers:       " + _replica_list(result, result.observers) +
        "\n"
    )
    return text + (_observer_age_lines(result) if observer_ages else "")


def _relative_time_ms(timestamp_ms: int, now_ms: int, desc: str) -> int:
    if not (timestamp_ms > 0 and timestamp_ms <= now_ms):
        raise DescribeToolError(f"Error while computing relative time, possible drift in system clock.\n"
                                f"Current timestamp is {now_ms}, {desc} timestamp is {timestamp_ms}")
    return now_ms - timestamp_ms


def format_replication(result: QuorumDescription, *, human_readable: bool = False, now_ms: int | None = None,
                       observer_ages: bool = True) -> str:
    """``kafka-metadata-quorum.sh describe --replication [--human-readable]`` stdout for ``result``'s version.

    ``now_ms`` is the tool's clock for ``--human-readable`` (default: the describe's time); as in
    Kafka, a timestamp that is not after the epoch or lies in the future makes the tool fail.
    Unless ``observer_ages`` is False, the ``#`` lines with each observer's last-fetch age follow.
    """
    tool_now = result.now_ms if now_ms is None else now_ms
    leader = _leader(result)

    def timestamp(value: int, desc: str) -> str:
        if value == -1:
            return "-1"
        return f"{_relative_time_ms(value, tool_now, desc)} ms ago" if human_readable else str(value)

    def rows(replicas: Iterable[ReplicaDescription], status: str) -> Iterator[list[str]]:
        for r in replicas:
            row = [str(r.replica_id)]
            if result.version == "3.9":
                row.append(r.directory_id or ZERO_UUID)
            row += [str(r.log_end_offset), str(leader.log_end_offset - r.log_end_offset),
                    timestamp(r.last_fetch_timestamp, "last fetch"),
                    timestamp(r.last_caught_up_timestamp, "last caught up"), status]
            yield row

    headers = ["NodeId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"]
    if result.version == "3.9":
        headers.insert(1, "DirectoryId")
    table = [*rows([leader], "Leader"),
             *rows((v for v in result.voters if v.replica_id != result.leader_id), "Follower"),
             *rows(result.observers, "Observer")]
    widths = [max([len(h)] + [len(row[i]) for row in table]) for i, h in enumerate(headers)]
    # ToolsUtils.prettyPrintTable: every cell padded to its column's width, then a tab (also after the last)
    text = "".join("".join(cell.ljust(w) + "\t" for cell, w in zip(row, widths)) + "\n" for row in [headers, *table])
    return text + (_observer_age_lines(result) if observer_ages else "")
