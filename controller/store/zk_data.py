"""Kafka's znode paths and JSON bodies (ZkData.scala), byte for byte as Kafka 3.7 on Scala 2.13 writes them.

Kafka builds most bodies as Scala or Java maps and serializes them with Jackson, which writes a
map's entries in the map's iteration order. That order is part of the bytes, so this module
reproduces it from the same hash functions and table rules:

* Scala 2.13 immutable ``Map``/``Set`` of at most four entries keep insertion order; larger ones
  are CHAMP tries (``Hashing.improve`` of ``##``, five bits per level, a node's own entries before
  its sub-nodes): ``/state`` is ``{"controller_epoch":..,"leader":..,"version":1,"leader_epoch":..,"isr":[..]}``;
* Scala 2.13 ``mutable.HashMap``/``HashSet`` iterate bucket by bucket (``h ^ h >>> 16`` masked by
  the table size, which grows at a 0.75 load factor), each bucket in hash order: the broker
  registration, the topic assignment (also its ``partitions`` map: ``"11"`` sorts before ``"0"``
  once a topic has 12 partitions) and the feature znode;
* ``java.util.Properties`` (topic configs) is a ConcurrentHashMap since Java 9: bins in index
  order, each bin in insertion order, resizes splitting bins as ``transfer`` does.

Strings hash as ``String.hashCode`` over UTF-16 code units; Jackson writes compact JSON, keeps
non-ASCII characters and escapes control characters with upper-case hex.

A topic znode can also be written from a replica matrix (``encode_topic_matrix``: the partition keys'
order computed as arrays, each distinct replica list formatted once) and read as columns
(``decode_topic_columns``); the columns of the bodies written or read lately are kept by their bytes, so
reading back what this process wrote parses nothing (``decode_topic`` uses them too).
"""
from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment

# --- paths (ZkData.scala objects) -----------------------------------------------------------------------
CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
BROKERS_PATH = "/brokers"
BROKER_IDS_PATH = "/brokers/ids"
BROKER_SEQUENCE_ID_PATH = "/brokers/seqid"
TOPICS_PATH = "/brokers/topics"
CONFIG_PATH = "/config"
CONFIG_CHANGES_PATH = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
ADMIN_PATH = "/admin"
DELETE_TOPICS_PATH = "/admin/delete_topics"
REASSIGN_PARTITIONS_PATH = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION_PATH = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION_PATH = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
CLUSTER_ID_PATH = "/cluster/id"
CONSUMERS_PATH = "/consumers"
PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"
FEATURE_PATH = "/feature"

TOPIC_CONFIG_TYPE = "topics"
CONFIG_TYPES = ("topics", "clients", "users", "brokers", "ips")   # ConfigType.all (client-metrics is KRaft-only)

# ZkData.PersistentZkPaths: created at broker startup, in this order.
PERSISTENT_ZK_PATHS = (CONSUMERS_PATH, BROKER_IDS_PATH, TOPICS_PATH, CONFIG_CHANGES_PATH, DELETE_TOPICS_PATH,
                       BROKER_SEQUENCE_ID_PATH, ISR_CHANGE_NOTIFICATION_PATH, PRODUCER_ID_BLOCK_PATH,
                       LOG_DIR_EVENT_NOTIFICATION_PATH) + tuple(f"{CONFIG_PATH}/{t}" for t in CONFIG_TYPES)

INITIAL_CONTROLLER_EPOCH = 0
INITIAL_CONTROLLER_EPOCH_ZK_VERSION = 0
ISR_CHANGE_NOTIFICATION_VERSION = 1
LOG_DIR_FAILURE_EVENT = 1


def broker_id_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}"


def topic_partitions_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions"


def topic_partition_path(tp: tuple) -> str:
    return f"{TOPICS_PATH}/{tp[0]}/partitions/{tp[1]}"


def topic_partition_state_path(tp: tuple) -> str:
    return f"{TOPICS_PATH}/{tp[0]}/partitions/{tp[1]}/state"


def config_entity_type_path(entity_type: str) -> str:
    return f"{CONFIG_PATH}/{entity_type}"


def config_entity_path(entity_type: str, name: str) -> str:
    return f"{CONFIG_PATH}/{entity_type}/{name}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS_PATH}/{topic}"


def isr_change_notification_path(sequence_number: str = "") -> str:
    return f"{ISR_CHANGE_NOTIFICATION_PATH}/{ISR_CHANGE_PREFIX}{sequence_number}"


def log_dir_event_notification_path(sequence_number: str = "") -> str:
    return f"{LOG_DIR_EVENT_NOTIFICATION_PATH}/{LOG_DIR_EVENT_PREFIX}{sequence_number}"


def sequence_number(name: str, prefix: str) -> str:
    """The digits after the last ``prefix`` (IsrChangeNotificationSequenceZNode.sequenceNumber)."""
    i = name.rfind(prefix)
    return name[i + len(prefix):] if i >= 0 else name


# --- JVM hashing and collection order -----------------------------------------------------------------
def _i32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - 0x100000000 if x & 0x80000000 else x


