"""The Streamlit page's sampler choice through AppTest, on a tiny nuImages checkpoint (DEMOHUB_CHECKPOINTS)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from shared.weights import REPO_ROOT
from tests.fixtures.tiny_geodiffusion import build_tiny_checkpoint

HUB = str(REPO_ROOT / "apps" / "streamlit_hub.py")


def test_fast_sampling_sets_its_steps_and_runs(offline, tmp_path, monkeypatch):
    from shared.pool import default_pool

    build_tiny_checkpoint(tmp_path / "ckpts" / "geodiffusion" / "nuimages-256x256", dataset="nuimages")
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "ckpts"))
    default_pool().clear()
    try:
        at = AppTest.from_file(HUB, default_timeout=180).run()
        at.switch_page("geodiffusion/streamlit_page.py").run()
        assert not at.exception
        sampler = at.radio(key="sampler-nuimages-256x256")
        assert sampler.value == "default" and sampler.options == [
            "Official (PNDM, 100 steps)", "Fast sampling (DPM-Solver++, 20 steps)"]
        assert "less time per image than the official 100 PNDM steps" in sampler.help
        steps = at.number_input(key="steps-nuimages-256x256")
        assert steps.value == 100
        sampler.set_value("fast").run()
        assert at.number_input(key="steps-nuimages-256x256").value == 20 and not at.exception
        at.number_input(key="steps-nuimages-256x256").set_value(2).run()
        at.radio(key="sampler-nuimages-256x256").set_value("default").run()
        assert at.number_input(key="steps-nuimages-256x256").value == 2  # a number the person chose stays
        at.radio(key="sampler-nuimages-256x256").set_value("fast").run()
        at.button[0].click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert any(m.value.endswith("2 steps, cfg 5.0, seed 0, fast sampling (DPM-Solver++).") for m in at.markdown)
    finally:
        default_pool().clear()
