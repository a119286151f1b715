"""``demohub``: serve the hub, list and download weights, check the machine, evaluate and train demos."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import importlib.util
import os
import platform
import shutil
import sys
from pathlib import Path

from apps import DEMOS, get_demo
from apps.settings import add_arguments
from shared import weights
from shared.errors import DemoHubError

LIBRARIES = ("torch", "gradio", "gradio_client", "streamlit", "transformers", "huggingface_hub", "safetensors",
             "diffusers", "rdkit", "peft", "numpy", "pillow", "regex", "ray")  # ray: optional, `serve --ray`


STREAMLIT_NO_LOGIN = ("demohub: the Streamlit hub has no login of its own, so it would serve every demo without the "
                      "--auth you gave. Serve the Gradio hub with --auth (demohub serve --auth ...), or put the "
                      "Streamlit hub behind a reverse proxy that asks for the login.")
STREAMLIT_PUBLIC = ("demohub: warning: the Streamlit hub checks every input and bounds long work as the Gradio hub "
                    "does, but has none of its queue, session, body-size or connection limits; on an address others "
                    "can reach, put it behind a reverse proxy with limits (docs/deploying.md).")


def cmd_serve(args: argparse.Namespace) -> int:
    from apps.settings import from_args, is_loopback

    settings = from_args(args)
    if args.streamlit and settings.ray:
        print("demohub: --ray serves the Gradio hub; the Streamlit hub runs its models in process.", file=sys.stderr)
        return 2
    if args.streamlit and settings.auth:
        print(STREAMLIT_NO_LOGIN, file=sys.stderr)
        return 2
    if args.streamlit and not is_loopback(settings.host):
        print(STREAMLIT_PUBLIC, file=sys.stderr)
    if args.streamlit:
        app = Path(__file__).with_name("streamlit_hub.py")
        # The Streamlit process reads the decided download rule from its environment (apps/streamlit_ui.py).
        env = {**os.environ, "DEMOHUB_DOWNLOADS": "on" if settings.downloads_allowed else "off"}
        # This process becomes Streamlit (exec, not a child): SIGTERM from a service manager and Ctrl-C reach the
        # server itself, and no orphan is left serving after `demohub` is stopped.
        command = [sys.executable, "-m", "streamlit", "run", str(app), "--server.address", settings.host,
                   "--server.port", str(args.port or 8501), "--browser.gatherUsageStats", "false",
                   "--client.toolbarMode", "minimal",
                   "--server.maxUploadSize", str(max(1, settings.max_file_size // 1_000_000))]
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, command, env)
        return 0  # not reached: this process is Streamlit now
    from apps import hub

    hub.launch(settings)
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    import json

    from apps.serving import read_operator_stats

    print(json.dumps(read_operator_stats(args.port), indent=1))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    for demo in DEMOS:
        print(f"{demo.id}: {demo.title}")
        for ws in demo.weight_sets:
            source = ws.repo_id or "checkpoints/"
            pin = weights.pin(demo.id, ws)
            print(f"  {ws.name:<32} {weights.state(demo.id, ws).value:<13} {ws.size_text:>12}  {source}  {pin}"
                  f"  license: {ws.license or 'not stated'}")
    return 0


def cmd_download(args: argparse.Namespace) -> int:
    demo = get_demo(args.demo)
    ws = demo.weight_set(args.weights)
    if weights.state(demo.id, ws, ask_hub=False).here:
        folder = weights.resolve(demo.id, ws, allow_download=False)
        print(f"{demo.id}/{ws.name} is already here: {folder}")
        if weights.record_pin(demo.id, ws, folder.name):  # a cache snapshot folder is named by its commit
            print(f"Pinned to {folder.name[:12]} in {weights.lock_path()}")
        return 0
    print(f"Downloading {ws.repo_id}@{weights.pin(demo.id, ws).revision} ({ws.size_text}) into "
          f"{weights.hf_cache_dir()} ...")
    folder = weights.download(demo.id, ws)
    print(f"Done: {folder}")
    print(f"{demo.id}/{ws.name}: {weights.pin(demo.id, ws)}; lock file {weights.lock_path()}")
    return 0


def _version(name: str) -> str:
    dist = {"pillow": "pillow", "rdkit": "rdkit"}.get(name, name)
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def cmd_doctor(args: argparse.Namespace) -> int:
    print(f"Python        {platform.python_version()} ({sys.executable})")
    print(f"Platform      {platform.platform()}")
    for name in LIBRARIES:
        print(f"{name:<13} {_version(name)}")
    if importlib.util.find_spec("torch"):
        import torch

        from shared.device import cpu_bf16_support, pick_device, pick_dtype

        cuda = torch.cuda.is_available()
        gpus = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())) if cuda else "none"
        print(f"CUDA          {torch.version.cuda if cuda else 'not available'} (GPUs: {gpus})")
        device = pick_device()
        dtype = pick_dtype(device)
        print(f"Device/dtype  {device} / {str(dtype).removeprefix('torch.')}")
        print(f"bf16 on CPU   {cpu_bf16_support().summary(device == 'cpu' and dtype is torch.bfloat16)}")
        print(f"Quantisation  {_quantize_line()}")
    cache = weights.hf_cache_dir()
    existing = next(p for p in (cache, *cache.parents) if p.exists())
    print(f"HF cache      {cache} ({shutil.disk_usage(existing).free / 1e9:.1f} GB free)")
    print(f"Converted     {_converted_line()}")
    problem = weights.hub_problem(detail=True)  # with the network library's reason: the operator's view
    endpoint = weights.hub_endpoint() or weights.DEFAULT_ENDPOINT
    print(f"Hugging Face  {'reachable' if problem is None else 'not reachable'}: {problem or endpoint}")
    print(f"Checkpoints   {os.environ.get('DEMOHUB_CHECKPOINTS') or weights.BUNDLED_ROOT}")
    print(f"Weights lock  {weights.lock_path()}")
    print(f"Client share  {_share_line()}")
    print("Weights here:")
    for demo in DEMOS:
        for ws in demo.weight_sets:
            st = weights.state(demo.id, ws, ask_hub=False)
            if st.here:
                print(f"  {demo.id}/{ws.name} ({st.value}, {weights.pin(demo.id, ws)})")
    return 0


def _converted_line() -> str:
    """The conversion cache's folder and what it holds (weights converted or quantised once, read at the next load)."""
    from shared.checkpoints import converted_root

    root, sizes = converted_root(), []
    for path in root.iterdir() if root.is_dir() else ():
        with contextlib.suppress(OSError):  # a writer's temporary file may be renamed meanwhile
            if path.is_file():
                sizes.append(path.stat().st_size)
    files, size = len(sizes), sum(sizes)
    if not files:
        return f"{root} (empty: filled as weights are first converted or quantised)"
    return (f"{root} ({files} file{'s' * (files != 1)}, {size / 1e9:.1f} GB; safe to delete: each is made "
            "again on the next load that needs it)")