@lru_cache(maxsize=65536)
def java_hash(s: str) -> int:
    """``String.hashCode`` (signed 32-bit) over UTF-16 code units."""
    h = 0
    if s.isascii():
        for c in s.encode("ascii"):
            h = (31 * h + c) & 0xFFFFFFFF
    else:
        b = s.encode("utf-16-be")
        for i in range(0, len(b), 2):
            h = (31 * h + (b[i] << 8 | b[i + 1])) & 0xFFFFFFFF
    return _i32(h)


def java_map_hash(entries: Iterable[tuple[str, object]]) -> int:
    """``AbstractMap.hashCode`` of a map of String keys to String/Integer values."""
    h = 0
    for k, v in entries:
        vh = java_hash(v) if isinstance(v, str) else _i32(v)
        h += java_hash(k) ^ vh
    return _i32(h)


def topic_partition_hash(tp: tuple) -> int:
    """``org.apache.kafka.common.TopicPartition.hashCode``."""
    return _i32(31 * (31 + tp[1]) + java_hash(tp[0]))


def scala_improve(h: int) -> int:
    """``scala.collection.Hashing.improve`` (immutable HashMap/HashSet)."""
    h &= 0xFFFFFFFF
    h = (h + (~(h << 9) & 0xFFFFFFFF)) & 0xFFFFFFFF
    h ^= h >> 14
    h = (h + (h << 4)) & 0xFFFFFFFF
    return h ^ (h >> 10)


def _champ(items: list, shift: int) -> list:
    groups: dict[int, list] = {}
    for item in items:
        groups.setdefault((item[1] >> shift) & 31, []).append(item)
    own, subs = [], []
    for mask in sorted(groups):
        g = groups[mask]
        if len(g) == 1:
            own.append(g[0][0])
        elif shift >= 30 or all(x[1] == g[0][1] for x in g):
            subs.append([x[0] for x in g])          # a hash-collision node keeps insertion order
        else:
            subs.append(_champ(g, shift + 5))
    for s in subs:
        own.extend(s)
    return own


def scala_immutable_order(items: Sequence, hash_of: Callable[[object], int]) -> list:
    """Iteration order of a Scala 2.13 immutable Map/Set built by adding ``items`` in order (distinct keys)."""
    items = list(items)
    if len(items) <= 4:
        return items
    return _champ([(x, scala_improve(hash_of(x))) for x in items], 0)


def _table_size(n: int, initial: int) -> int:
    size = initial
    while n >= int(size * 0.75):
        size *= 2
    return size


def scala_mutable_order(items: Sequence, hash_of: Callable[[object], int], initial_table: int = 16) -> list:
    """Iteration order of a Scala 2.13 mutable.HashMap/HashSet holding ``items`` (distinct keys).

    ``initial_table``: 16 for ``mutable.Map()``/``HashSet.newBuilder``; ``mutable.Map(k -> v, ...)``
    presizes to ``tableSizeFor((n + 1) / 0.75)``.
    """
    items = list(items)
    size = _table_size(len(items), initial_table)
    keyed = []
    for i, x in enumerate(items):
        h = hash_of(x) & 0xFFFFFFFF
        h = _i32(h ^ (h >> 16))
        keyed.append((h & (size - 1), h, i, x))
    keyed.sort(key=lambda t: (t[0], t[1], t[2]))
    return [t[3] for t in keyed]


def _scala_presized_table(n: int) -> int:
    """``mutable.HashMap.from`` of ``n`` entries: tableSizeFor(((n + 1) / 0.75).toInt)."""
    cap = int((n + 1) / 0.75)
    return (1 << ((max(cap - 1, 4)).bit_length() - 1)) * 2


def java_properties_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of ``java.util.Properties`` (a ConcurrentHashMap of capacity 8) after ``setProperty``
    of ``keys`` in order; re-setting a key keeps its place."""
    n = 16
    table: list[list] = [[] for _ in range(n)]
    count = 0
    seen: set[str] = set()
    for k in keys:
        if k in seen:
            continue
        seen.add(k)
        h = java_hash(k) & 0xFFFFFFFF
        h = (h ^ (h >> 16)) & 0x7FFFFFFF
        table[h & (n - 1)].append((h, k))
        count += 1
        if count >= n - (n >> 2):       # sizeCtl reached: transfer to a table twice as large
            new: list[list] = [[] for _ in range(2 * n)]
            for i in range(n - 1, -1, -1):
                bin_ = table[i]
                if not bin_:
                    continue
                run_bit = bin_[0][0] & n
                last_run = 0
                for j in range(1, len(bin_)):
                    b = bin_[j][0] & n
                    if b != run_bit:
                        run_bit, last_run = b, j
                low = list(bin_[last_run:]) if run_bit == 0 else []
                high = list(bin_[last_run:]) if run_bit != 0 else []
                for j in range(last_run):      # nodes before the last run are prepended, reversing them
                    if bin_[j][0] & n == 0:
                        low.insert(0, bin_[j])
                    else:
                        high.insert(0, bin_[j])
                new[i], new[i + n] = low, high
            table, n = new, 2 * n
    return [k for bin_ in table for _, k in bin_]


def java_hash_map_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of a ``java.util.HashMap`` (default capacity) after putting ``keys`` in order."""
    keys = list(dict.fromkeys(keys))
    size = 16
    while len(keys) > size * 0.75:
        size *= 2
    keyed = []
    for i, k in enumerate(keys):
        h = java_hash(k) & 0xFFFFFFFF
        keyed.append((((h ^ (h >> 16)) & (size - 1)), i, k))
    keyed.sort()
    return [k for _, _, k in keyed]


