"""The workload's producers: Kafka's producer client, reduced to what decides availability and loss.

Each producer of a scenario's workload runs on the ``"clients"`` node, with the producer configs
of :mod:`sim.producer_config` (Kafka 3.7's defaults, or the scenario's ``configs``). Every
``TICK_MS`` it adds the messages its rate calls for to its accumulator, filling one partition's
batch up to ``batch.size`` (16384 bytes) before moving to the next partition of its topics (the
uniform sticky partitioner of KIP-794, in round-robin order so runs are reproducible). Batches
go to the leader its metadata names as Kafka's ``Sender`` loop sends them: at every tick, when
a batch's ``linger.ms`` runs out, and whenever a request completes, requests with at most one
batch per partition go to each *ready* leader (RecordAccumulator.ready: one of its partitions'
first batches is full, has waited ``linger.ms``, or is a retry whose backoff is over — then every
partition's first batch goes, lingering or not, as RecordAccumulator.drain does) while fewer
than ``max.in.flight.requests.per.connection`` (5) are in flight to it; a partition whose
leader it does not know waits in the accumulator. Errors are retried after ``retry.backoff.ms``
(100 ms) with a metadata refresh, at most ``retries`` times and until ``delivery.timeout.ms``
(120 s) after the batch was made; then its messages fail (with the last error, or
DELIVERY_TIMEOUT). Every batch
acknowledged with acks 1 or all is reported to the metrics with its offsets and leader epoch,
so that its fate can be followed to the end of the run, and with the time since the batch was made
(its produce latency). With acks 0 a request is done once it
reaches a live broker (or is lost to a cut link): its messages count as acknowledged, not
followed for loss. A produce request to a broker whose process is gone is reset at once, and so
are the requests in flight to a broker whose process dies (on their way, or waiting in its
purgatory): their batches fail with NETWORK_EXCEPTION and the client stops sending to that
broker, retrying the connection after ``reconnect.backoff.ms`` (50 ms, doubling up to 1 s) —
failed reconnections leave the batches waiting, as Kafka's ``NetworkClient`` does, without
counting as errors. A request lost to a cut link times out after ``request.timeout.ms``
(REQUEST_TIMED_OUT), which is also the produce request's timeout at the broker (how long acks=all
waits for the ISR). After ``stop`` the producer adds no message but goes on retrying, or
expiring, those it has.
"""
from __future__ import annotations

from bisect import insort
from math import inf
from operator import itemgetter

from sim.producer_config import producer_configs
from sim.replication import NETWORK_EXCEPTION, NONE, REQUEST_TIMED_OUT

TICK_MS = 100
DELIVERY_TIMEOUT = "DELIVERY_TIMEOUT"
UNKNOWN_TOPIC_OR_PARTITION = "UNKNOWN_TOPIC_OR_PARTITION"
_SEQUENCE = itemgetter(4)
# A batch: [tp, messages, made at ms, not before ms (a retry's backoff), sequence, attempts so far].


