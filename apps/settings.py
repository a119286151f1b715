"""How a hub is served: every limit and switch of a public deployment, from `demohub serve` flags or DEMOHUB_* vars.

Defaults are the safe ones: a hub reachable from other machines (a non-loopback bind, `--share`, a Space) never lets
visitors start downloads, uploads and queues are bounded, monitoring is off, and file inputs never fetch URLs. The MCP
server (the named API endpoints as tools for agents) is on, under the same rules and the same login.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from shared.context import DemoContext
from shared.device import quantize_problem
from shared.errors import UserInputError
from shared.pool import ModelPool, default_pool
from shared.registry import Demo

if TYPE_CHECKING:
    from shared.ray_pool import RayPool

DOWNLOAD_MODES = ("auto", "on", "off")
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9}
_TRUE = {"1", "true", "yes", "on"}
PUBLIC_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?")
PUBLIC_URL = re.compile(r"https?://" + PUBLIC_HOST.pattern + r"(/[A-Za-z0-9._~%!$&'()*+,;=:@/-]*)?")


def parse_size(text: str | int) -> int:
    """``25MB`` / ``500kb`` / ``1000000`` -> bytes (decimal units, as sizes are shown everywhere else)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmg]?b?)\s*", str(text).lower())
    if not match:
        raise UserInputError(f"{text!r} is not a size; write it like 25MB, 500KB or 1000000.")
    return int(float(match[1]) * _UNITS[match[2]])


def parse_auth(value: str) -> tuple[tuple[str, str], ...]:
    """``user:pass[,user2:pass2]``, or the path of a file with one ``user:pass`` per line (# comments allowed)."""
    if not value:
        return ()
    path = Path(value).expanduser()
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else value.split(",")
    pairs = []
    for line in (raw.strip() for raw in lines):
        if not line or line.startswith("#"):
            continue
        user, sep, password = line.partition(":")
        if not sep or not user or not password:
            raise UserInputError("Each login must be written user:password (in --auth, DEMOHUB_AUTH or its file).")
        pairs.append((user, password))
    return tuple(pairs)