# --- JSON as Jackson writes it ------------------------------------------------------------------------
_CONTROL_HEX = re.compile(r"(?<!\\)((?:\\\\)*)\\u00([0-9a-f]{2})")


def to_json(value: object) -> bytes:
    """Compact JSON in the iteration order of the given dicts (Jackson's ObjectMapper defaults)."""
    s = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if "\\u00" in s:
        s = _CONTROL_HEX.sub(lambda m: m.group(1) + "\\u00" + m.group(2).upper(), s)
    return s.encode("utf-8")


def parse_json(data: bytes | None) -> object | None:
    """Kafka's ``Json.parseBytes``: None for absent or unparsable data."""
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def _ordered(d: Mapping, order: Sequence) -> dict:
    return {k: d[k] for k in order}


@lru_cache(maxsize=256)
def _mutable_key_order(keys: tuple, initial_table: int) -> tuple:
    return tuple(scala_mutable_order(keys, java_hash, initial_table))


@lru_cache(maxsize=256)
def _immutable_key_order(keys: tuple) -> tuple:
    return tuple(scala_immutable_order(keys, java_hash))


# --- /controller, /controller_epoch -----------------------------------------------------------------------
def encode_controller(broker_id: int, timestamp: int, kraft_controller_epoch: int = -1) -> bytes:
    return (f'{{"version":2,"brokerid":{broker_id},"timestamp":"{timestamp}",'
            f'"kraftControllerEpoch":{kraft_controller_epoch}}}').encode()


def decode_controller(data: bytes | None) -> int | None:
    js = parse_json(data)
    return js["brokerid"] if isinstance(js, dict) and "brokerid" in js else None


def decode_controller_registration(data: bytes | None) -> tuple[int, int | None] | None:
    """(broker id, kraftControllerEpoch or None) — ControllerZNode.decodeController."""
    js = parse_json(data)
    if not isinstance(js, dict) or "brokerid" not in js:
        return None
    return js["brokerid"], js.get("kraftControllerEpoch")


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_controller_epoch(data: bytes) -> int:
    return int(data.decode())


# --- /brokers/ids/<id> -----------------------------------------------------------------------------
DEFAULT_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class EndPoint(NamedTuple):
    """kafka.cluster.EndPoint."""
    host: str | None
    port: int
    listener_name: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"

    @property
    def connection_string(self) -> str:
        if self.host is None:
            hostport = f":{self.port}"
        elif ":" in self.host:
            hostport = f"[{self.host}]:{self.port}"   # Utils.formatAddress for IPv6
        else:
            hostport = f"{self.host}:{self.port}"
        return f"{self.listener_name}://{hostport}"


class BrokerInfo(NamedTuple):
    """A broker registration (kafka.zk.BrokerInfo with its kafka.cluster.Broker).

    ``features``: supported features as (name, min_version, max_version), sorted by name.
    """
    id: int
    endpoints: tuple
    rack: str | None = None
    features: tuple = ()
    version: int = 5
    jmx_port: int = -1

    @property
    def _plaintext(self) -> EndPoint | None:
        return next((e for e in self.endpoints if e.security_protocol == "PLAINTEXT"), None)

    @property
    def host(self) -> str | None:
        ep = self._plaintext
        return ep.host if ep else None

    @property
    def port(self) -> int:
        ep = self._plaintext
        return ep.port if ep else -1

    def __str__(self) -> str:
        eps = ",".join(e.connection_string for e in self.endpoints)
        return f"{self.id} : {eps} : rack: {self.rack}"


def encode_broker_info(info: BrokerInfo, timestamp: int) -> bytes:
    """BrokerIdZNode.encode: a mutable.Map presized for its six first keys, then rack, protocol map, features."""
    values: dict[str, object] = {
        "version": info.version, "host": info.host, "port": info.port,
        "endpoints": [e.connection_string for e in info.endpoints], "jmx_port": info.jmx_port,
        "timestamp": str(timestamp),
    }
    if info.rack is not None and info.version >= 3:
        values["rack"] = info.rack
    if info.version >= 4:
        protocols: dict[str, str] = {}
        for e in info.endpoints:
            protocols.setdefault(e.listener_name, e.security_protocol)
        values["listener_security_protocol_map"] = _ordered(protocols, _immutable_key_order(tuple(protocols)))
    if info.version >= 5:
        features = {name: {"min_version": lo, "max_version": hi} for name, lo, hi in info.features}
        values["features"] = _ordered(features, java_hash_map_order(list(features)))
    return to_json(_ordered(values, _mutable_key_order(tuple(values), _scala_presized_table(6))))


_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")


def _parse_endpoint(s: str, protocols: Mapping[str, str]) -> EndPoint:
    m = _ENDPOINT.match(s)
    if m is None:
        raise ValueError(f"Unable to parse {s} to a broker endpoint")
    listener, host, port = m.group(1), m.group(2), int(m.group(3))
    proto = protocols.get(listener)
    if proto is None:
        if listener not in DEFAULT_SECURITY_PROTOCOLS:
            raise ValueError(f"No security protocol defined for listener {listener}")
        proto = listener
    return EndPoint(host or None, port, listener, proto)


