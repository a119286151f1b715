"""apps.settings: the public-deployment defaults, how `auto` decides downloads, and the flags/variables behind them."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import apps
from apps.settings import ServeSettings, add_arguments, from_args, from_env, parse_auth, parse_size
from shared.errors import UserInputError


@pytest.mark.parametrize(("host", "share", "space", "allowed"), [
    ("127.0.0.1", False, False, True),
    ("localhost", False, False, True),
    ("::1", False, False, True),
    ("127.0.0.2", False, False, True),
    ("0.0.0.0", False, False, False),
    ("192.168.1.20", False, False, False),
    ("my-hub.example.org", False, False, False),
    ("127.0.0.1", True, False, False),  # --share opens a public link
    ("127.0.0.1", False, True, False),  # a Space serves the public
])
def test_auto_downloads_only_for_a_private_local_hub(monkeypatch, host, share, space, allowed):
    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.delenv("SYSTEM", raising=False)
    if space:
        monkeypatch.setenv("SPACE_ID", "lab/hub")
    assert ServeSettings(host=host, share=share).downloads_allowed is allowed
    assert ServeSettings(host=host, share=share, downloads="on").downloads_allowed
    assert not ServeSettings(host="127.0.0.1", downloads="off").downloads_allowed


def test_safe_defaults():
    s = ServeSettings()
    assert (s.downloads, s.max_file_size, s.queue_size, s.session_jobs, s.monitoring, s.allow_url_inputs) == (
        "auto", 25_000_000, 64, 4, False, False)
    assert s.auth == () and s.delete_cache_pair == (60, 3600)
    assert ServeSettings(delete_cache=0).delete_cache_pair is None
    assert ServeSettings(delete_cache=2).delete_cache_pair == (1, 2)


@pytest.mark.parametrize(("text", "size"), [("25MB", 25_000_000), ("25 mb", 25_000_000), ("500kb", 500_000),
                                            ("1.5GB", 1_500_000_000), ("1000", 1000), (4096, 4096)])
def test_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "big", "25 MiB", "-1MB"])
def test_bad_sizes_say_how_to_write_them(text):
    with pytest.raises(UserInputError, match="write it like 25MB"):
        parse_size(text)


def test_auth_inline_and_from_a_file(tmp_path):
    assert parse_auth("ada:pw1,alan:p:w2") == (("ada", "pw1"), ("alan", "p:w2"))
    logins = tmp_path / "logins"
    logins.write_text("# lab\nada:pw1\n\n  grace:pw3  \n")
    assert parse_auth(str(logins)) == (("ada", "pw1"), ("grace", "pw3"))
    assert parse_auth("") == ()
    for bad in ("ada", "ada:", ":pw"):
        with pytest.raises(UserInputError, match="user:password"):
            parse_auth(bad)


def test_flags_read_their_variables_and_flags_win(monkeypatch):
    monkeypatch.setenv("DEMOHUB_QUEUE_SIZE", "16")
    monkeypatch.setenv("DEMOHUB_DOWNLOADS", "off")
    monkeypatch.setenv("DEMOHUB_MAX_FILE_SIZE", "5MB")
    monkeypatch.setenv("DEMOHUB_AUTH", "ada:pw")
    monkeypatch.setenv("DEMOHUB_MONITORING", "1")
    env = from_env()
    assert (env.queue_size, env.downloads, env.max_file_size, env.auth, env.monitoring) == (
        16, "off", 5_000_000, (("ada", "pw"),), True)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = from_args(parser.parse_args(["--queue-size", "8", "--downloads", "on", "--session-jobs", "2",
                                         "--allow-url-inputs", "--delete-cache", "0", "--host", "0.0.0.0"]))
    assert (flags.queue_size, flags.downloads, flags.session_jobs, flags.allow_url_inputs, flags.delete_cache,
            flags.host) == (8, "on", 2, True, 0, "0.0.0.0")


def test_impossible_settings_are_refused():
    with pytest.raises(UserInputError, match="--downloads must be one of auto, on, off"):
        ServeSettings(downloads="sometimes")
    with pytest.raises(UserInputError, match="queue-size must be at least 1"):
        ServeSettings(queue_size=0)
    with pytest.raises(UserInputError, match="--max-connections-per-address must be at least 1"):
        ServeSettings(max_connections_per_address=0)
    with pytest.raises(UserInputError, match="--read-timeout must be more than 0"):
        ServeSettings(read_timeout=0)


def test_request_budgets_default_and_read_their_flags_and_variables(monkeypatch):
    s = ServeSettings()
    assert (s.max_request_size, s.read_timeout, s.max_connections, s.max_connections_per_address) == (
        1_000_000, 10.0, 1000, 128)
    monkeypatch.setenv("DEMOHUB_MAX_REQUEST_SIZE", "200KB")
    monkeypatch.setenv("DEMOHUB_READ_TIMEOUT", "4.5")
    env = from_env()
    assert (env.max_request_size, env.read_timeout) == (200_000, 4.5)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = from_args(parser.parse_args(["--max-request-size", "2MB", "--read-timeout", "30", "--max-connections",
                                         "50", "--max-connections-per-address", "5"]))
    assert (flags.max_request_size, flags.read_timeout, flags.max_connections,
            flags.max_connections_per_address) == (2_000_000, 30.0, 50, 5)


def test_mcp_is_on_by_default_and_off_by_flag_or_variable(monkeypatch):
    monkeypatch.delenv("DEMOHUB_MCP", raising=False)
    assert ServeSettings().mcp and from_env().mcp
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert from_args(parser.parse_args([])).mcp
    assert not from_args(parser.parse_args(["--no-mcp"])).mcp
    for off in ("0", "false", "no", "off"):
        monkeypatch.setenv("DEMOHUB_MCP", off)
        assert not from_env().mcp, off
    monkeypatch.setenv("DEMOHUB_MCP", "1")
    assert from_env().mcp


def test_serve_yaml_hub_section_lists_the_defaults_and_yields_to_flags_and_variables(tmp_path, monkeypatch):
    """serve.yaml's hub section names the share figures at their defaults (so the file reads true); a hub started
    with a serve config takes from it what no flag or DEMOHUB_* variable sets; an unknown key is a sentence."""
    from apps.settings import HUB_KEYS, hub_section

    shipped = hub_section(Path(__file__).resolve().parents[2] / "serve.yaml")
    defaults = ServeSettings()
    assert shipped and {k: getattr(defaults, k) for k in shipped} == shipped
    assert set(shipped) >= {"client_jobs", "client_streams", "client_upload_quota", "min_body_rate", "login_attempts",
                            "anonymous_upload_retention", "forwarded_allow_ips", "stream_idle", "stream_timeout"}
    config = tmp_path / "serve.yaml"
    config.write_text("hub:\n  client_jobs: 3\n  client_upload_quota: 5MB\n  login_attempts: 9\n")
    for name in HUB_KEYS:
        monkeypatch.delenv(f"DEMOHUB_{name.upper()}", raising=False)
    monkeypatch.setenv("DEMOHUB_LOGIN_ATTEMPTS", "2")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    settings = from_args(parser.parse_args(["--serve-config", str(config), "--client-upload-quota", "7MB"]))
    assert (settings.client_jobs, settings.client_upload_quota, settings.login_attempts) == (3, 7_000_000, 2)
    config.write_text("hub:\n  client_job: 3\n")
    with pytest.raises(UserInputError, match="hub: unknown key 'client_job'; the keys are"):
        from_args(parser.parse_args(["--serve-config", str(config)]))


def test_a_space_believes_its_platforms_proxy_and_elsewhere_nobody_by_default(monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.delenv("SYSTEM", raising=False)
    assert ServeSettings().trusted_proxies == ""
    assert ServeSettings(forwarded_allow_ips="10.0.0.1").trusted_proxies == "10.0.0.1"
    monkeypatch.setenv("SPACE_ID", "lab/demo")
    assert ServeSettings().trusted_proxies == "*", "every visitor of a Space arrives through its proxy"
    assert ServeSettings(forwarded_allow_ips="10.0.0.1").trusted_proxies == "10.0.0.1"


@pytest.mark.parametrize("url", ["https://demos.example.org", "https://demos.example.org/lab/", "http://10.0.0.5:8080"])
def test_a_public_url_is_the_address_of_every_embed(url):
    settings = ServeSettings(public_url=url)
    assert settings.public_address == url.rstrip("/")
    assert settings.context(apps.get_demo("prax")).public_url == url.rstrip("/")


@pytest.mark.parametrize("url", ["demos.example.org", "javascript:alert(1)", "https://x.org/<script>", "ftp://x.org",
                                 "https://x.org/?q=1", "https://"])
def test_a_public_url_that_is_no_web_address_is_refused(url):
    with pytest.raises(UserInputError, match="--public-url must be a web address"):
        ServeSettings(public_url=url)


def test_a_space_knows_its_public_address(monkeypatch):
    assert ServeSettings().public_address is None
    monkeypatch.setenv("SPACE_ID", "lab/prax")
    monkeypatch.setenv("SPACE_HOST", "lab-prax.hf.space")
    assert ServeSettings().public_address == "https://lab-prax.hf.space"
    assert ServeSettings(public_url="https://demos.example.org").public_address == "https://demos.example.org"
    monkeypatch.setenv("SPACE_HOST", "x.org/<script>")
    assert ServeSettings().public_address is None
