"""The polled progress bar (kcontroller.progress.Poller): the count sampled at the end of its block is drawn
before the bar is erased, however soon after the previous draw the block ends."""
import io

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
