"""The simulated network: latency between nodes, cut links (network partitions) and slow nodes.

Nodes are broker ids, ``"zk"`` (the metadata store) and ``"clients"`` (producers). A message
sent from ``src`` to ``dst`` arrives after the link's latency (``latency_ms`` plus a jitter drawn
from the simulation's one random source, plus the receiving side's extra delay when it is a slow
node) — unless the link is cut, at send time or by the time it would arrive: then it is lost and
the sender's ``on_lost`` callback runs at that moment, as a TCP connection reset would tell it.
Messages on one link arrive in the order they were sent (a TCP connection), even with jitter.
Links are cut and healed as a whole (``cut``/``heal``), as ``partition_network`` and
``heal_network`` steps do.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from sim.event_loop import EventLoop

Node = int | str


def link(a: Node, b: Node) -> frozenset:
    return frozenset((a, b))


class Network:
    """Latency, cut links and slow nodes, on an :class:`EventLoop`."""

    def __init__(self, loop: EventLoop, latency_ms: int = 1, jitter_ms: int = 0):
        if latency_ms < 0 or jitter_ms < 0:
            raise ValueError("latency and jitter must not be negative")
        self.loop = loop
        self.latency_ms = int(latency_ms)
        self.jitter_ms = int(jitter_ms)
        self._cut: set[frozenset] = set()
        self._extra_delay: dict[Node, int] = {}
        self._last_arrival: dict[tuple[Node, Node], int] = {}   # per direction: keeps a link FIFO
        self.sent = 0
        self.lost = 0

    # --- faults -------------------------------------------------------------------------------
    def cut(self, links: Iterable[frozenset]) -> None:
        self._cut.update(links)

    def heal(self, links: Iterable[frozenset] | None = None) -> None:
        """Heal the given links, or every cut link."""
        if links is None:
            self._cut.clear()
        else:
            self._cut.difference_update(links)

    def slow(self, node: Node, extra_delay_ms: int) -> None:
        """Messages to ``node`` take ``extra_delay_ms`` longer (a slow follower); 0 ends it."""
        if extra_delay_ms <= 0:
            self._extra_delay.pop(node, None)
        else:
            self._extra_delay[node] = int(extra_delay_ms)

    def reachable(self, a: Node, b: Node) -> bool:
        return not self._cut or a == b or frozenset((a, b)) not in self._cut

    @property
    def cut_links(self) -> frozenset:
        return frozenset(self._cut)

    # --- messages -----------------------------------------------------------------------------
    def delay(self, src: Node, dst: Node) -> int:
        if src == dst:
            return 0
        jitter = self.loop.rng.randint(0, self.jitter_ms) if self.jitter_ms else 0
        return self.latency_ms + jitter + self._extra_delay.get(dst, 0)

    def send(self, src: Node, dst: Node, deliver: Callable[[], object],
             on_lost: Callable[[], object] | None = None, name: str = "") -> bool:
        """Deliver ``deliver()`` at ``dst`` after the link's delay; False (and ``on_lost`` at once) when
        the link is cut now. A message whose link is cut while in flight is lost on arrival."""
        self.sent += 1
        if not self.reachable(src, dst):
            self.lost += 1
            if on_lost is not None:
                on_lost()
            return False
        loop = self.loop
        arrival = loop.now + self.delay(src, dst)
        key = (src, dst)
        arrival = max(arrival, self._last_arrival.get(key, arrival))
        self._last_arrival[key] = arrival

        def arrive() -> None:
            if self.reachable(src, dst):
                deliver()
            else:
                self.lost += 1
                if on_lost is not None:
                    on_lost()
        loop.post(arrival, arrive)
        return True
