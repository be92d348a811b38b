"""The polled progress bar (kcontroller.progress.Poller): the count sampled at the end of its block is drawn
before the bar is erased, however soon after the previous draw the block ends."""
import io
import os
import subprocess
import sys
import time

import pytest

from kcontroller import progress


def test_the_final_count_is_drawn_even_within_the_redraw_interval(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    done = [0]
    with progress.Poller("always", lambda: done[0], total=9, unit="task", desc="poll", interval=60,
                          unit_scale=False) as poller:
        done[0] = 9             # the poller's thread sleeps: only the final sample sees it
    assert poller.bar.n == 9
    assert "9/9" in err.getvalue()


def test_a_hidden_bar_samples_nothing():
    calls = []
    with progress.Poller("never", lambda: calls.append(1) or 0, total=3, unit="x", desc="quiet") as poller:
        pass
    assert poller.bar.disable and calls == []


def test_a_sample_never_takes_the_bar_back(monkeypatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())
    done = [5]
    with progress.Poller("always", lambda: done[0], total=9, unit="B", desc="poll", interval=60) as poller:
        poller._draw()
        done[0] = 3             # a worker process ended and its count has not joined its parent's yet
        poller._draw()
        assert poller.bar.n == 5
        done[0] = 9


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="no /proc/<pid>/io here")
def test_the_bytes_read_count_those_of_live_child_processes(tmp_path):
    data = tmp_path / "data"
    data.write_bytes(b"x" * (8 << 20))
    script = f"import time; open({str(data)!r}, 'rb').read(); time.sleep(30)"
    before = progress.bytes_read()
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 20
        while progress.bytes_read() - before < 8 << 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert progress.bytes_read() - before >= 8 << 20
    finally:
        child.kill()
        child.wait()
