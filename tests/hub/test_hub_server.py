"""The local Hub stand-in (tests/fixtures/hub_server.py), driven through the real huggingface_hub client."""

import hashlib
import os
from pathlib import Path

import httpx2
import pytest
from huggingface_hub import CommitOperationAdd, HfApi, constants, hf_hub_download, snapshot_download
from huggingface_hub.errors import (
    HfHubHTTPError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from tests.fixtures.hub_server import HubServer, git_blob_sha1

REPO = "owner/name"
V1 = {
    "config.json": b'{"hidden": 8}',
    "model.safetensors": os.urandom(4096),
    "sub/dir/vocab.txt": b"a\nb\nc\n",
    "extra/optimizer.pt": os.urandom(512),
    "README.md": b"# v1\n",
}
V2 = {**V1, "config.json": b'{"hidden": 16}', "README.md": b"# v2\n"}
ALLOWED = {"config.json", "model.safetensors", "sub/dir/vocab.txt"}


@pytest.fixture
def hub(monkeypatch):
    with HubServer() as server:
        server.patch_client(monkeypatch)
        yield server
        assert server.errors == []


def files_under(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def incomplete_files(cache: Path) -> list[Path]:
    return [p for p in cache.rglob("*") if p.name.endswith(".incomplete")]


def test_snapshot_download_pins_revision_filters_files_and_works_offline(hub, tmp_path):
    sha1 = hub.add_repo(REPO, V1)
    sha2 = hub.add_repo(REPO, V2)
    assert sha1 != sha2 and hub.repo_sha(REPO) == sha2

    path = snapshot_download(
        REPO, revision=sha1, allow_patterns=["*.json", "*.safetensors", "sub/*"], cache_dir=tmp_path, endpoint=hub.url
    )

    assert Path(path) == tmp_path / "models--owner--name" / "snapshots" / sha1
    assert files_under(Path(path)) == {name: V1[name] for name in ALLOWED}
    assert sorted(hub.downloads(REPO)) == sorted(ALLOWED)
    blobs = {p.name for p in (tmp_path / "models--owner--name" / "blobs").iterdir()}
    assert hashlib.sha256(V1["model.safetensors"]).hexdigest() in blobs  # LFS: sha256 etag
    assert git_blob_sha1(V1["config.json"]) in blobs  # regular file: git blob sha1 etag
    assert ("GET", f"/api/models/{REPO}/tree/{sha1}?recursive=true&expand=false") in hub.requests

    hub.stop()
    offline = snapshot_download(
        REPO,
        revision=sha1,
        allow_patterns=["*.json", "*.safetensors", "sub/*"],
        cache_dir=tmp_path,
        endpoint=hub.url,
        local_files_only=True,
    )
    assert offline == path
    with pytest.raises(httpx2.ConnectError):
        HfApi(endpoint=hub.url).model_info(REPO)


def test_hf_hub_download_one_file_and_hub_errors(hub, tmp_path):
    sha = hub.add_repo(REPO, V1)
    path = hf_hub_download(REPO, "sub/dir/vocab.txt", cache_dir=tmp_path, endpoint=hub.url)
    assert Path(path).read_bytes() == V1["sub/dir/vocab.txt"]
    assert Path(path).parent.parent.parent.name == sha
    assert (tmp_path / "models--owner--name" / "refs" / "main").read_text() == sha
    assert hub.downloads() == ["sub/dir/vocab.txt"]

    with pytest.raises(RemoteEntryNotFoundError):
        hf_hub_download(REPO, "missing.bin", cache_dir=tmp_path, endpoint=hub.url)
    assert (tmp_path / "models--owner--name" / ".no_exist" / sha / "missing.bin").exists()
    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(REPO, "config.json", revision="v9", cache_dir=tmp_path, endpoint=hub.url)
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download("owner/nope", "config.json", cache_dir=tmp_path, endpoint=hub.url)
    with pytest.raises(RepositoryNotFoundError):
        HfApi(endpoint=hub.url).model_info("owner/nope")


@pytest.mark.filterwarnings("ignore:Not enough free disk space")
def test_model_info_sizes_and_reported_size_override(hub, tmp_path):
    sha = hub.add_repo(REPO, V1)
    api = HfApi(endpoint=hub.url)
    info = api.model_info(REPO, revision="main", files_metadata=True)
    assert info.sha == sha
    siblings = {s.rfilename: s for s in info.siblings}
    assert {name: s.size for name, s in siblings.items()} == {name: len(data) for name, data in V1.items()}
    assert siblings["config.json"].lfs is None and siblings["config.json"].blob_id == git_blob_sha1(V1["config.json"])
    weights = siblings["model.safetensors"]
    assert weights.lfs.sha256 == hashlib.sha256(V1["model.safetensors"]).hexdigest()
    assert siblings["extra/optimizer.pt"].lfs is not None  # weight suffix => LFS even when small

    ten_tb = 10 * 10**12
    hub.report_size(REPO, "model.safetensors", ten_tb)
    claimed = {s.rfilename: s for s in api.model_info(REPO, files_metadata=True).siblings}["model.safetensors"]
    assert claimed.size == claimed.lfs.size == ten_tb
    tree = {f.path: f.size for f in api.list_repo_tree(REPO, recursive=True) if hasattr(f, "size")}
    assert tree["model.safetensors"] == ten_tb
    path = hf_hub_download(REPO, "model.safetensors", cache_dir=tmp_path, endpoint=hub.url)
    assert Path(path).read_bytes() == V1["model.safetensors"]  # the content stays small

    hub.report_size(REPO, "config.json", ten_tb, head=True)  # HEAD claims it too: the client refuses
    with pytest.raises(ValueError, match="too large"):
        hf_hub_download(REPO, "config.json", cache_dir=tmp_path, endpoint=hub.url)
    assert "config.json" not in hub.downloads()


def test_server_error_on_a_file_raises_and_a_retry_completes(hub, tmp_path):
    hub.add_repo(REPO, V1)
    hub.fail("vocab.txt", status=500, method="GET")
    with pytest.raises(HfHubHTTPError) as caught:
        snapshot_download(REPO, cache_dir=tmp_path, endpoint=hub.url)
    assert caught.value.response.status_code == 500
    assert incomplete_files(tmp_path) == []

    hub.reset_faults()
    path = snapshot_download(REPO, cache_dir=tmp_path, endpoint=hub.url)
    assert files_under(Path(path)) == V1
    assert incomplete_files(tmp_path) == []


def test_truncated_file_raises_and_a_retry_completes(hub, tmp_path):
    hub.add_repo(REPO, V1)
    hub.truncate("model.safetensors", 100)
    with pytest.raises(OSError, match="Consistency check failed"):
        snapshot_download(REPO, cache_dir=tmp_path, endpoint=hub.url)
    snapshot = tmp_path / "models--owner--name" / "snapshots" / hub.repo_sha(REPO)
    assert not (snapshot / "model.safetensors").exists()
    assert incomplete_files(tmp_path) == []

    hub.reset_faults()
    path = snapshot_download(REPO, cache_dir=tmp_path, endpoint=hub.url)
    assert files_under(Path(path)) == V1
    assert incomplete_files(tmp_path) == []


def test_connection_cut_mid_file_is_resumed_with_a_range_request(hub, tmp_path):
    chunk = constants.DOWNLOAD_CHUNK_SIZE  # the client writes (and can resume) whole chunks only
    weights = os.urandom(chunk + 200_000)
    hub.add_repo(REPO, {"weights.bin": weights})
    hub.truncate("weights.bin", chunk + 100_000, keep_length=True)
    path = hf_hub_download(REPO, "weights.bin", cache_dir=tmp_path, endpoint=hub.url)
    assert Path(path).read_bytes() == weights
    gets = [r for r in hub.request_log if r.method == "GET" and "weights.bin" in r.path]
    assert [(r.headers.get("range"), r.status) for r in gets] == [(None, 200), (f"bytes={chunk}-", 206)]


def test_slow_hub_makes_the_client_time_out(hub, tmp_path, monkeypatch):
    hub.add_repo(REPO, V1)
    hub.delay(f"/api/models/{REPO}", 2.0)
    with pytest.raises(httpx2.TimeoutException):
        HfApi(endpoint=hub.url).model_info(REPO, timeout=0.2)

    # Downloads retry a timed-out GET 5 times (1 s apart) before giving up.
    monkeypatch.setattr(constants, "HF_HUB_DOWNLOAD_TIMEOUT", 0.1)
    hub.delay("config.json", 1.0, method="GET", times=None)
    with pytest.raises(httpx2.ReadTimeout):
        hf_hub_download(REPO, "config.json", cache_dir=tmp_path, endpoint=hub.url)
    assert hub.requests.count(("GET", f"/{REPO}/resolve/main/config.json")) == 6
    assert incomplete_files(tmp_path) == []


def test_wrong_sha_is_detectable(hub, tmp_path):
    sha = hub.add_repo(REPO, V1)
    hub.wrong_sha(REPO)
    reported = HfApi(endpoint=hub.url).model_info(REPO).sha
    assert reported != sha
    path = snapshot_download(REPO, allow_patterns=["config.json"], cache_dir=tmp_path, endpoint=hub.url)
    assert Path(path).name == reported and not Path(path).exists()  # files landed under X-Repo-Commit instead
    assert (tmp_path / "models--owner--name" / "snapshots" / sha / "config.json").read_bytes() == V1["config.json"]

    hub.wrong_sha(REPO, resolvable=False)
    with pytest.raises(RevisionNotFoundError):
        snapshot_download(REPO, cache_dir=tmp_path / "other", endpoint=hub.url)


def test_space_upload_through_create_repo_and_create_commit(hub, tmp_path):
    api = HfApi(endpoint=hub.url, token="hf_test")
    url = api.create_repo("me/space", repo_type="space", space_sdk="gradio", exist_ok=True)
    assert (url.repo_id, url.repo_type) == ("me/space", "space")
    api.create_repo("me/space", repo_type="space", space_sdk="gradio", exist_ok=True)  # 409, accepted
    with pytest.raises(HfHubHTTPError) as caught:
        api.create_repo("me/space", repo_type="space", space_sdk="gradio")
    assert caught.value.response.status_code == 409
    assert [(r["repo_id"], r["repo_type"], r["sdk"]) for r in hub.created_repos] == [("me/space", "space", "gradio")]

    files = {
        "README.md": b"---\nsdk: gradio\n---\n",
        "app.py": b"import gradio\n",
        "weights/big.dat": os.urandom(10_500_000),
    }
    operations = [CommitOperationAdd(path, data) for path, data in files.items()]
    info = api.create_commit("me/space", operations, commit_message="Deploy", repo_type="space")

    [commit] = hub.commits
    assert (commit.repo_id, commit.repo_type, commit.message, commit.sha) == ("me/space", "space", "Deploy", info.oid)
    assert commit.files == files
    big_oid = hashlib.sha256(files["weights/big.dat"]).hexdigest()
    assert ("PUT", f"/lfs-upload/{big_oid}") in hub.requests  # > 10 MB went through the LFS batch API
    assert ("POST", "/spaces/me/space.git/info/lfs/objects/batch") in hub.requests

    assert api.space_info("me/space").sha == info.oid
    assert hub.repo_files("me/space", repo_type="space") == files
    path = hf_hub_download("me/space", "weights/big.dat", repo_type="space", cache_dir=tmp_path, endpoint=hub.url)
    assert Path(path).read_bytes() == files["weights/big.dat"]


def test_patch_client_points_default_endpoint_and_faults_count_down(hub, tmp_path):
    import huggingface_hub

    sha = hub.add_repo(REPO, V1)
    assert huggingface_hub.model_info(REPO).sha == sha  # module-level API, no endpoint argument
    assert Path(hf_hub_download(REPO, "config.json", cache_dir=tmp_path)).read_bytes() == V1["config.json"]

    hub.fail(f"/api/models/{REPO}", status=503, times=2)
    for _ in range(2):
        with pytest.raises(HfHubHTTPError) as caught:
            huggingface_hub.model_info(REPO)
        assert caught.value.response.status_code == 503
    assert huggingface_hub.model_info(REPO).sha == sha
    hub.fail(status=404, error_code="RepoNotFound", method="GET")
    with pytest.raises(RepositoryNotFoundError):
        huggingface_hub.model_info(REPO)
    assert hub.requests[-4:] == [("GET", f"/api/models/{REPO}")] * 4
