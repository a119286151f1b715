"""The pages' model calls through Ray Serve, on a real Ray cluster started like an operator would (`ray start --head`)
and joined by address, as `demohub serve --ray --ray-address ...` does: same outputs as in process, progress, the
same error sentences, replicas under a burst, a replica killed mid-burst, and Serve's own status."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import secrets
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import psutil
import pytest
from PIL import Image

from apps import DEMOS, get_demo
from apps.prax import actions as prax_actions
from apps.settings import ServeSettings
from apps.tag2text import actions as tag2text_actions
from shared import weights
from shared.context import DemoContext, load_pipeline
from shared.errors import UserInputError, WeightsUnavailable
from tests.conftest import free_port

EXAMPLES = [{"string": "abc", "label": "+"}, {"string": "b", "label": "-"}]
PRAX = ("prax", "tiny-pragmatic")
CONFIG = {"demos": {"prax": {"weights": {"tiny-pragmatic": {"num_replicas": 2}}}}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """`ray start --head --block` in its own process group (stopping it stops every process of this cluster), with
    Ray's token authentication as the README tells operators (RAY_AUTH_MODE=token for the head and the hub)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("RAY_AUTH_MODE", "token")
    # The cluster's token, for the head and the hub: a fresh machine has no ~/.ray/auth_token, and `ray start --head`
    # makes none (seen here: every driver refused with "no authentication token was found").
    mp.setenv("RAY_AUTH_TOKEN", secrets.token_hex(32))
    port = free_port()
    temp = tmp_path_factory.mktemp("ray")
    ray_cli = Path(sys.executable).with_name("ray")
    head = subprocess.Popen(
        [str(ray_cli), "start", "--head", "--block", f"--port={port}", "--num-cpus=4", "--include-dashboard=false",
         "--disable-usage-stats", "--object-store-memory=150000000", f"--temp-dir={temp}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    address = f"127.0.0.1:{port}"
    yield address
    import ray

    ray.shutdown()
    processes = [psutil.Process(head.pid), *psutil.Process(head.pid).children(recursive=True)]
    for process in processes:  # the cluster is the test's own: no graceful replica shutdown to wait for
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    psutil.wait_procs(processes, timeout=30)
    mp.undo()


@pytest.fixture(scope="module")
def pool(cluster, tiny_root, tmp_path_factory):
    """A RayPool joined to the cluster, with the tiny checkpoints and an empty, offline HF cache (the replicas get
    these variables from the hub, as on a real cluster)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_HUB_CACHE", str(tmp_path_factory.mktemp("empty-hf-cache")))
    mp.setenv("DEMOHUB_CHECKPOINTS", str(tiny_root))
    from shared.ray_pool import RayPool, ServeConfig

    deadline = time.monotonic() + 60
    while True:  # the head takes a few seconds to accept drivers
        try:
            pool = RayPool(DEMOS, ServeConfig.parse(CONFIG, DEMOS), address=cluster)
            break
        except ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    pool.deploy([PRAX, ("tag2text", "tag2text-swin-14m")])
    yield pool
    pool.close()
    mp.undo()


def context(pool, demo_id: str) -> DemoContext:
    return ServeSettings().context(get_demo(demo_id), pool)


@functools.cache
def local(demo_id: str, name: str):
    demo = get_demo(demo_id)
    return load_pipeline(demo, demo.weight_set(name))


def test_joining_a_cluster_leaves_it_running(pool):
    import ray

    assert pool.owns_cluster is False and ray.is_initialized()


def test_prax_gives_the_in_process_answer_and_streams_progress(pool):
    ctx = context(pool, "prax")
    steps = []
    remote = prax_actions.synthesize(ctx, EXAMPLES, PRAX[1], callback=lambda step, total: steps.append((step, total)))
    expected = prax_actions.synthesize(DemoContext(get_demo("prax")), EXAMPLES, PRAX[1])
    assert remote.to_dict() == expected.to_dict()
    assert steps and steps[-1][0] == steps[-1][1]  # the page's progress bar reaches its end
    assert type(remote) is type(expected)


def test_molm3d_streams_its_answer_so_far_and_gives_the_in_process_answer(pool):
    """A pipeline's ``on_text`` (3D-MoLM's answer as it grows) comes back from the replica as it runs."""
    texts = []
    request = dict(task="logp", decoding="fast", max_new_tokens=8, min_new_tokens=8)
    with context(pool, "molm3d").compute() as pipe:
        remote = pipe("CC(=O)Oc1ccccc1C(=O)O", on_text=texts.append, **request)
    expected = local("molm3d", "generalist")("CC(=O)Oc1ccccc1C(=O)O", **request)
    assert remote.to_dict() == expected.to_dict()
    assert len(texts) == 2 and all(expected.text.startswith(t) for t in texts)


def test_tag2text_reads_the_uploaded_file_and_keeps_its_name(pool, tmp_path):
    upload = tmp_path / "red square.png"
    Image.new("RGB", (90, 70), (200, 30, 30)).save(upload)
    noise = tmp_path / "noise.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (80, 100, 3), dtype=np.uint8)).save(noise)
    steps = []
    remote = tag2text_actions.tag_batch(context(pool, "tag2text"), [str(upload), str(noise)],
                                        callback=lambda step, total: steps.append((step, total)))
    expected = local("tag2text", "tag2text-swin-14m")([str(upload), str(noise)])
    assert remote.to_dict() == expected.to_dict()
    assert [r.name for r in remote.results] == ["red square.png", "noise.png"]
    assert steps and steps[-1][0] == steps[-1][1]


def test_a_caller_inside_an_asyncio_loop_is_answered(pool):
    """Serve's blocking API refuses a thread that runs an event loop (a notebook cell, an async handler, Playwright's
    sync API in this test session); the call then runs in a worker thread."""
    pipe = context(pool, "prax").pipeline(PRAX[1])

    async def inside_a_loop():
        return pipe(EXAMPLES, k=3, seed=0).to_dict(), pipe.name

    with ThreadPoolExecutor(1) as executor:  # a thread of its own: this one may run Playwright's loop already
        answer, name = executor.submit(asyncio.run, inside_a_loop()).result()
    assert answer == local(*PRAX)(EXAMPLES, k=3, seed=0).to_dict() and name == local(*PRAX).name


def test_bad_input_comes_back_as_the_in_process_sentence(pool):
    pipe = context(pool, "prax").pipeline(PRAX[1])
    with pytest.raises(UserInputError) as remote:
        pipe([{"string": "x" * 5000, "label": "+"}])
    with pytest.raises(UserInputError) as in_process:
        local(*PRAX)([{"string": "x" * 5000, "label": "+"}])
    assert str(remote.value) == str(in_process.value) and remote.value.argument == in_process.value.argument
    assert "Traceback" not in str(remote.value) and "ray" not in str(remote.value).lower()
    # and the next request works
    assert pipe(EXAMPLES, k=3).candidates


def test_missing_weights_on_the_replicas_node_is_the_in_process_sentence(pool):
    """A weight set deployed without its files (here: a Hub set, offline, empty cache) answers with the sentence
    weights.resolve gives in process, and Serve keeps the replica (no restart loop)."""
    demo = get_demo("prax")
    ws = demo.weight_set("human-data-ft-listener")
    with pytest.raises(WeightsUnavailable) as in_process:
        weights.resolve(demo.id, ws, allow_download=False)
    pipe = pool.get((demo.id, ws.name))
    with pytest.raises(WeightsUnavailable) as remote:
        pipe(EXAMPLES)
    assert str(remote.value) == str(in_process.value)
    from ray import serve

    assert serve.status().applications[pool.app_name((demo.id, ws.name))].status == "RUNNING"


def test_sixteen_concurrent_calls_on_two_replicas_are_all_answered(pool):
    ctx = context(pool, "prax")
    assert ctx.concurrency == 4  # the hub's queue sends the deployment what its two replicas accept at once
    inputs = [[{"string": "a" * (i % 4 + 1), "label": "+"}, {"string": "b", "label": "-"}] for i in range(16)]
    with ThreadPoolExecutor(16) as executor:
        answers = list(executor.map(lambda ex: prax_actions.synthesize(ctx, ex, PRAX[1]).to_dict(), inputs))
    pipe = local(*PRAX)
    assert answers == [pipe(ex, k=prax_actions.SHOWN, num_samples=prax_actions.PAGE_SAMPLES,
                            seed=prax_actions.SEED).to_dict() for ex in inputs]


def replicas(app: str) -> list[str]:
    import ray

    return [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
            if a["name"].startswith(f"SERVE_REPLICA::{app}#")]


def kill(replica: str) -> None:
    import ray

    ray.kill(ray.get_actor(replica, namespace="serve"), no_restart=True)  # Serve, not Ray, starts its replacement


def wait_healthy(app: str, deployment: str, replica_count: int) -> None:
    from ray import serve

    deadline = time.monotonic() + 120
    while True:
        status = serve.status().applications[app].deployments[deployment]
        if (status.status == "HEALTHY" and status.replica_states.get("RUNNING") == replica_count
                and len(replicas(app)) == replica_count):  # Serve's status can run ahead of Ray's actor list
            return
        assert time.monotonic() < deadline, status
        time.sleep(1)


def test_a_replica_killed_during_a_burst_loses_no_request(pool):
    ctx = context(pool, "prax")
    app = pool.app_name(PRAX)
    inputs = [[{"string": "ab" * (i % 3 + 1), "label": "+"}, {"string": "c", "label": "-"}] for i in range(16)]
    with ThreadPoolExecutor(16) as executor:
        futures = [executor.submit(prax_actions.synthesize, ctx, ex, PRAX[1], callback=lambda step, total: None)
                   for ex in inputs]
        deadline = time.monotonic() + 300
        while sum(f.done() for f in futures) < 2:  # the burst is running on both replicas
            assert time.monotonic() < deadline, "no call of the burst finished within 300 s"
            time.sleep(0.05)
        running = replicas(app)
        assert len(running) == 2
        in_flight = sum(not f.done() for f in futures)
        kill(running[0])
        answers = [f.result(timeout=300).to_dict() for f in futures]
    assert in_flight >= 8, f"only {in_flight} calls were in flight at the kill"  # 14 of 16 as a rule
    pipe = local(*PRAX)
    assert answers == [pipe(ex, k=prax_actions.SHOWN, num_samples=prax_actions.PAGE_SAMPLES,
                            seed=prax_actions.SEED).to_dict() for ex in inputs]
    wait_healthy(app, f"{PRAX[0]}-{PRAX[1]}", 2)  # Serve replaced the killed replica


def test_a_call_whose_replica_dies_after_it_began_answering_is_retried(pool, caplog):
    """Serve re-routes a call that has no reply yet by itself; once the replica has streamed progress, the retry is
    ours. Three specs of 350 samples are two generate() calls: the replicas die right after the first one's progress,
    while the second still runs."""
    app = pool.app_name(PRAX)
    specs = [[{"string": s, "label": "+"}, {"string": "c", "label": "-"}] for s in ("a", "ab", "b")]
    killed = []
    wait_healthy(app, f"{PRAX[0]}-{PRAX[1]}", 2)  # both replicas up and listed (seen once: the list still had one)

    def kill_on_first_progress(step, total):
        if not killed:
            killed.extend(replicas(app))
            for replica in killed:
                kill(replica)

    pipe = context(pool, "prax").pipeline(PRAX[1])
    answers = pipe.synthesize_batch(specs, k=3, num_samples=350, seed=0, callback=kill_on_first_progress)
    assert len(killed) == 2
    assert "a replica died during a call" in caplog.text
    assert [a.to_dict() for a in answers] == [
        a.to_dict() for a in local(*PRAX).synthesize_batch(specs, k=3, num_samples=350, seed=0)]
    wait_healthy(app, f"{PRAX[0]}-{PRAX[1]}", 2)


def test_serve_status_shows_every_deployment_healthy(pool):
    from ray import serve

    apps = serve.status().applications
    for key in (PRAX, ("tag2text", "tag2text-swin-14m")):
        app = apps[pool.app_name(key)]
        assert app.status == "RUNNING"
        assert [d.status for d in app.deployments.values()] == ["HEALTHY"]
    stats = pool.stats().as_dict()  # what `demohub stats` shows an operator
    assert stats["backend"] == "ray" and stats["applications"][pool.app_name(PRAX)] == "RUNNING"


def test_remote_attributes_read_like_local_ones(pool):
    pipe = context(pool, "tag2text").pipeline()
    assert pipe.config == local("tag2text", "tag2text-swin-14m").config
    with pytest.raises(AttributeError):
        pipe._private_thing  # noqa: B018