def _share_line() -> str:
    """What one client may hold of a hub served with this environment's DEMOHUB_* settings (docs/deploying.md)."""
    from apps.settings import from_env
    from shared.registry import human_bytes

    s = from_env()
    proxies = s.trusted_proxies or "none"
    return (f"{s.max_connections_per_address} connections (of {s.max_connections}), {s.client_streams} streams "
            f"(idle {s.stream_idle:g} s, results {s.stream_timeout:g} s), {s.client_jobs} jobs (queue "
            f"{s.queue_size}), {human_bytes(s.client_upload_quota)} of uploads (kept {s.anonymous_upload_retention} s "
            f"without a login), bodies at {human_bytes(s.min_body_rate)}/s after {s.read_timeout:g} s, "
            f"{s.login_attempts} wrong passwords before waits; trusted proxies: {proxies}")


def _quantize_line() -> str:
    """What ``DEMOHUB_QUANTIZE`` does on this machine: each kind tried on a tiny layer, the demos it applies to, and the
    setting now."""
    from shared.device import QUANTIZE_MODES, quantize_setting
    from shared.quantize import unsupported

    kinds = ", ".join(f"{mode} {'runs here' if unsupported(mode) is None else 'cannot run here'}"
                      for mode in QUANTIZE_MODES[1:])
    demos = ", ".join(d.id for d in DEMOS if d.quantizes) or "no demo"
    try:
        now = quantize_setting()
    except ValueError as error:
        now = f"invalid: {error}"
    return f"{kinds} (weight-only, on a CPU, for {demos}: DEMOHUB_QUANTIZE=int8|int4); now {now}"


