"""The simulated network: latency, FIFO links, cuts (at send and in flight), healing, slow nodes."""
from __future__ import annotations

from sim.event_loop import EventLoop
from sim.network import Network, link
from sim.scenario import cut_links


def test_latency_and_fifo_with_jitter():
    loop = EventLoop(seed=3)
    net = Network(loop, latency_ms=5, jitter_ms=20)
    got = []
    for i in range(50):
        net.send(1, 2, lambda i=i: got.append((i, loop.now)))
    loop.run_until(1_000)
    assert [i for i, _ in got] == list(range(50))          # one link delivers in order
    assert all(5 <= t <= 25 for _, t in got)
    assert [t for _, t in got] == sorted(t for _, t in got)


def test_cut_link_loses_messages_at_send_and_in_flight_then_heals():
    loop = EventLoop()
    net = Network(loop, latency_ms=10)
    got, lost = [], []
    assert net.send(1, "zk", lambda: got.append("early"), lambda: lost.append("early"))
    loop.run_until(5)
    net.cut([link(1, "zk")])                                 # while "early" is in flight
    assert not net.send(1, "zk", lambda: got.append("now"), lambda: lost.append("now"))
    assert net.send(1, 2, lambda: got.append("other link"))
    loop.run_until(100)
    assert got == ["other link"] and lost == ["now", "early"]
    net.heal()
    assert net.send("zk", 1, lambda: got.append("healed"))
    loop.run_until(200)
    assert got[-1] == "healed" and net.lost == 2


def test_slow_node_and_scenario_partitions():
    loop = EventLoop()
    net = Network(loop, latency_ms=2)
    net.slow(3, 500)
    arrivals = {}
    net.send(1, 3, lambda: arrivals.setdefault("to slow", loop.now))
    net.send(3, 1, lambda: arrivals.setdefault("from slow", loop.now))
    loop.run_until(1_000)
    assert arrivals == {"to slow": 502, "from slow": 2}
    links = cut_links({"groups": ((1, 2), (3, "zk")), "isolate": None, "from": None}, [1, 2, 3])
    net.cut(links)
    assert net.reachable(1, 2) and net.reachable(3, "zk")
    assert not net.reachable(1, 3) and not net.reachable(2, "zk")
