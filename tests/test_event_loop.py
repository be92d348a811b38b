"""The simulation's event loop: (time, sequence) order, cancellation, and determinism."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.event_loop import EventLoop


def test_events_run_in_time_then_schedule_order():
    loop = EventLoop()
    seen = []
    loop.at(10, lambda: seen.append(("a", loop.now)))
    loop.at(5, lambda: seen.append(("b", loop.now)))
    loop.at(10, lambda: seen.append(("c", loop.now)))
    loop.after(0, lambda: seen.append(("d", loop.now)))
    loop.run_until(100)
    assert seen == [("d", 0), ("b", 5), ("a", 10), ("c", 10)]
    assert loop.now == 100 and loop.events_run == 4


def test_events_scheduled_while_running_and_cancellation():
    loop = EventLoop()
    seen = []

    def first():
        seen.append(loop.now)
        loop.after(0, lambda: seen.append(("same time, later", loop.now)))
        timer = loop.after(5, lambda: seen.append("cancelled"))
        timer.cancel()
    loop.at(3, first)
    loop.run_until(3)
    assert seen == [3, ("same time, later", 3)]
    assert loop.next_time() is None and loop.pending() == 0


def test_run_until_stops_before_later_events_and_the_past_is_refused():
    loop = EventLoop()
    seen = []
    loop.at(50, lambda: seen.append(50))
    loop.run_until(49)
    assert seen == [] and loop.now == 49 and loop.next_time() == 50
    with pytest.raises(ValueError, match="already 49 ms"):
        loop.at(10, lambda: None)
    with pytest.raises(ValueError, match="negative delay"):
        loop.after(-1, lambda: None)


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 3)), max_size=50), st.integers(0, 2**32))
def test_same_seed_same_run(plan, seed):
    def run():
        loop = EventLoop(seed)
        out = []
        for t, k in plan:
            loop.at(t, lambda t=t, k=k: out.append((loop.now, k, loop.rng.random())))
        loop.run_until(2000)
        return out
    a = run()
    assert a == run()
    assert [x[0] for x in a] == sorted(x[0] for x in a)


def test_posted_events_interleave_with_timers_in_schedule_order():
    loop = EventLoop()
    seen = []
    loop.at(5, lambda: seen.append("timer a"))
    loop.post(5, lambda: seen.append("posted"))
    t = loop.at(5, lambda: seen.append("cancelled"))
    loop.at(5, lambda: seen.append("timer b"))
    loop.post(3, lambda: seen.append("first"))
    t.cancel()
    loop.run_until(10)
    assert seen == ["first", "timer a", "posted", "timer b"] and loop.events_run == 4


def test_a_message_cannot_be_posted_into_the_past():
    loop = EventLoop(start_ms=10)
    with pytest.raises(ValueError, match="already 10 ms"):
        loop.post(9, lambda: None)
