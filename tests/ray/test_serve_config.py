"""serve.yaml, what travels to replicas, and the `--ray` switches: checked without starting Ray."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps import DEMOS, get_demo
from apps.settings import from_env
from shared.errors import UserInputError
from shared.ray_pool import ServeConfig, ShippedFile, _with_env, ship, unship

REPO = Path(__file__).resolve().parents[2]


def test_builtin_defaults_reserve_no_core_and_keep_one_call_waiting_per_replica():
    config = ServeConfig()
    options = config.deployment("prax", "tiny-literal").options()
    assert options == {"num_replicas": 1, "max_ongoing_requests": 2, "ray_actor_options": {"num_cpus": 0}}
    assert config.concurrency(get_demo("prax")) == 2


def test_demo_and_weight_set_overrides_layer_on_the_defaults():
    config = ServeConfig.parse({
        "defaults": {"max_ongoing_requests": 2, "ray_actor_options": {"num_cpus": 1}},
        "demos": {
            "prax": {"num_replicas": 3},
            "geodiffusion": {"ray_actor_options": {"num_gpus": 0.5},
                             "weights": {"nuimages-512x512": {"autoscaling_config": {"min_replicas": 0,
                                                                                     "max_replicas": 4}}}},
        }}, DEMOS)
    assert config.deployment("prax", "tiny-literal").options() == {
        "num_replicas": 3, "max_ongoing_requests": 2, "ray_actor_options": {"num_cpus": 1}}
    big = config.deployment("geodiffusion", "nuimages-512x512").options()
    assert big == {"autoscaling_config": {"min_replicas": 0, "max_replicas": 4}, "max_ongoing_requests": 2,
                   "ray_actor_options": {"num_cpus": 1, "num_gpus": 0.5}}
    assert config.deployment("geodiffusion", "nuimages-256x256").options()["num_replicas"] == 1
    assert config.deployment("tag2text", "tag2text-swin-14m").options()["ray_actor_options"] == {"num_cpus": 1}
    # The hub's queue lets through what the demo's largest deployment answers at once.
    assert config.concurrency(get_demo("prax")) == 6
    assert config.concurrency(get_demo("geodiffusion")) == 8
    # weights: as a mapping also names the start-up weight sets
    assert config.startup_weights(get_demo("geodiffusion"), here=["nuimages-256x256"]) == ["nuimages-512x512"]
    assert config.startup_weights(get_demo("prax"), here=["tiny-literal"]) == ["tiny-literal"]


@pytest.mark.parametrize(("data", "sentence"), [
    ({"demo": {}}, "unknown key 'demo'"),
    ({"demos": {"stable-diffusion": {}}}, "no demo called 'stable-diffusion'"),
    ({"demos": {"prax": {"replicas": 2}}}, "demos: prax: unknown key 'replicas'"),
    ({"demos": {"prax": {"num_replicas": 0}}}, "num_replicas must be a whole number of at least 1"),
    ({"demos": {"prax": {"num_replicas": 2.5}}}, "num_replicas must be a whole number"),
    ({"demos": {"prax": {"num_replicas": 2, "autoscaling_config": {"max_replicas": 2}}}}, "not both"),
    ({"demos": {"prax": {"autoscaling_config": {"min_replicas": 3, "max_replicas": 2}}}}, "min_replicas"),
    ({"demos": {"prax": {"weights": ["no-such-set"]}}}, "no weight set called 'no-such-set'"),
    ({"demos": {"prax": {"weights": "tiny-literal"}}}, "weights must be a list"),
    ({"demos": {"prax": {"ray_actor_options": 2}}}, "ray_actor_options must be a mapping"),
    (["prax"], "must be a mapping"),
])
def test_config_mistakes_are_sentences_naming_the_key(data, sentence):
    with pytest.raises(UserInputError, match=sentence):
        ServeConfig.parse(data, DEMOS)


def test_the_repositorys_serve_yaml_is_valid_and_a_demo_it_does_not_list_gets_the_defaults():
    """serve.yaml is an operator's file: it lists the demos it tunes, and a new demo needs no entry there."""
    config = ServeConfig.load(REPO / "serve.yaml", DEMOS)
    assert set(config.demos) <= {demo.id for demo in DEMOS} and len(config.demos) >= 4
    bare = ServeConfig.parse({"defaults": {"max_ongoing_requests": 3}, "demos": {}}, DEMOS)
    for demo in DEMOS:
        assert bare.deployment(demo.id, demo.weight_sets[0].name).max_ongoing_requests == 3
    text = (REPO / "serve.yaml").read_text(encoding="utf-8")
    for word in ("num_replicas", "autoscaling_config", "max_ongoing_requests", "num_cpus", "num_gpus", "weights"):
        assert word in text
    # fits one machine: no GPU is reserved unless the operator uncomments it
    assert all("num_gpus" not in c.deployment.ray_actor_options for c in config.demos.values())