class Producer:
    """One producer of the workload (``spec`` is a :class:`sim.scenario.ProducerSpec`)."""

    # Tests: drain with the loop over the whole accumulator (_drain_rounds_reference) instead of _drain_rounds.
    drain_reference = False

    def __init__(self, sim, spec, index: int):
        self.sim = sim
        self.spec = spec
        self.index = index
        c = producer_configs(dict(spec.configs))
        self.per_batch = max(1, c["batch.size"] // spec.message_bytes)
        self.linger_ms = c["linger.ms"]
        self.max_in_flight = c["max.in.flight.requests.per.connection"]
        self.request_timeout_ms = c["request.timeout.ms"]
        self.delivery_timeout_ms = c["delivery.timeout.ms"]
        self.retries = c["retries"]
        self.retry_backoff_ms = c["retry.backoff.ms"]
        self.reconnect_backoff_ms = c["reconnect.backoff.ms"]
        self.reconnect_backoff_max_ms = c["reconnect.backoff.max.ms"]
        self.metadata_max_age_ms = c["metadata.max.age.ms"]
        self.linger_timer = None     # the wake-up for the first batch whose linger.ms runs out
        self.produced = 0            # messages handed to the accumulator so far
        self.cursor = 0              # round-robin position over the partitions
        self.fill = 0                # messages in the current partition's batch
        # The accumulator: each partition's batches by sequence (RecordAccumulator's deque per partition); the
        # batches of all partitions, by sequence, are ``accumulator``.
        self.queues: dict[tuple, list[list]] = {}
        self.queued = 0              # batches in the accumulator
        self.oldest = inf            # at most the earliest creation time of a batch in the accumulator
        self.groups: dict[int, dict] = {}    # leader (-1: unknown) -> {tp: None} of the partitions with batches
        self._grouped = None         # the ``leaders`` that ``groups`` was made from
        self.batches_made = 0        # the next batch's sequence
        self.draining = False        # a _drain is running (further down the stack)
        self.leaders: dict[str, list[int]] = {}      # topic -> the leader of each partition id (-1: unknown)
        self.metadata_ms = -self.metadata_max_age_ms
        self.needs_refresh = True
        self.in_flight = 0
        self.down: dict[int, list] = {}      # broker -> [reconnect at ms, current backoff ms]
        self.open_batches: dict[tuple, list] = {}   # tp -> its newest batch, while it is not sent
        self.requests: dict[int, dict] = {}          # broker -> requests in flight to it

    def start(self) -> None:
        self.sim.loop.at(self.spec.start_ms, self._tick, f"producer {self.index}")

    def _partitions(self) -> list[tuple]:
        return self.sim.producer_partitions(self.spec.topics)

    def _tick(self) -> None:
        sim = self.sim
        now = sim.loop.now
        if now <= self.spec.stop_ms:
            self._add_messages(now)
        elif not self.queued and not self.in_flight:
            return
        # After ``stop`` no message is added, but the sender goes on retrying (or expiring) what it has.
        if self.needs_refresh or now - self.metadata_ms >= self.metadata_max_age_ms:
            self._refresh_metadata(now)
        self._drain(now)
        sim.loop.after(TICK_MS, self._tick, f"producer {self.index}")

    def _add_messages(self, now: int) -> None:
        due = int(self.spec.rate_per_s * (now - self.spec.start_ms) / 1000) - self.produced
        if due <= 0:
            return
        partitions = self._partitions()
        metrics = self.sim.metrics
        if not partitions:
            metrics.produce_error(UNKNOWN_TOPIC_OR_PARTITION, due, now)
            metrics.failed_messages += due
            self.produced += due
            return
        self.produced += due
        metrics.sent_messages += due
        queues = self.queues
        open_batches = self.open_batches
        leaders = self.leaders
        groups = self.groups if self._grouped is leaders else None     # None: to be made again (new metadata)
        made = self.batches_made
        n = len(partitions)
        while due:
            tp = partitions[self.cursor % n]
            take = min(due, self.per_batch - self.fill)
            batch = open_batches.get(tp)
            if batch is not None and batch[1] + take <= self.per_batch:
                batch[1] += take      # the partition's last batch still has room
            else:
                batch = open_batches[tp] = [tp, take, now, now, self.batches_made, 0]
                self.batches_made += 1
                queue = queues.get(tp)
                if queue is not None:
                    queue.append(batch)
                else:
                    queues[tp] = [batch]
                    if groups is not None:      # _group, inline
                        known = leaders.get(tp[0])
                        leader = known[tp[1]] if known is not None and tp[1] < len(known) else -1
                        group = groups.get(leader)
                        if group is None:
                            groups[leader] = {tp: None}
                        else:
                            group[tp] = None
            due -= take
            self.fill += take
            if self.fill >= self.per_batch:
                self.fill = 0
                self.cursor += 1
        if self.batches_made > made:
            self.queued += self.batches_made - made
            if now < self.oldest:
                self.oldest = now

    def _refresh_metadata(self, now: int) -> None:
        """A MetadataRequest to the first live broker the clients can reach; answered from its cache."""
        source = self.sim.metadata_source()
        self.metadata_ms = now
        if source is None:
            return
        self.needs_refresh = False
        cache = source.metadata
        self.leaders = {topic: cache.leaders(topic).tolist() for topic in self.spec.topics}

    @property
    def accumulator(self) -> list[list]:
        """The batches waiting, by sequence (the order they were made): a new list."""
        return sorted((batch for queue in self.queues.values() for batch in queue), key=_SEQUENCE)

    @accumulator.setter
    def accumulator(self, batches: list[list]) -> None:
        """The batches waiting become ``batches`` (by sequence): how _drain_rounds_reference keeps them."""
        queues: dict[tuple, list[list]] = {}
        for batch in batches:
            queues.setdefault(batch[0], []).append(batch)
        for queue in queues.values():
            queue.sort(key=_SEQUENCE)
        self.queues = queues
        self.queued = len(batches)
        self.oldest = min((batch[2] for batch in batches), default=inf)
        self._grouped = None

    def _leader(self, tp: tuple) -> int:
        known = self.leaders.get(tp[0])
        return known[tp[1]] if known is not None and tp[1] < len(known) else -1

    def _group(self, tp: tuple) -> None:
        """A partition's first batch came into the accumulator: into its leader's group (unless the groups
        are to be made again, from new metadata)."""
        if self._grouped is self.leaders:
            self.groups.setdefault(self._leader(tp), {})[tp] = None

    def _ungroup(self, leader: int, tp: tuple) -> None:
        group = self.groups[leader]
        del group[tp]
        if not group:
            del self.groups[leader]

    def _regroup(self) -> None:
        groups: dict[int, dict] = {}
        for tp in self.queues:
            groups.setdefault(self._leader(tp), {})[tp] = None
        self.groups = groups
        self._grouped = self.leaders

    def _drain(self, now: int) -> None:
        """The Sender's loop: each round drains every leader one request of at most one batch per partition
        (RecordAccumulator.drain: a partition's first batch, none while that one backs off), and rounds
        go on while some leader has fewer than five in flight."""
        if self.draining:
            return      # re-entered by a request done as it was sent (acks 0 into a cut link): the loop goes on
        self.draining = True
        try:
            if self.drain_reference:
                self._drain_rounds_reference(now)
            else:
                self._drain_rounds(now)
        finally:
            self.draining = False

    def _drain_rounds(self, now: int) -> None:
        """The rounds of ``_drain_rounds_reference``, visiting only what can change: the first batch of each
        partition (a partition's queue), grouped by leader so that a leader in reconnect backoff or with
        ``max_in_flight`` requests in flight is passed over whole; the expired batches only when the oldest
        may be; and after the first round only the leaders sent to in the round before (nothing else changes
        while the same drain goes on: the others stay blocked, backing off, or lingering with the same
        batches)."""
        if not self.queued:
            return
        if self._grouped is not self.leaders:
            self._regroup()
        if now - self.oldest >= self.delivery_timeout_ms:
            self._expire(now)
        queues = self.queues
        groups = self.groups
        linger = self.linger_ms
        per_batch = self.per_batch
        # leader -> (ready, the first batches it could be sent, the earliest linger end of its lingering ones)
        drained: dict[int, tuple] = {}
        visit = list(groups)
        while self.queued:
            for leader in visit:
                drained.pop(leader, None)
                tps = groups.get(leader)
                if tps is None:
                    continue
                if leader < 0:
                    if not self.needs_refresh:
                        for tp in tps:
                            if queues[tp][0][3] <= now:
                                self.needs_refresh = True
                                break
                    continue
                down = self.down.get(leader)
                if (down is not None and down[0] > now) or len(self.requests.get(leader, ())) >= self.max_in_flight:
                    continue
                firsts = []
                ready = False
                wake = None
                for tp in tps:
                    batch = queues[tp][0]
                    if batch[3] > now:
                        continue
                    firsts.append(batch)
                    created = batch[2]
                    if batch[5] or batch[1] >= per_batch or now - created >= linger:
                        ready = True
                    elif wake is None or created + linger < wake:
                        wake = created + linger
                if firsts:
                    drained[leader] = (ready, firsts, wake)
            send = sorted(leader for leader, (ready, _, _) in drained.items() if ready)
            if linger and len(send) < len(drained):
                # A leader none of whose batches is full, lingered enough or a retry is not ready: they wait.
                self._wake_at(min(wake for _, _, wake in drained.values() if wake is not None))
            else:
                send = sorted(drained)
            if not send:
                return
            requests = []
            for leader in send:
                batches = drained.pop(leader)[1]
                batches.sort(key=_SEQUENCE)
                for batch in batches:
                    tp = batch[0]
                    queue = queues[tp]
                    del queue[0]
                    if not queue:
                        del queues[tp]
                        self._ungroup(leader, tp)
                self.queued -= len(batches)
                requests.append((leader, batches))
            for leader, batches in requests:
                for batch in batches:
                    if self.open_batches.get(batch[0]) is batch:
                        del self.open_batches[batch[0]]     # sent: closed for appends
                self._send(leader, batches)
            visit = send

    def _expire(self, now: int) -> None:
        """The batches made ``delivery.timeout.ms`` ago or more fail (wherever they are in their partition's
        queue), in the order they were made; ``oldest`` becomes the earliest creation time left."""
        metrics = self.sim.metrics
        timeout = self.delivery_timeout_ms
        expired = []
        oldest = inf
        for tp, queue in list(self.queues.items()):
            left = [batch for batch in queue if now - batch[2] < timeout]
            if len(left) < len(queue):
                expired.extend(batch for batch in queue if now - batch[2] >= timeout)
                if left:
                    self.queues[tp] = left
                else:
                    del self.queues[tp]
                    self._ungroup(self._leader(tp), tp)
            for batch in left:
                if batch[2] < oldest:
                    oldest = batch[2]
        self.oldest = oldest
        self.queued -= len(expired)
        expired.sort(key=_SEQUENCE)
        for batch in expired:
            tp, count = batch[0], batch[1]
            metrics.produce_error(DELIVERY_TIMEOUT, count, now, batches=1)
            metrics.failed_messages += count
            if self.open_batches.get(tp) is batch:
                del self.open_batches[tp]

    def _drain_rounds_reference(self, now: int) -> None:
        """The drain as a loop over every batch of the accumulator, each round (what ``_drain_rounds`` must
        do, kept for the tests)."""
        metrics = self.sim.metrics
        linger = self.linger_ms
        while self.accumulator:
            by_leader: dict[int, list] = {}
            keep = []
            taken: set = set()        # partitions whose first batch this round has looked at
            ready_leaders: set = set()
            wake = None               # when a lingering batch would make its leader ready
            for batch in self.accumulator:
                tp, count, created, ready, _, attempts = batch
                if now - created >= self.delivery_timeout_ms:
                    metrics.produce_error(DELIVERY_TIMEOUT, count, now, batches=1)
                    metrics.failed_messages += count
                    if self.open_batches.get(tp) is batch:
                        del self.open_batches[tp]
                    continue
                if tp in taken:
                    keep.append(batch)
                    continue
                taken.add(tp)
                if ready > now:
                    keep.append(batch)
                    continue
                known = self.leaders.get(tp[0])
                leader = known[tp[1]] if known is not None and tp[1] < len(known) else -1
                if leader < 0:
                    self.needs_refresh = True
                    keep.append(batch)
                    continue
                down = self.down.get(leader)
                if (down is not None and down[0] > now) or len(self.requests.get(leader, ())) >= self.max_in_flight:
                    keep.append(batch)
                    continue
                if attempts or count >= self.per_batch or now - created >= linger:
                    ready_leaders.add(leader)
                elif wake is None or created + linger < wake:
                    wake = created + linger
                by_leader.setdefault(leader, []).append(batch)
            if linger and len(ready_leaders) < len(by_leader):
                # A leader none of whose batches is full, lingered enough or a retry is not ready: they wait.
                for leader in [b for b in by_leader if b not in ready_leaders]:
                    keep.extend(by_leader.pop(leader))
                keep.sort(key=_SEQUENCE)
                if wake is not None:
                    self._wake_at(wake)
            self.accumulator = keep
            if not by_leader:
                return
            for leader in sorted(by_leader):
                for batch in by_leader[leader]:
                    if self.open_batches.get(batch[0]) is batch:
                        del self.open_batches[batch[0]]     # sent: closed for appends
                self._send(leader, by_leader[leader])

    def _wake_at(self, at: int) -> None:
        """Drain again when a lingering batch's linger.ms runs out (one wake-up, the earliest, pending)."""
        timer = self.linger_timer
        if timer is not None and not timer.cancelled and timer.time <= at:
            return
        if timer is not None:
            timer.cancel()

        def wake() -> None:
            self.linger_timer = None
            self._drain(self.sim.loop.now)
        self.linger_timer = self.sim.loop.at(at, wake, f"producer {self.index} linger")

    def _send(self, leader: int, batches: list) -> None:
        sim = self.sim
        acks = self.spec.acks
        sent_at = sim.loop.now
        answered = [False, leader, sent_at]   # [answered yet, the broker the request went to, sent at]

        def respond(results) -> None:
            if acks != 0:
                sim.network.send(leader, "clients", lambda: self._on_response(batches, results, answered),
                                 lambda: self._timed_out(batches, sent_at, answered), name="produce response")

        def deliver() -> None:
            broker = sim.brokers.get(leader)
            if broker is None or not broker.alive:
                # The process is gone: the OS resets the connection (or refuses a new one).
                sim.network.send(leader, "clients", lambda: self._disconnected(leader, batches, answered),
                                 lambda: self._timed_out(batches, sent_at, answered))
                return
            self.down.pop(leader, None)
            sim.replication.produce(leader, acks, [(b[0], b[1]) for b in batches], respond, self.request_timeout_ms)
            if acks == 0:
                self._sent_without_acks(batches, answered)

        self.in_flight += 1
        self.requests.setdefault(leader, {})[id(answered)] = (batches, answered)
        sim.network.send("clients", leader, deliver, lambda: self._timed_out(batches, sent_at, answered),
                         name=f"produce clients->{leader}")

    def _disconnected(self, leader: int, batches: list, answered: list) -> None:
        if answered[0]:
            return
        down = self.down.get(leader)
        if down is None:
            # The connection was up: the requests on it fail.
            self.down[leader] = [self.sim.loop.now + self.reconnect_backoff_ms, self.reconnect_backoff_ms]
            self._on_response(batches, [(NETWORK_EXCEPTION, b[0], b[1], -1, -1) for b in batches], answered)
            return
        # A failed reconnection: the batches wait, the next attempt backs off further.
        self.requests.get(answered[1], {}).pop(id(answered), None)
        answered[0] = True
        self.in_flight -= 1
        down[1] = min(self.reconnect_backoff_max_ms, down[1] * 2)
        down[0] = self.sim.loop.now + down[1]
        self.needs_refresh = True
        self._reenqueue(batches)

    def _reenqueue(self, batches: list) -> None:
        """Batches to send again go back to the head of their partitions' queues, in the order they were
        made (RecordAccumulator.reenqueue; with idempotence, insertInSequenceOrder): each queue is kept in
        the order the batches were made."""
        queues = self.queues
        for batch in batches:
            tp = batch[0]
            queue = queues.get(tp)
            if queue is None:
                queues[tp] = [batch]
                self._group(tp)
            else:
                insort(queue, batch, key=_SEQUENCE)
            self.queued += 1
            if batch[2] < self.oldest:
                self.oldest = batch[2]

    def _sent_without_acks(self, batches: list, answered: list) -> None:
        """acks=0: sending completes the request (Kafka's futures complete with offset -1). What becomes
        of its messages nobody learns: they count as acknowledged but are not followed for loss."""
        if answered[0]:
            return
        self.requests.get(answered[1], {}).pop(id(answered), None)
        answered[0] = True
        self.in_flight -= 1
        self.sim.metrics.acked_messages += sum(b[1] for b in batches)
        self._drain(self.sim.loop.now)

    def _timed_out(self, batches: list, sent_at: int, answered: list) -> None:
        """A request or its answer lost to a cut link: the client gives up after request.timeout.ms."""
        if self.spec.acks == 0:
            self._sent_without_acks(batches, answered)    # written into the socket of a dead link
            return
        if answered[0]:
            return
        due = max(self.sim.loop.now, sent_at + self.request_timeout_ms)
        results = [(REQUEST_TIMED_OUT, b[0], b[1], -1, -1) for b in batches]
        self.sim.loop.at(due, lambda: self._on_response(batches, results, answered), "produce request timeout")

    def broker_died(self, b: int) -> None:
        """The broker's process is gone: its connections reset, the requests in flight on them fail."""
        for batches, answered in list(self.requests.get(b, {}).values()):
            if not answered[0]:
                self.down[b] = [self.sim.loop.now + self.reconnect_backoff_ms, self.reconnect_backoff_ms]
                results = [(NETWORK_EXCEPTION, x[0], x[1], -1, -1) for x in batches]
                self.sim.network.send(b, "clients", lambda batches=batches, answered=answered, results=results:
                                      self._on_response(batches, results, answered),
                                      lambda batches=batches, answered=answered:
                                      self._timed_out(batches, answered[2], answered), name="connection reset")

    def _on_response(self, batches: list, results: list, answered: list) -> None:
        if answered[0]:
            return
        self.requests.get(answered[1], {}).pop(id(answered), None)
        answered[0] = True
        self.in_flight -= 1
        sim = self.sim
        now = sim.loop.now
        metrics = sim.metrics
        retry_at = now + self.retry_backoff_ms
        retries = []
        for batch, result in zip(batches, results):
            error, _tp, count, epoch, first = result
            tp = batch[0]
            if error == NONE:
                metrics.acknowledged(tp, epoch, first, count)
                metrics.acknowledged_after(now - batch[2], count)
                continue
            metrics.produce_error(error, count, now, batches=1)
            self.needs_refresh = True
            if retry_at - batch[2] >= self.delivery_timeout_ms:
                metrics.produce_error(DELIVERY_TIMEOUT, count, now, batches=1)
                metrics.failed_messages += count
            elif batch[5] >= self.retries:
                metrics.failed_messages += count     # Sender.canRetry: no retry left; it fails with the error
            else:
                batch[3] = retry_at
                batch[5] += 1
                retries.append(batch)
        self._reenqueue(retries)
        self._drain(now)      # a request slot is free: the sender sends what is ready at once