def _delegate(kind: str, args: argparse.Namespace) -> int:
    """``demohub eval|train DEMO ...`` runs ``apps.<demo>.evaluate|train.main(rest)``."""
    demo = get_demo(args.demo)
    module_name = f"apps.{demo.id}.{'evaluate' if kind == 'eval' else 'train'}"
    if importlib.util.find_spec(module_name) is None:
        print(f"{demo.id} has no `demohub {kind}` yet.", file=sys.stderr)
        return 2
    return importlib.import_module(module_name).main(args.rest) or 0


def cmd_export_space(args: argparse.Namespace) -> int:
    from apps import spaces

    root = Path(args.out) if args.out else spaces.SPACES_ROOT
    names = spaces.space_names() if args.name == "all" else [args.name]
    spaces.export(names, root)
    for name in names:
        print(f"wrote {root / name}/")
    return 0


def cmd_deploy(args: argparse.Namespace) -> int:
    from apps import spaces

    files = spaces.deploy(args.name, args.space_id, private=args.private, dry_run=args.dry_run)
    verb = "would upload" if args.dry_run else "uploaded"
    print(f"{verb} {len(files)} files to Space {args.space_id}:")
    print("\n".join(f"  {f}" for f in files))
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    from apps import authoring

    root = Path(args.root).resolve() if args.root else authoring.REPO_ROOT
    problem = authoring.refusal(args.id, root)
    if problem:
        print(f"demohub: {problem}", file=sys.stderr)
        return 2
    written = authoring.write_skeleton(args.id, root)
    print(f"Wrote the skeleton of the demo {args.id} under {root}:")
    print("\n".join(f"  {path.relative_to(root)}" for path in written))
    print("Next:")
    print("\n".join(f"  {n}. {step}" for n, step in enumerate(authoring.next_steps(args.id), 1)))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from apps import authoring

    root = Path(args.root).resolve() if args.root else authoring.REPO_ROOT
    if args.list:
        print(authoring.shown(authoring.pytest_command(args.demo, root)[0], root))
        return 0
    todo = authoring.problems(args.demo, root)
    for sentence in todo:
        print(sentence)
    if (glue := authoring.glue_lines(args.demo, root)) <= authoring.MAX_GLUE:  # over: one of the sentences above
        print(f"Its glue is {glue} lines (scripts/glue-lines), within {authoring.MAX_GLUE}.")
    if args.no_tests:
        print(authoring.summary(args.demo, len(todo), "not run (--no-tests)"))
        return 1 if todo else 0
    code, counts = authoring.run_tests(args.demo, root)
    print(authoring.summary(args.demo, len(todo), counts))
    return code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="demohub", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="start the hub (Gradio, or Streamlit with --streamlit)",
                           description="Start the hub. Every switch also reads its DEMOHUB_* variable "
                                       "(docs/deploying.md explains each).")
    serve.add_argument("--streamlit", action="store_true")
    add_arguments(serve, default_port=None)
    serve.set_defaults(func=cmd_serve)

    stats = sub.add_parser("stats", help="loaded models and queue of the hub running on this machine (operators)")
    stats.add_argument("--port", type=int, default=int(os.environ.get("DEMOHUB_PORT", "7860")))
    stats.set_defaults(func=cmd_stats)

    sub.add_parser("list", help="demos, weight sets, sizes, and whether each is here").set_defaults(func=cmd_list)

    download = sub.add_parser("download", help="download a demo's weights into the Hugging Face cache")
    download.add_argument("demo", choices=[d.id for d in DEMOS])
    download.add_argument("--weights", help="weight set name (default: the demo's first)")
    download.set_defaults(func=cmd_download)

    sub.add_parser("doctor", help="versions, device, cache and offline state").set_defaults(func=cmd_doctor)

    space_names = [d.id for d in DEMOS] + ["hub"]
    export = sub.add_parser("export-space", help="write spaces/<name>/ (Spaces README YAML, app.py, requirements)")
    export.add_argument("name", choices=[*space_names, "all"])
    export.add_argument("--out", help="write <out>/<name>/ instead of the repository's spaces/<name>/")
    export.set_defaults(func=cmd_export_space)

    deploy = sub.add_parser("deploy", help="create a Hugging Face Space and upload a demo (or the hub) to it")
    deploy.add_argument("name", choices=space_names)
    deploy.add_argument("--space-id", required=True, help="OWNER/SPACE")
    deploy.add_argument("--private", action="store_true")
    deploy.add_argument("--dry-run", action="store_true", help="print the files it would upload; no network")
    deploy.set_defaults(func=cmd_deploy)

    new = sub.add_parser("new", help="write the skeleton of a new demo (apps/<id>/, its fixture, tests/<id>/)",
                         description="Write the skeleton of a new demo from docs/adding-a-demo.md's template: "
                                     "apps/<id>/ (__init__, checks, pipeline, api), tests/fixtures/tiny_<id>.py and "
                                     "tests/<id>/; then say what to do next.")
    new.add_argument("id", help="the demo's id: lower case letters, digits and underscores (its folder and route)")
    new.add_argument("--root", metavar="DIR", help="write under the checkout DIR instead of this one")
    new.set_defaults(func=cmd_new)

    check = sub.add_parser("check", help="what a demo still lacks, then the tests that cover it",
                           description="Say what the demo still lacks or what is stale, one sentence each (without "
                                       "running tests), then run the tests that cover it: tests/<id>/ and the "
                                       "generated tests that name it or its endpoints. Exit code: pytest's.")
    check.add_argument("demo", metavar="DEMO", help="the demo's id")
    check.add_argument("--no-tests", action="store_true",
                       help="stop after saying what is missing (exit code 1 if anything is)")
    check.add_argument("--list", action="store_true", help="print the pytest command that runs its tests, only")
    check.add_argument("--root", metavar="DIR", help="read the files of the checkout DIR and run its tests there "
                                                     "(default: this one)")
    check.set_defaults(func=cmd_check)

    for kind in ("eval", "train"):
        verb = "evaluate" if kind == "eval" else "train"  # also the module name _delegate runs
        ready = [d.id for d in DEMOS if importlib.util.find_spec(f"apps.{d.id}.{verb}") is not None]
        # No automatic -h: everything after DEMO (--help included) goes to the demo's own parser. A -h/--help
        # given before DEMO is ours and says how to get the demo's flags.
        p = sub.add_parser(kind, help=f"{verb} a demo's model (see `demohub {kind} DEMO --help`)", add_help=False,
                           usage="%(prog)s [-h] DEMO [ARGS ...]",
                           description=f"{verb.capitalize()} a demo's model. Each demo has its own flags: run "
                                       f"`demohub {kind} DEMO --help` for that demo's flags.",
                           epilog=f"Demos with `demohub {kind}` today: {', '.join(ready) or 'none yet'}.")
        p.add_argument("-h", "--help", action="help",
                       help=f"show this help and exit (`demohub {kind} DEMO --help` shows the demo's flags)")
        p.add_argument("demo", choices=[d.id for d in DEMOS], metavar="DEMO",
                       help=f"one of: {', '.join(d.id for d in DEMOS)}")
        p.add_argument("rest", nargs=argparse.REMAINDER, metavar="ARGS",
                       help=f"the demo's own arguments, passed on to it (see `demohub {kind} DEMO --help`)")
        p.set_defaults(func=lambda a, k=kind: _delegate(k, a))
    return parser


def main(argv: list[str] | None = None) -> int:
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("demohub").setLevel(logging.INFO)
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except DemoHubError as error:
        print(f"demohub: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