def test_a_config_file_that_is_missing_or_not_yaml_is_a_sentence(tmp_path):
    with pytest.raises(UserInputError, match="Cannot read the serve config"):
        ServeConfig.load(tmp_path / "nope.yaml", DEMOS)
    (tmp_path / "bad.yaml").write_text("demos: [unclosed", encoding="utf-8")
    with pytest.raises(UserInputError, match="not valid YAML"):
        ServeConfig.load(tmp_path / "bad.yaml", DEMOS)


def test_ray_switches(monkeypatch):
    assert from_env().ray is False
    monkeypatch.setenv("DEMOHUB_RAY_ADDRESS", "auto")
    settings = from_env()
    assert (settings.ray, settings.ray_address) == (True, "auto")  # an address implies --ray
    monkeypatch.delenv("DEMOHUB_RAY_ADDRESS")
    monkeypatch.setenv("DEMOHUB_SERVE_CONFIG", "serve.yaml")
    assert from_env().ray is True


def test_streamlit_refuses_ray(capsys):
    from apps.cli import main

    assert main(["serve", "--streamlit", "--ray"]) == 2
    assert "--ray serves the Gradio hub" in capsys.readouterr().err


def test_uploads_travel_as_bytes_with_their_names(tmp_path):
    upload = tmp_path / "cat photo.png"
    upload.write_bytes(b"\x89PNG fake bytes")
    shipped = ship(([upload, "a"], {"files": [upload]}), roots=(tmp_path,))
    (paths, plain), named = shipped
    assert paths == ShippedFile("cat photo.png", b"\x89PNG fake bytes") and plain == "a"
    assert named["files"] == [ShippedFile("cat photo.png", b"\x89PNG fake bytes")]
    replica_dir = tmp_path / "replica"
    replica_dir.mkdir()
    back = unship(shipped, replica_dir)
    first, second = back[0][0], back[1]["files"][0]
    assert Path(first).name == Path(second).name == "cat photo.png" and first != second  # no collision
    assert Path(first).read_bytes() == b"\x89PNG fake bytes" and Path(first).is_relative_to(replica_dir)


def test_a_visitors_text_never_travels_as_a_file(tmp_path, monkeypatch):
    """Text naming a file, even an upload ("/tmp/.../cat.png" as a PraX example or a question), stays text; only a
    ``Path`` under the upload folders (what the pages make of an upload) is read, and no link leads outside them."""
    monkeypatch.chdir(tmp_path)
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    (uploads / "cat.png").write_bytes(b"png")
    (tmp_path / "a").write_text("secret", encoding="utf-8")
    link = uploads / "link.txt"
    link.symlink_to("/etc/passwd")
    texts = ["a", str(uploads / "cat.png"), {"string": str(uploads / "cat.png"), "label": "+"}]
    assert ship(texts, roots=(uploads,)) == texts
    paths = [Path("/etc/passwd"), link, uploads / "missing.png", Path("a")]
    assert ship(paths, roots=(uploads,)) == paths


def test_pages_hand_uploads_to_the_pipeline_as_paths():
    from apps.tag2text.actions import upload_path, upload_paths

    assert upload_path({"path": "/tmp/gradio/x/cat.png", "orig_name": "cat.png"}) == Path("/tmp/gradio/x/cat.png")
    assert upload_paths(["/tmp/gradio/a.png", b"raw"]) == [Path("/tmp/gradio/a.png"), b"raw"]
    assert upload_path(None) is None


def test_replicas_get_the_hubs_settings_but_no_secrets(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("DEMOHUB_DTYPE", "bf16")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    monkeypatch.setenv("DEMOHUB_AUTH", "admin:pw")
    options = _with_env({"num_cpus": 1, "runtime_env": {"env_vars": {"DEMOHUB_DTYPE": "fp32"}}})
    env = options["runtime_env"]["env_vars"]
    assert env["HF_HUB_OFFLINE"] == "1" and env["DEMOHUB_DTYPE"] == "fp32"  # the config's own value wins
    assert "HF_TOKEN" not in env and "DEMOHUB_AUTH" not in env
    assert options["num_cpus"] == 1


def test_without_ray_installed_the_hub_says_how_to_install_it(monkeypatch):
    import sys

    from shared.errors import DemoHubError
    from shared.ray_pool import RayPool

    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets where ray[serve] is not installed
    with pytest.raises(DemoHubError, match=r"pip install -e '\.\[ray\]'"):
        RayPool(DEMOS)
