"""shared.pace: seconds per unit of work measured here, and the estimate a page shows before a long run."""

import pytest

from shared.pace import Pace, duration_text


def test_no_estimate_before_a_key_has_run():
    assert Pace().estimate("tiny-literal", 500) is None


def test_the_estimate_follows_recent_runs():
    pace = Pace(weight_of_latest=0.5)
    pace.record("a", seconds=2.0, units=100)  # 0.02 s per unit
    assert pace.estimate("a", 500) == pytest.approx(10.0)
    pace.record("a", seconds=4.0, units=100)  # 0.04: the average moves halfway
    assert pace.estimate("a", 500) == pytest.approx(15.0)
    assert pace.estimate("b", 500) is None, "per key"


def test_timing_records_the_body_and_skips_a_failed_one(monkeypatch):
    clock = iter([10.0, 13.0, 20.0])
    monkeypatch.setattr("shared.pace.time.perf_counter", lambda: next(clock))
    pace = Pace()
    with pace.timing("a", units=3):
        pass
    assert pace.estimate("a", 1) == pytest.approx(1.0)
    with pytest.raises(RuntimeError), pace.timing("b", units=3):
        raise RuntimeError("the model call failed")
    assert pace.estimate("b", 1) is None


@pytest.mark.parametrize(("seconds", "text"), [(0.2, "about 1 s"), (7.4, "about 7 s"), (42, "about 40 s"),
                                               (92, "about 2 min"), (600, "about 10 min")])
def test_duration_text_reads_like_an_estimate(seconds, text):
    assert duration_text(seconds) == text