def decode_broker_info(broker_id: int, data: bytes) -> BrokerInfo:
    js = parse_json(data)
    if not isinstance(js, dict):
        raise ValueError(f"Failed to parse ZooKeeper registration for broker {broker_id}: "
                         f"{(data or b'').decode('utf-8', 'replace')}")
    version = js["version"]
    if version < 1:
        raise ValueError(f"Unsupported version of broker registration: {data.decode('utf-8', 'replace')}")
    if version == 1:
        endpoints = (EndPoint(js["host"], js["port"]),)
    else:
        protocols = js.get("listener_security_protocol_map") or {}
        endpoints = tuple(_parse_endpoint(s, protocols) for s in js["endpoints"])
    features = tuple(sorted((name, v.get("min_version", 1), v.get("max_version", 1))
                            for name, v in (js.get("features") or {}).items()))
    return BrokerInfo(broker_id, endpoints, js.get("rack"), features, version, js.get("jmx_port", -1))


# --- /brokers/topics/<t> ------------------------------------------------------------------------------
def _int_list(xs: Iterable[int]) -> list[int]:
    return [int(x) for x in xs]


@lru_cache(maxsize=8192)
def _int_list_json(xs: tuple) -> str:
    return "[" + ",".join(str(int(x)) for x in xs) + "]"


def _partition_map_json(replicas_by_key: dict[str, tuple]) -> str:
    """A {"partition": [ids]} object in Scala mutable.Map order, as Jackson writes it (compact)."""
    order = _mutable_key_order(tuple(replicas_by_key), 16)
    return "{" + ",".join(f'"{k}":{_int_list_json(replicas_by_key[k])}' for k in order) + "}"


def encode_topic(topic_id: str | None, assignment: Mapping[int, ReplicaAssignment]) -> bytes:
    """TopicZNode.encode (version 3): replicas, adding and removing replicas by partition, topic id.

    Written piecewise (the key orders and replica lists are cached), byte for byte what
    ``to_json`` makes of the same maps: a reassignment rewrites a topic's whole znode for each of
    its partitions, as Kafka does, so this runs once per partition per phase."""
    partitions, adding, removing = {}, {}, {}
    for p, a in assignment.items():
        key = str(p)
        partitions[key] = tuple(a.replicas)
        if a.adding_replicas:
            adding[key] = tuple(a.adding_replicas)
        if a.removing_replicas:
            removing[key] = tuple(a.removing_replicas)
    return _topic_json(topic_id, _partition_map_json(partitions), _partition_map_json(adding),
                       _partition_map_json(removing))


def _topic_json(topic_id: str | None, partitions: str, adding: str, removing: str) -> bytes:
    parts = {"version": "3", "partitions": partitions, "adding_replicas": adding, "removing_replicas": removing}
    if topic_id is not None:
        parts["topic_id"] = to_json(topic_id).decode("utf-8")
    order = _mutable_key_order(tuple(parts), _scala_presized_table(4))
    return ("{" + ",".join(f'"{k}":{parts[k]}' for k in order) + "}").encode("utf-8")