def on_space() -> bool:
    """Running on Hugging Face Spaces (the platform sets SPACE_ID and SYSTEM=spaces)."""
    return bool(os.environ.get("SPACE_ID")) or os.environ.get("SYSTEM") == "spaces"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServeSettings:
    host: str = "127.0.0.1"
    port: int = 7860
    share: bool = False
    downloads: str = "auto"  # auto: on only for a loopback bind without --share, never on a Space
    max_file_size: int = 25_000_000  # bytes per uploaded file
    max_request_size: int = 1_000_000  # bytes of any request body but an upload's or an MCP call's
    read_timeout: float = 10.0  # seconds a client may take to send a request's headers, or pause inside its body
    max_connections: int = 1000  # open connections at once (fewer where the process may open fewer files)
    max_connections_per_address: int = 128  # open connections from one client address
    min_body_rate: int = 10_000  # bytes a second a request body must average once --read-timeout has passed
    stream_idle: float = 60.0  # seconds an event stream may send nothing before it is closed
    stream_timeout: float = 1800.0  # seconds a result stream (/queue/data, /call/<name>/<id>) may stay open in all
    client_streams: int = 32  # event streams one client may have open at once
    client_jobs: int = 8  # requests one client may have waiting or running, all its sessions together
    client_upload_quota: int = 250_000_000  # upload bytes one client may have stored at once
    anonymous_upload_retention: int = 600  # seconds the uploads of a client without a login are kept
    login_attempts: int = 5  # wrong passwords one client may send before each next try waits twice as long
    forwarded_allow_ips: str = ""  # reverse proxies whose forwarded client address is trusted (uvicorn's setting)
    public_url: str = ""  # the address the world reaches the hub at (its embed snippets use it); "": the visitor's
    queue_size: int = 64  # events waiting in the queue, all demos together
    session_jobs: int = 4  # events one browser session (or API client session) may have waiting or running
    demo_concurrency: int = 1  # model calls one demo runs at once (each demo has its own queue group)
    auth: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    auth_given: bool = field(default=False, repr=False, compare=False)  # --auth given: with no login, refuse to start
    monitoring: bool = False  # Gradio's /monitoring dashboard and summary
    allow_url_inputs: bool = False  # let file inputs name a web address the server then fetches
    delete_cache: int = 3600  # seconds after which uploads and outputs are deleted (0: keep them)
    mcp: bool = True  # serve the named API endpoints as MCP tools at /gradio_api/mcp/ (needs gradio[mcp])
    warm: bool = True  # import the model code (torch) in the background once serving, not on the first model call
    ray: bool = False  # models in Ray Serve deployments instead of this process (shared/ray_pool.py)
    ray_address: str | None = None  # join this Ray cluster ("auto": the one `ray start` runs here); None: start one
    serve_config: str | None = None  # serve.yaml: replicas, autoscaling, CPUs/GPUs per demo and weight set

    def __post_init__(self):
        if self.downloads not in DOWNLOAD_MODES:
            raise UserInputError(f"--downloads must be one of {', '.join(DOWNLOAD_MODES)}, not {self.downloads!r}.")
        for name in ("max_file_size", "max_request_size", "queue_size", "session_jobs", "demo_concurrency",
                     "max_connections", "max_connections_per_address", "min_body_rate", "client_streams",
                     "client_jobs", "client_upload_quota", "anonymous_upload_retention", "login_attempts"):
            if getattr(self, name) < 1:
                raise UserInputError(f"--{name.replace('_', '-')} must be at least 1.")
        if not 0 < self.read_timeout <= 600:
            raise UserInputError("--read-timeout must be more than 0 and at most 600 seconds.")
        if not 0 < self.stream_idle <= self.stream_timeout:
            raise UserInputError("--stream-idle must be more than 0 and at most --stream-timeout.")
        if self.public_url and not PUBLIC_URL.fullmatch(self.public_url):
            raise UserInputError(f"--public-url must be a web address such as https://demos.example.org (with any path "
                                 f"the hub is served under), not {self.public_url!r}.")
        if self.auth_given and not self.auth:
            raise UserInputError("--auth names no login (its file or value has no user:password line), so the hub "
                                 "would serve everyone; add a login, or leave --auth out for a public hub.")

    @property
    def local_only(self) -> bool:
        """Only this machine reaches the hub (a loopback bind, no share link, not a Space): its visitor is the
        operator."""
        return is_loopback(self.host) and not self.share and not on_space()

    @property
    def public_address(self) -> str | None:
        """Where the world reaches the hub, for its embed snippets: ``--public-url``; on a Space, its own host; else
        None (the snippets then use the address each visitor reached, and say so when only they can reach it)."""
        if self.public_url:
            return self.public_url.rstrip("/")
        space_host = os.environ.get("SPACE_HOST", "") if on_space() else ""
        return f"https://{space_host}" if PUBLIC_HOST.fullmatch(space_host) else None

    @property
    def trusted_proxies(self) -> str:
        """The proxies whose forwarded client address is believed: ``--forwarded-allow-ips``; on a Space, where the
        platform's proxy is the only way in, any (each visitor then has a share of its own, not the proxy's one)."""
        return self.forwarded_allow_ips or ("*" if on_space() else "")

    @property
    def downloads_allowed(self) -> bool:
        """May a visitor's request start a weight download? ``auto`` says yes only on a private, local hub."""
        if self.downloads == "auto":
            return self.local_only
        return self.downloads == "on"

    @property
    def delete_cache_pair(self) -> tuple[int, int] | None:
        """Gradio's ``delete_cache=(every, older_than)``: sweep every tenth of the age, at least once a minute."""
        if not self.delete_cache:
            return None
        return max(1, min(60, self.delete_cache // 10)), self.delete_cache

    def context(self, demo: Demo, pool: ModelPool | RayPool | None = None) -> DemoContext:
        """What a page of ``demo`` gets under these settings: the pool, may-download, and its concurrency (with Ray:
        what the demo's deployments answer at once, from serve.yaml)."""
        pool = pool or default_pool()
        concurrency = self.demo_concurrency if pool.computes_here else pool.config.concurrency(demo)
        return DemoContext(demo, pool, downloads=self.downloads_allowed, operator_here=self.local_only,
                           concurrency=concurrency, public_url=self.public_address)

    def ray_pool(self, demos: Sequence[Demo]) -> RayPool:
        """Connect to Ray (or start it), read serve.yaml, and return the pool every page then uses."""
        from shared.ray_pool import RayPool, ServeConfig

        return RayPool(demos, ServeConfig.load(self.serve_config, demos), self.ray_address)


def _env(name: str, default: str) -> str:
    return os.environ.get(f"DEMOHUB_{name}", default)


def add_arguments(parser: argparse.ArgumentParser, default_port: int | None = 7860) -> None:
    """The `demohub serve` flags; each defaults to its DEMOHUB_* variable, then to ServeSettings' default."""
    d = ServeSettings()
    port = os.environ.get("DEMOHUB_PORT")
    parser.add_argument("--host", default=_env("HOST", d.host),
                        help="address to bind (127.0.0.1: this machine only; 0.0.0.0: every interface)")
    parser.add_argument("--port", type=int, default=int(port) if port else default_port)
    parser.add_argument("--share", action="store_true", help="also open a temporary public gradio.live link")
    parser.add_argument("--downloads", choices=DOWNLOAD_MODES, default=_env("DOWNLOADS", d.downloads),
                        help="may visitors' requests download missing weights (auto: only on a loopback bind "
                             "without --share and not on a Space)")
    parser.add_argument("--max-file-size", type=parse_size, default=_env("MAX_FILE_SIZE", str(d.max_file_size)),
                        help="largest uploaded file, e.g. 25MB")
    parser.add_argument("--max-request-size", type=parse_size,
                        default=_env("MAX_REQUEST_SIZE", str(d.max_request_size)),
                        help="largest request body other than uploads and MCP calls, e.g. 1MB")
    parser.add_argument("--read-timeout", type=float, default=float(_env("READ_TIMEOUT", str(d.read_timeout))),
                        help="seconds a client may take to send a request's headers, or pause while sending its body")
    parser.add_argument("--max-connections", type=int,
                        default=int(_env("MAX_CONNECTIONS", str(d.max_connections))),
                        help="open connections at once, all clients together")
    parser.add_argument("--max-connections-per-address", type=int,
                        default=int(_env("MAX_CONNECTIONS_PER_ADDRESS", str(d.max_connections_per_address))),
                        help="open connections from one client address (a reverse proxy is one address)")
    parser.add_argument("--min-body-rate", type=parse_size, default=_env("MIN_BODY_RATE", str(d.min_body_rate)),
                        help="bytes a second a request body must average once --read-timeout has passed, e.g. 10KB "
                             "(a slow drip is closed at that pace: a total deadline for every body)")
    parser.add_argument("--stream-idle", type=float, default=float(_env("STREAM_IDLE", str(d.stream_idle))),
                        help="seconds an event stream may send nothing before it is closed")
    parser.add_argument("--stream-timeout", type=float,
                        default=float(_env("STREAM_TIMEOUT", str(d.stream_timeout))),
                        help="seconds a result stream (/queue/data, /call/<name>/<id>) may stay open in all")
    parser.add_argument("--client-streams", type=int, default=int(_env("CLIENT_STREAMS", str(d.client_streams))),
                        help="event streams one client (its login, else its address) may have open at once")
    parser.add_argument("--client-jobs", type=int, default=int(_env("CLIENT_JOBS", str(d.client_jobs))),
                        help="requests one client may have waiting or running, all its sessions together")
    parser.add_argument("--client-upload-quota", type=parse_size,
                        default=_env("CLIENT_UPLOAD_QUOTA", str(d.client_upload_quota)),
                        help="upload bytes one client may have stored at once, e.g. 250MB")
    parser.add_argument("--anonymous-upload-retention", type=int,
                        default=int(_env("ANONYMOUS_UPLOAD_RETENTION", str(d.anonymous_upload_retention))),
                        help="seconds the uploads of a client without a login are kept")
    parser.add_argument("--login-attempts", type=int, default=int(_env("LOGIN_ATTEMPTS", str(d.login_attempts))),
                        help="wrong passwords one client may send before each next try waits twice as long")
    parser.add_argument("--forwarded-allow-ips", default=_env("FORWARDED_ALLOW_IPS", d.forwarded_allow_ips),
                        help="reverse proxies (comma-separated addresses or networks, * for any) whose "
                             "X-Forwarded-For names the client; default: none, the peer's address is the client")
    parser.add_argument("--public-url", default=_env("PUBLIC_URL", d.public_url),
                        help="the address visitors reach the hub at, e.g. https://demos.example.org (behind a reverse "
                             "proxy or a domain of its own): every page's embed snippets use it")
    parser.add_argument("--queue-size", type=int, default=int(_env("QUEUE_SIZE", str(d.queue_size))),
                        help="requests that may wait in the queue, all demos together")
    parser.add_argument("--session-jobs", type=int, default=int(_env("SESSION_JOBS", str(d.session_jobs))),
                        help="requests one visitor session may have waiting or running")
    parser.add_argument("--demo-concurrency", type=int,
                        default=int(_env("DEMO_CONCURRENCY", str(d.demo_concurrency))),
                        help="model calls each demo runs at once")
    parser.add_argument("--auth", default=_env("AUTH", ""),
                        help="require a login: user:pass[,user2:pass2] or a file of user:pass lines")
    parser.add_argument("--monitoring", action="store_true", default=_env("MONITORING", "0").lower() in _TRUE,
                        help="turn on Gradio's /monitoring dashboard (off by default)")
    parser.add_argument("--allow-url-inputs", action="store_true",
                        default=_env("ALLOW_URL_INPUTS", "0").lower() in _TRUE,
                        help="let file inputs be web addresses that the server fetches (off by default)")
    parser.add_argument("--delete-cache", type=int, default=int(_env("DELETE_CACHE", str(d.delete_cache))),
                        help="delete uploads and outputs older than this many seconds (0: keep them)")
    parser.add_argument("--no-mcp", dest="mcp", action="store_false",
                        default=_env("MCP", "1" if d.mcp else "0").lower() in _TRUE,
                        help="do not serve the named API endpoints as MCP tools (/gradio_api/mcp/; on by default)")
    parser.add_argument("--no-warm", dest="warm", action="store_false",
                        default=_env("WARM", "1" if d.warm else "0").lower() in _TRUE,
                        help="do not import the model code (torch) in the background once the hub serves; the first "
                             "model call imports it instead (saves ~0.5 GB until a model runs; on by default)")
    parser.add_argument("--ray", action="store_true", default=_env("RAY", "0").lower() in _TRUE,
                        help="run each demo's models as Ray Serve deployments (needs `pip install -e '.[ray]'`)")
    parser.add_argument("--ray-address", default=_env("RAY_ADDRESS", "") or None,
                        help="join this Ray cluster (auto: the one `ray start` runs on this machine); implies --ray; "
                             "default: start a local Ray instance with the hub")
    parser.add_argument("--serve-config", default=_env("SERVE_CONFIG", "") or None,
                        help="serve.yaml with replicas, autoscaling and CPUs/GPUs per demo; implies --ray")


# What serve.yaml's ``hub:`` section may set (the share of each client, the budgets of each request, the public
# address); sizes are written as for the flags (25MB), seconds and counts as numbers.
HUB_KEYS = ("max_file_size", "max_request_size", "read_timeout", "min_body_rate", "max_connections",
            "max_connections_per_address", "forwarded_allow_ips", "public_url", "client_streams", "stream_idle",
            "stream_timeout", "queue_size", "client_jobs", "session_jobs", "demo_concurrency", "client_upload_quota",
            "anonymous_upload_retention", "login_attempts", "delete_cache")
_SIZES = ("max_file_size", "max_request_size", "min_body_rate", "client_upload_quota")


def hub_section(path: str | Path) -> dict:
    """serve.yaml's ``hub:`` section, checked: each key one of ``HUB_KEYS``, each value of its setting's kind."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return {}  # the Ray pool reads the same file and says what is wrong with it
    section = data.get("hub") if isinstance(data, dict) else None
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise UserInputError(f"{Path(path).name}: hub must be a mapping (key: value lines).")
    values, defaults = {}, ServeSettings()
    for key, value in section.items():
        if key not in HUB_KEYS:
            raise UserInputError(f"{Path(path).name}: hub: unknown key {key!r}; the keys are {', '.join(HUB_KEYS)}.")
        kind = type(getattr(defaults, key))
        try:
            values[key] = parse_size(value) if key in _SIZES else kind(value)
        except (TypeError, ValueError):
            raise UserInputError(f"{Path(path).name}: hub: {key} must be {kind.__name__ if kind is not str else 'text'}"
                                 f", not {value!r}.") from None
    return values


def _given(key: str, value: object) -> bool:
    """Whether the operator set ``key`` with its flag or its DEMOHUB_* variable (else serve.yaml's hub section may)."""
    return f"DEMOHUB_{key.upper()}" in os.environ or value != getattr(ServeSettings(), key)


def from_args(args: argparse.Namespace) -> ServeSettings:
    """The settings a hub serves under; a DEMOHUB_QUANTIZE this machine cannot run stops it here, in a sentence,
    before any visitor (the models read it when they load)."""
    if problem := quantize_problem():
        raise UserInputError(problem)
    settings = ServeSettings(
        host=args.host, port=args.port or ServeSettings.port, share=args.share, downloads=args.downloads,
        max_file_size=args.max_file_size, max_request_size=args.max_request_size, read_timeout=args.read_timeout,
        max_connections=args.max_connections, max_connections_per_address=args.max_connections_per_address,
        min_body_rate=args.min_body_rate, stream_idle=args.stream_idle, stream_timeout=args.stream_timeout,
        client_streams=args.client_streams, client_jobs=args.client_jobs,
        client_upload_quota=args.client_upload_quota, anonymous_upload_retention=args.anonymous_upload_retention,
        login_attempts=args.login_attempts, forwarded_allow_ips=args.forwarded_allow_ips, public_url=args.public_url,
        auth_given=bool(args.auth.strip()),
        queue_size=args.queue_size, session_jobs=args.session_jobs,
        demo_concurrency=args.demo_concurrency, auth=parse_auth(args.auth), monitoring=args.monitoring,
        allow_url_inputs=args.allow_url_inputs, delete_cache=args.delete_cache, mcp=args.mcp, warm=args.warm,
        ray=args.ray or bool(args.ray_address or args.serve_config), ray_address=args.ray_address,
        serve_config=args.serve_config,
    )
    if args.serve_config:  # what no flag or variable sets, serve.yaml's hub section may
        from_file = {k: v for k, v in hub_section(args.serve_config).items() if not _given(k, getattr(settings, k))}
        settings = replace(settings, **from_file)
    return settings


def from_env(**overrides) -> ServeSettings:
    """Settings from DEMOHUB_* variables only (a Space's app.py, the Streamlit hub, tests)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return replace(from_args(parser.parse_args([])), **overrides)
