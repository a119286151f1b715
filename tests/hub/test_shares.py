"""apps.shares: who a client is, and what one client may hold (uploads, login tries), on a clock the test moves."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from apps.serving import client_jobs, job_client
from apps.shares import LOGIN_WAIT, UPLOADS_FULL, Shares, client_of, cookie_token, trusted_proxies


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_client_is_its_login_else_its_address():
    app = SimpleNamespace(tokens={"tok-1": "ada"}, cookie_id="abc")
    cookie = (b"cookie", b"other=1; access-token-unsecure-abc=tok-1")
    assert client_of({"app": app, "headers": [cookie], "client": ("198.51.100.7", 1)}) == "user:ada"
    assert client_of({"app": app, "headers": [(b"cookie", b"access-token-abc=forged")],
                      "client": ("198.51.100.7", 1)}) == "addr:198.51.100.7", "an unknown token is no login"
    assert client_of({"headers": [], "client": ("198.51.100.7", 1)}) == "addr:198.51.100.7"
    assert cookie_token({b"cookie": b'bad"cookie;;='}, "abc") is None


def test_trusted_proxies_read_as_uvicorn_reads_forwarded_allow_ips():
    trusted = trusted_proxies("10.0.0.1, 10.1.0.0/16,not-an-ip")
    assert trusted("10.0.0.1") and trusted("10.1.200.3")
    assert not trusted("10.0.0.2") and not trusted("127.0.0.1") and not trusted("unknown")
    assert not trusted_proxies("")("127.0.0.1"), "nobody is trusted by default"
    assert trusted_proxies("*")("203.0.113.5")


def test_an_upload_quota_per_client_with_a_shorter_retention_without_a_login(tmp_path):
    clock = Clock()
    shares = Shares(client_upload_quota=3_000, anonymous_upload_retention=60, upload_retention=600, clock=clock)
    files = []
    for i in range(3):
        path = tmp_path / f"upload-{i}.bin"
        path.write_bytes(b"x" * 1_000)
        files.append(str(path))
    shares.record_upload("addr:198.51.100.1", files[:2])
    shares.record_upload("user:ada", files[2:])
    assert shares.stored("addr:198.51.100.1") == 2_000
    assert shares.upload_refusal("addr:198.51.100.1", 1_000) is None, "up to the quota"
    refusal = shares.upload_refusal("addr:198.51.100.1", 1_001)
    assert refusal.status == 429 and refusal.retry_after == 60
    assert refusal.sentence == UPLOADS_FULL.format(stored="2 KB", size="1 KB", limit="3 KB", retention="60 seconds",
                                                   login=", or log in")
    assert shares.upload_refusal("addr:198.51.100.2", 3_000) is None, "another client is untouched"
    clock.now += 30
    assert shares.upload_refusal("addr:198.51.100.1", 1_001).retry_after == 30
    clock.now += 31
    assert shares.sweep() == 2, "the anonymous client's uploads are deleted after 60 s"
    assert not any(Path(f).exists() for f in files[:2])
    assert shares.stored("addr:198.51.100.1") == 0 and shares.stored("user:ada") == 1_000, "a login keeps its own"
    (tmp_path / "upload-2.bin").unlink()
    assert shares.stored("user:ada") == 0, "a file deleted by anyone (Gradio's sweeper) no longer counts"


def test_a_file_uploaded_again_belongs_to_its_latest_upload(tmp_path):
    """Gradio keeps one file per content: the same bytes uploaded later (by anyone) are the same path, and the older
    record's retention must not delete what was just uploaded."""
    clock = Clock()
    shares = Shares(client_upload_quota=3_000, anonymous_upload_retention=60, upload_retention=600, clock=clock)
    path = tmp_path / "beach.png"
    path.write_bytes(b"x" * 1_000)
    shares.record_upload("addr:198.51.100.1", [str(path)])
    clock.now += 50
    shares.record_upload("addr:198.51.100.2", [str(path)])  # the same example image, another visitor
    clock.now += 20
    assert shares.sweep() == 0 and path.exists(), "deleted 20 s after the second visitor uploaded it"
    assert shares.stored("addr:198.51.100.1") == 0 and shares.stored("addr:198.51.100.2") == 1_000
    clock.now += 41
    assert shares.sweep() == 1 and not path.exists(), "deleted once the latest upload's retention passed"


def test_wrong_passwords_slow_their_client_down_but_never_the_real_user_elsewhere():
    clock = Clock()
    shares = Shares(login_attempts=3, clock=clock)
    guesser, user = "addr:203.0.113.66", "ada"
    for _ in range(3):
        assert shares.login_refusal(guesser, user) is None
        shares.login_result(guesser, user, ok=False)
    waits = []
    for _ in range(5):  # each try past the free ones waits twice as long as the one before
        refusal = shares.login_refusal(guesser, user)
        waits.append(refusal.retry_after)
        assert refusal.status == 429 and refusal.sentence == LOGIN_WAIT.format(seconds=refusal.retry_after)
        clock.now += refusal.retry_after
        assert shares.login_refusal(guesser, user) is None
        shares.login_result(guesser, user, ok=False)
    assert waits == [1, 2, 4, 8, 16]
    assert shares.login_refusal("addr:198.51.100.5", user) is None, "the real user, from elsewhere, at once"
    shares.login_result("addr:198.51.100.5", user, ok=True)
    clock.now += 901
    assert shares.login_refusal(guesser, user) is None, "forgotten after 15 minutes"


def test_many_guessers_on_one_name_slow_every_guesser_but_not_a_client_without_a_wrong_password():
    clock = Clock()
    shares = Shares(login_attempts=2, clock=clock)
    for i in range(8):  # 8 addresses, one wrong password each: under each client's own free tries
        shares.login_result(f"addr:203.0.113.{i}", "ada", ok=False)
    assert shares.login_refusal("addr:203.0.113.0", "ada") is not None, "the name's count slows a guesser"
    assert shares.login_refusal("addr:203.0.113.0", "alan") is None, "another name is not slowed"
    assert shares.login_refusal("addr:198.51.100.5", "ada") is None, "a client with no wrong password logs in at once"


def test_jobs_count_per_client_across_its_sessions():
    def event(host, username=None, caller=None):
        headers = {"x-demohub-mcp-caller": caller} if caller else {}
        return SimpleNamespace(session_hash="s", username=username,
                               request=SimpleNamespace(client=SimpleNamespace(host=host), headers=headers))

    queue = SimpleNamespace(
        event_queue_per_concurrency_id={"prax": SimpleNamespace(queue=[event("198.51.100.1"), event("198.51.100.1"),
                                                                       event("198.51.100.2", "ada")])},
        active_jobs=[[event("127.0.0.1", "demohub-mcp-loopback", caller="addr:198.51.100.1")], None])
    assert job_client(event("198.51.100.1").request, None) == "addr:198.51.100.1"
    assert client_jobs(queue, "addr:198.51.100.1") == 3, "two sessions' events and its agent's tool call"
    assert client_jobs(queue, "user:ada") == 1 and client_jobs(queue, "addr:198.51.100.2") == 0