def _java_hash_of_ids(ps: np.ndarray) -> np.ndarray:
    """``String.hashCode`` of the decimal strings of non-negative ids (int64 array), signed 32-bit."""
    ps = ps.astype(np.int64)
    digits = np.ones(len(ps), dtype=np.int64)
    for k in range(1, 10):
        digits += ps >= 10 ** k
    h = np.zeros(len(ps), dtype=np.int64)
    for k in range(int(digits.max(initial=1)) - 1, -1, -1):
        live = digits > k
        d = (ps // 10 ** k) % 10 + 48
        h = np.where(live, (h * 31 + d) & 0xFFFFFFFF, h)
    return np.where(h >= 1 << 31, h - (1 << 32), h)


@lru_cache(maxsize=64)
def _consecutive_key_prefixes(n: int) -> tuple[np.ndarray, list[str]]:
    """Partitions 0..n-1 in the order ``_partition_map_json`` writes them (Scala mutable.Map order of their
    decimal keys), and the ``"<p>":`` that starts each entry, in that order."""
    order = _ids_order(np.arange(n, dtype=np.int64))
    return order, [f'"{p}":' for p in order.tolist()]


def _ids_order(ps: np.ndarray) -> np.ndarray:
    """The order (indexes into ``ps``, ascending distinct ids inserted in that order) in which a Scala mutable.Map
    of their decimal keys iterates: ``_mutable_key_order`` as arrays."""
    h = _java_hash_of_ids(ps) & 0xFFFFFFFF
    h = h ^ (h >> 16)
    h = np.where(h >= 1 << 31, h - (1 << 32), h)          # _i32
    size = _table_size(len(ps), 16)
    return np.lexsort((np.arange(len(ps)), h, h & (size - 1)))


def _unique_rows(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(m, axis=0, return_inverse=True)`` (the distinct rows, each row's index among them), as one
    integer key per row where the values allow it."""
    n, w = m.shape
    if n and w:
        lo, hi = int(m.min()), int(m.max())
        base = hi - lo + 1
        if base ** w < 1 << 62:
            key = np.zeros(n, dtype=np.int64)
            for k in range(w):
                key = key * base + (m[:, k].astype(np.int64) - lo)
            keys, first, codes = np.unique(key, return_index=True, return_inverse=True)
            return m[first], codes.reshape(-1)
    rows, codes = np.unique(m, axis=0, return_inverse=True)
    return rows, codes.reshape(-1)


def _matrix_map_json(replicas: np.ndarray) -> str:
    """``_partition_map_json`` of {str(p): tuple(replicas[p])} for p in 0..n-1 (every entry of each row)."""
    n = len(replicas)
    if not n:
        return "{}"
    order, prefixes = _consecutive_key_prefixes(n)
    rows, codes = _unique_rows(replicas)
    fmt = ("[" + ",".join(["{}"] * replicas.shape[1]) + "]").format
    lists = [fmt(*r) for r in rows.tolist()]
    return "{" + ",".join(map(str.__add__, prefixes, map(lists.__getitem__, codes[order].tolist()))) + "}"


def encode_topic_rows(topic_id: str | None, replicas: Sequence[tuple], adding: Mapping[int, tuple],
                      removing: Mapping[int, tuple]) -> bytes:
    """``encode_topic`` of the partitions 0..n-1 given as their replica tuples (index = partition id) and the
    adding / removing replicas of those being reassigned: the same bytes, without an object per partition (a
    reassignment rewrites the whole topic znode for each of its partitions, as Kafka does)."""
    n = len(replicas)
    if n:
        order, prefixes = _consecutive_key_prefixes(n)
        partitions = "{" + ",".join(map(str.__add__, prefixes,
                                        [_int_list_json(replicas[p]) for p in order.tolist()])) + "}"
    else:
        partitions = "{}"
    return _topic_json(topic_id, partitions, _ids_map_json(adding), _ids_map_json(removing))


def _ids_map_json(by_partition: Mapping[int, tuple]) -> str:
    """``_partition_map_json`` of {str(p): ids} for the partitions with a non-empty tuple, inserted in partition
    order (as ``encode_topic`` inserts them): the key order found as arrays, not per key set in Python."""
    ps = sorted(p for p, ids in by_partition.items() if ids)
    if len(ps) <= 64:
        return _partition_map_json({str(p): tuple(by_partition[p]) for p in ps})
    order = _ids_order(np.asarray(ps, dtype=np.int64)).tolist()
    return "{" + ",".join(f'"{ps[i]}":{_int_list_json(tuple(by_partition[ps[i]]))}' for i in order) + "}"


def encode_topic_matrix(topic_id: str | None, replicas: np.ndarray) -> bytes:
    """``encode_topic(topic_id, {p: ReplicaAssignment(tuple(replicas[p]))})`` for the partitions 0..n-1 of an
    (n, rf) integer matrix, none being reassigned; the bytes' columns are remembered (``decode_topic_columns``
    reads them back without parsing)."""
    replicas = np.asarray(replicas)
    if replicas.ndim != 2 or replicas.dtype.kind not in "iu":
        raise ValueError(f"replicas must be an (n, rf) integer matrix, not {replicas.dtype} {replicas.shape}")
    data = _topic_json(topic_id, _matrix_map_json(replicas), "{}", "{}")
    n = len(replicas)
    if not replicas.size or (int(replicas.min()) >= 0 and int(replicas.max()) <= 0x7FFFFFFF):
        empty = np.zeros((n, 0), dtype=np.int32)
        _remember_topic(data, TopicColumns(topic_id, np.arange(n, dtype=np.int32), replicas.astype(np.int32), empty,
                                           empty))
    return data


class TopicColumns(NamedTuple):
    """A topic znode's assignment as columns: its partitions in ascending order and, per partition, the
    replicas, adding replicas and removing replicas, each an int32 matrix whose rows are -1 padded (as wide as
    the longest row; 0 columns when no row has any). Shared between readers: read-only."""
    topic_id: str | None
    partitions: np.ndarray
    replicas: np.ndarray
    adding: np.ndarray
    removing: np.ndarray


# The columns of topic znode bodies, by their bytes (equal bytes, equal columns): those this module wrote or
# read lately, up to a bound on their partitions in all.
_TOPIC_COLUMNS: dict[bytes, TopicColumns] = {}
_TOPIC_COLUMNS_ROWS = [0]
_TOPIC_COLUMNS_MAX_ROWS = 1 << 23


def _remember_topic(data: bytes, cols: TopicColumns) -> None:
    for a in cols[1:]:
        a.setflags(write=False)
    n = len(cols.partitions)
    if _TOPIC_COLUMNS_ROWS[0] + n > _TOPIC_COLUMNS_MAX_ROWS:
        _TOPIC_COLUMNS.clear()
        _TOPIC_COLUMNS_ROWS[0] = 0
    if data not in _TOPIC_COLUMNS:
        _TOPIC_COLUMNS[data] = cols
        _TOPIC_COLUMNS_ROWS[0] += n


def _padded(lists: list, n: int) -> np.ndarray:
    width = max(map(len, lists), default=0)
    if not width:
        return np.zeros((n, 0), dtype=np.int32)
    if all(len(x) == width for x in lists):
        return np.array(lists, dtype=np.int32).reshape(n, width)
    out = np.full((n, width), -1, dtype=np.int32)
    for i, x in enumerate(lists):
        out[i, :len(x)] = x
    return out


def decode_topic_columns(data: bytes | None) -> TopicColumns | None:
    """TopicZNode.decode as columns; None for a body that is not a JSON object. A partition id or broker id
    that is not a non-negative int32 raises ValueError (the columns could not hold it)."""
    if type(data) is bytes:
        cols = _TOPIC_COLUMNS.get(data)
        if cols is not None:
            return cols
        cols = _written_topic_columns(data)
        if cols is not None:
            return cols
    js = parse_json(data)
    if not isinstance(js, dict):
        return None
    adding = js.get("adding_replicas") or {}
    removing = js.get("removing_replicas") or {}
    parts = js.get("partitions") or {}
    try:
        keys = sorted(parts, key=int)
        n = len(keys)
        lists = ([parts[k] for k in keys], [adding.get(k, ()) for k in keys], [removing.get(k, ()) for k in keys])
        if not all(type(x) is int and 0 <= x <= 0x7FFFFFFF for col in lists for row in col for x in row):
            raise ValueError("broker ids must be non-negative int32s")
        ids = [int(k) for k in keys]
        if not all(0 <= p <= 0x7FFFFFFF for p in ids):
            raise ValueError("partition ids must be non-negative int32s")
        cols = TopicColumns(js.get("topic_id"), np.array(ids, dtype=np.int32).reshape(n), _padded(lists[0], n),
                            _padded(lists[1], n), _padded(lists[2], n))
    except (TypeError, ValueError) as e:
        raise ValueError(f"topic znode {data[:80]!r}... cannot be read as columns: {e}") from None
    if type(data) is bytes:
        _remember_topic(data, cols)
    else:
        for a in cols[1:]:
            a.setflags(write=False)
    return cols


_TOPIC_ID = re.compile(rb'"topic_id":"([A-Za-z0-9_-]*)"')
_DIGIT0, _COMMA, _QUOTE, _COLON, _OPEN, _CLOSE = b"0,\":[]"


def _written_topic_columns(data: bytes) -> TopicColumns | None:
    """The columns of a topic znode body exactly as ``encode_topic_matrix`` writes it (partitions 0..n-1, all
    rows as long, nobody being reassigned), read with array operations and no JSON parse: the numbers' digit
    runs and every separator between them are checked to be that encoding, and the rest of the body by
    writing it again; None for any other body (``decode_topic_columns`` then parses it)."""
    start = data.find(b'"partitions":{')
    if start < 0:
        return None
    start += 13
    end = data.find(b"}", start) + 1
    section = data[start:end]
    if end <= 0 or section == b"{}" or b"[]" in section:
        return None
    m = _TOPIC_ID.search(data)
    if _topic_json(m and m.group(1).decode("ascii"), section.decode("latin-1"), "{}", "{}") != data:
        return None
    buf = np.frombuffer(section, dtype=np.uint8)
    edges = np.diff(((buf >= 48) & (buf <= 57)).view(np.int8), prepend=0, append=0)
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    k = section.count(b",", 0, section.find(b"]")) + 1        # replicas per partition
    count = len(starts)
    lengths = ends - starts
    if (not count or count % (k + 1) or section[:2] != b'{"' or starts[0] != 2 or ends[-1] != len(buf) - 2
            or section[-2:] != b"]}"
            or lengths.max() > 10 or ((lengths > 1) & (buf[starts] == _DIGIT0)).any()):
        return None
    gap, after = starts[1:] - ends[:-1], ends[:-1]
    pos = np.arange(count - 1) % (k + 1)
    key, last = pos == 0, pos == k
    inner = ~key & ~last
    if not ((gap[inner] == 1).all() and (buf[after[inner]] == _COMMA).all()
            and (gap[key] == 3).all() and (gap[last] == 3).all()):
        return None
    at_key, at_last = after[key], after[last]
    for offset, (after_key, after_last) in enumerate(((_QUOTE, _CLOSE), (_COLON, _COMMA), (_OPEN, _QUOTE))):
        if not ((buf[at_key + offset] == after_key).all() and (buf[at_last + offset] == after_last).all()):
            return None
    values = np.zeros(count, dtype=np.int64)
    for j in range(int(lengths.max())):
        values = np.where(lengths > j, values * 10 + buf[np.minimum(starts + j, len(buf) - 1)] - 48, values)
    n = count // (k + 1)
    values = values.reshape(n, k + 1)
    order, _ = _consecutive_key_prefixes(n)
    if not np.array_equal(values[:, 0], order) or int(values[:, 1:].max()) > 0x7FFFFFFF:
        return None
    replicas = np.empty((n, k), dtype=np.int32)
    replicas[order] = values[:, 1:]
    empty = np.zeros((n, 0), dtype=np.int32)
    cols = TopicColumns(m and m.group(1).decode("ascii"), np.arange(n, dtype=np.int32), replicas, empty, empty)
    _remember_topic(data, cols)
    return cols


class TopicIdReplicaAssignment(NamedTuple):
    topic: str
    topic_id: str | None
    assignment: dict      # (topic, partition) -> ReplicaAssignment, by partition


def decode_topic(topic: str, data: bytes | None) -> TopicIdReplicaAssignment:
    cols = _TOPIC_COLUMNS.get(data) if type(data) is bytes else None
    if cols is not None:
        return TopicIdReplicaAssignment(topic, cols.topic_id, assignment_of_columns(topic, cols))
    js = parse_json(data)
    if not isinstance(js, dict):
        return TopicIdReplicaAssignment(topic, None, {})
    adding = js.get("adding_replicas") or {}
    removing = js.get("removing_replicas") or {}
    parts = js.get("partitions") or {}
    assignment = {}
    for p in sorted(parts, key=int):
        assignment[(topic, int(p))] = ReplicaAssignment(tuple(parts[p]), tuple(adding.get(p, ())),
                                                        tuple(removing.get(p, ())))
    return TopicIdReplicaAssignment(topic, js.get("topic_id"), assignment)


def _row_tuples(m: np.ndarray) -> list[tuple]:
    """Each row of a -1 padded matrix as a tuple of its entries before the padding (equal rows: one tuple)."""
    n = len(m)
    if not m.shape[1]:
        return [()] * n
    rows, codes = _unique_rows(m)
    pool = [tuple(x for x in r if x >= 0) if r[-1] < 0 else tuple(r) for r in rows.tolist()]
    return list(map(pool.__getitem__, codes.tolist()))


def assignment_of_columns(topic: str, cols: TopicColumns) -> dict:
    """The (topic, partition) -> ReplicaAssignment of ``decode_topic``, from the columns."""
    new = tuple.__new__
    ps = cols.partitions.tolist()
    replicas = _row_tuples(cols.replicas)
    if not cols.adding.shape[1] and not cols.removing.shape[1]:
        return {(topic, p): new(ReplicaAssignment, (r, (), ())) for p, r in zip(ps, replicas)}
    return {(topic, p): new(ReplicaAssignment, (r, a, d))
            for p, r, a, d in zip(ps, replicas, _row_tuples(cols.adding), _row_tuples(cols.removing))}


# --- /brokers/topics/<t>/partitions/<p>/state ----------------------------------------------------------
def encode_partition_state(info: LeaderIsrAndControllerEpoch) -> bytes:
    """TopicPartitionStateZNode.encode: a five-key immutable HashMap (six with leader_recovery_state)."""
    return encode_leader_and_isr(info.leader_and_isr, info.controller_epoch)


def encode_leader_and_isr(lai: LeaderAndIsr, controller_epoch: int) -> bytes:
    """``encode_partition_state(LeaderIsrAndControllerEpoch(lai, controller_epoch))``."""
    isr = ",".join(map(str, lai.isr))
    if lai.recovery_state == 0:
        return (f'{{"controller_epoch":{controller_epoch},"leader":{lai.leader},"version":1,'
                f'"leader_epoch":{lai.leader_epoch},"isr":[{isr}]}}').encode()
    return (f'{{"controller_epoch":{controller_epoch},"leader":{lai.leader},"version":1,'
            f'"leader_recovery_state":{lai.recovery_state},"leader_epoch":{lai.leader_epoch},"isr":[{isr}]}}').encode()


_STATE = re.compile(rb'\{"controller_epoch":(-?\d+),"leader":(-?\d+),"version":1,(?:"leader_recovery_state":(\d+),)?'
                    rb'"leader_epoch":(-?\d+),"isr":\[([-\d,]*)\]\}')
# (data, zk version) -> decoded state: many /state znodes hold equal bytes (and a batch read decodes them
# all); the values are immutable, so equal inputs share one result. Cleared when it grows past the bound.
_DECODED_STATES: dict[tuple, LeaderIsrAndControllerEpoch | None] = {}
_DECODED_STATES_MAX = 1 << 16


def decode_partition_state(data: bytes | None, zk_version: int) -> LeaderIsrAndControllerEpoch | None:
    """TopicPartitionStateZNode.decode; the partition epoch is the znode's version."""
    key = (data, zk_version)
    try:
        return _DECODED_STATES[key]
    except KeyError:
        pass
    except TypeError:   # unhashable data (a bytearray): decoded without the memo
        return _decode_partition_state(data, zk_version)
    info = _decode_partition_state(data, zk_version)
    if len(_DECODED_STATES) >= _DECODED_STATES_MAX:
        _DECODED_STATES.clear()
    _DECODED_STATES[key] = info
    return info


def _decode_partition_state(data: bytes | None, zk_version: int) -> LeaderIsrAndControllerEpoch | None:
    m = _STATE.fullmatch(data) if data else None
    if m is not None:   # the bytes Kafka writes; anything else goes through the JSON parser
        ce, leader, recovery, epoch, isr = m.groups()
        lai = LeaderAndIsr(int(leader), int(epoch), tuple(map(int, isr.split(b","))) if isr else (),
                           int(recovery) if recovery else 0, zk_version)
        return LeaderIsrAndControllerEpoch(lai, int(ce))
    js = parse_json(data)
    if not isinstance(js, dict):
        return None
    lai = LeaderAndIsr(js["leader"], js["leader_epoch"], tuple(js["isr"]), js.get("leader_recovery_state", 0),
                       zk_version)
    return LeaderIsrAndControllerEpoch(lai, js["controller_epoch"])


# --- /config -------------------------------------------------------------------------------------------
def encode_entity_config(config: Mapping[str, str]) -> bytes:
    """ConfigEntityZNode.encode: ``config`` is a java.util.Properties filled in the mapping's order."""
    props = {str(k): str(v) for k, v in config.items()}
    return to_json({"version": 1, "config": _ordered(props, java_properties_order(list(props)))})


def decode_entity_config(data: bytes | None) -> dict[str, str]:
    js = parse_json(data)
    config = js.get("config") if isinstance(js, dict) else None
    if not isinstance(config, dict):
        return {}
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}


def encode_config_change_notification(sanitized_entity_path: str) -> bytes:
    return to_json({"version": 2, "entity_path": sanitized_entity_path})


# --- notifications -------------------------------------------------------------------------------------
def _tp_map_hash(tp: tuple) -> int:
    return java_map_hash((("topic", tp[0]), ("partition", tp[1])))


def encode_isr_change_notification(partitions: Iterable[tuple]) -> bytes:
    """IsrChangeNotificationSequenceZNode.encode of the broker's mutable.HashSet of changed partitions."""
    tps = list(dict.fromkeys((t, int(p)) for t, p in partitions))
    ordered = scala_mutable_order(tps, _tp_map_hash)
    return to_json({"version": ISR_CHANGE_NOTIFICATION_VERSION,
                    "partitions": [{"topic": t, "partition": p} for t, p in ordered]})


def _decode_partition_list(data: bytes | None) -> list[tuple]:
    """``partitions`` of a notification as Kafka's ``.toSet`` iterates them (an immutable Set)."""
    js = parse_json(data)
    if not isinstance(js, dict):
        return []
    tps = list(dict.fromkeys((e["topic"], e["partition"]) for e in js.get("partitions", ())))
    return scala_immutable_order(tps, topic_partition_hash)


def decode_isr_change_notification(data: bytes | None) -> list[tuple]:
    return _decode_partition_list(data)


def encode_log_dir_event(broker_id: int) -> bytes:
    return to_json({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT})


def decode_log_dir_event(data: bytes | None) -> int | None:
    js = parse_json(data)
    return js.get("broker") if isinstance(js, dict) else None


# --- /admin ------------------------------------------------------------------------------------------
def encode_preferred_replica_election(partitions: Iterable[tuple]) -> bytes:
    """PreferredReplicaElectionZNode.encode of an immutable Set (given in its insertion order)."""
    tps = list(dict.fromkeys((t, int(p)) for t, p in partitions))
    ordered = scala_immutable_order(tps, _tp_map_hash)
    return to_json({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in ordered]})


def decode_preferred_replica_election(data: bytes | None) -> list[tuple]:
    return _decode_partition_list(data)


def encode_partition_reassignment(reassignment: Mapping[tuple, Sequence[int]]) -> bytes:
    """ReassignPartitionsZNode.encode (Jackson bean order: version, partitions; topic, partition, replicas)."""
    tps = scala_immutable_order(list(reassignment), topic_partition_hash)
    return to_json({"version": 1, "partitions": [
        {"topic": tp[0], "partition": tp[1], "replicas": _int_list(reassignment[tp])} for tp in tps]})


def decode_partition_reassignment(data: bytes | None) -> dict[tuple, list[int]] | None:
    """None if the JSON is invalid (Kafka logs a warning and ignores it)."""
    js = parse_json(data)
    if not isinstance(js, dict) or not isinstance(js.get("partitions"), list):
        return None
    try:
        pairs = {(e["topic"], int(e["partition"])): [int(r) for r in e["replicas"]] for e in js["partitions"]}
    except (KeyError, TypeError, ValueError):
        return None
    return {tp: pairs[tp] for tp in scala_immutable_order(list(pairs), topic_partition_hash)}


# --- /cluster/id, /feature ----------------------------------------------------------------------------
def encode_cluster_id(cluster_id: str) -> bytes:
    return to_json({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes | None) -> str:
    js = parse_json(data)
    if not isinstance(js, dict) or "id" not in js:
        raise ValueError(f"Failed to parse the cluster id json {data!r}")
    return js["id"]


FEATURE_ZNODE_V2 = 2
FEATURE_STATUS_ENABLED = 1


def encode_feature_znode(features: Mapping[str, int], status: int = FEATURE_STATUS_ENABLED,
                         version: int = FEATURE_ZNODE_V2) -> bytes:
    """FeatureZNode.encode: finalized features (name -> max_version_level) in a three-key mutable.Map."""
    if version == 1:
        fmap = {n: {"max_version_level": v, "min_version_level": v} for n, v in features.items()}
    else:
        fmap = {n: {"max_version_level": v} for n, v in features.items()}
    fmap = _ordered(fmap, scala_immutable_order(list(fmap), java_hash))
    body = {"version": version, "status": status, "features": fmap}
    return to_json(_ordered(body, _mutable_key_order(tuple(body), _scala_presized_table(3))))


# --- Uuid ---------------------------------------------------------------------------------------------
_ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
_METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def random_uuid(rng) -> str:
    """``Uuid.randomUuid().toString``: a version-4 UUID from ``rng`` in URL-safe base64 without padding,
    never the reserved ids and never starting with '-'."""
    while True:
        b = bytearray(rng.randbytes(16))
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        s = base64.urlsafe_b64encode(bytes(b)).decode().rstrip("=")
        if s not in (_ZERO_UUID, _METADATA_TOPIC_ID) and not s.startswith("-"):
            return s
