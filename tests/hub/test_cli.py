"""`demohub` works offline: list, doctor, download's message, delegation, and its exit codes."""

import os
import re
import subprocess
import sys

import pytest

from apps import DEMOS, cli
from tests.commands import checkout_env
from tests.conftest import free_port


def run_cli(*args, tmp_path, **env):
    # DEMOHUB_CHECKPOINTS is dropped: a session fixture (tests/robustness' hub) may have pointed it at tiny weights
    inherited = {k: v for k, v in os.environ.items() if k != "DEMOHUB_CHECKPOINTS"}
    full_env = {**inherited, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub"), **env}
    return subprocess.run([sys.executable, "-m", "apps.cli", *args], capture_output=True, text=True,
                          env=checkout_env(full_env), timeout=120)


def test_list_offline_shows_every_weight_set(tmp_path):
    result = run_cli("list", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "tag2text-swin-14m" in result.stdout and "4.48 GB" in result.stdout
    assert result.stdout.count("KaiChen1998/geodiffusion-") == 5
    assert "unavailable" in result.stdout


def test_doctor_offline(tmp_path):
    result = run_cli("doctor", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Hugging Face  not reachable: HF_HUB_OFFLINE=1 is set" in result.stdout
    assert "torch" in result.stdout and "CUDA" in result.stdout
    assert str(tmp_path / "hub") in result.stdout and "GB free" in result.stdout


def test_doctor_says_where_the_conversion_cache_is_and_how_much_it_holds(tmp_path):
    """The operator sees the converted and quantised weights' folder and its size (a quantised 7B model is 3.5-6.5 GB),
    and that deleting it is safe."""
    cache = tmp_path / "converted"
    result = run_cli("doctor", tmp_path=tmp_path, DEMOHUB_CONVERTED_CACHE=str(cache))
    assert f"Converted     {cache} (empty: filled as weights are first converted or quantised)" in result.stdout
    cache.mkdir()
    for name in ("llama-int4-0123.safetensors", "tag2text_swin_14m-4567.safetensors"):
        with (cache / name).open("wb") as f:
            f.truncate(150_000_000)  # sparse: the size a listing shows, no disk
    result = run_cli("doctor", tmp_path=tmp_path, DEMOHUB_CONVERTED_CACHE=str(cache))
    assert f"Converted     {cache} (2 files, 0.3 GB; safe to delete: each is made again on the next load that " \
           "needs it)" in result.stdout, result.stdout


def test_doctor_says_which_quantisation_runs_here_and_serve_refuses_an_unknown_one(tmp_path):
    """DEMOHUB_QUANTIZE: `doctor` tries each kind on this CPU; a value the hub does not know stops `serve` before it
    binds a port (a sentence, exit 1), never a crash on the first visitor's model load."""
    result = run_cli("doctor", tmp_path=tmp_path, DEMOHUB_QUANTIZE="int8")
    assert ("Quantisation  int8 runs here, int4 runs here (weight-only, on a CPU, for molm3d: "
            "DEMOHUB_QUANTIZE=int8|int4); now int8") in result.stdout
    result = run_cli("serve", "--port", str(free_port()), tmp_path=tmp_path, DEMOHUB_QUANTIZE="int3")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("demohub: DEMOHUB_QUANTIZE='int3' is not a quantisation this hub knows: set it "
                                    "to int8 or int4")


def test_doctor_tries_the_hub(tmp_path, answering_hub):
    """`doctor` asks the Hub (briefly) instead of only reading HF_HUB_OFFLINE."""
    endpoint = os.environ["HF_ENDPOINT"]
    result = run_cli("doctor", tmp_path=tmp_path, HF_HUB_OFFLINE="0", HF_ENDPOINT=endpoint)
    assert f"Hugging Face  reachable: {endpoint}" in result.stdout and answering_hub.requests == 1
    closed = f"http://127.0.0.1:{free_port()}"
    result = run_cli("doctor", tmp_path=tmp_path, HF_HUB_OFFLINE="0", HF_ENDPOINT=closed)
    assert f"Hugging Face  not reachable: {closed} did not answer within 2 s" in result.stdout


def test_download_offline_fails_with_the_command(tmp_path):
    result = run_cli("download", "tag2text", tmp_path=tmp_path)
    assert result.returncode == 1
    assert "xinyu1205/recognize_anything_model" in result.stderr
    assert "demohub download tag2text --weights tag2text-swin-14m" in result.stderr
    assert "Traceback" not in result.stderr


def test_download_of_cached_set_is_a_no_op(tmp_path):
    from tests.shared.test_weights import make_hf_cache

    snapshot = make_hf_cache(tmp_path / "hub", "xinyu1205/recognize_anything_model", "a" * 40,
                             {"tag2text_swin_14m.pth": b"x"})
    result = run_cli("download", "tag2text", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert str(snapshot) in result.stdout


def test_unknown_weight_set_is_a_clear_error(tmp_path):
    result = run_cli("download", "prax", "--weights", "huge", tmp_path=tmp_path)
    assert result.returncode == 1 and "choose one of" in result.stderr


def test_eval_without_entry_point_says_so(capsys):
    assert cli.main(["eval", "molm3d"]) == 2
    assert "no `demohub eval`" in capsys.readouterr().err


def test_serve_parser_defaults():
    args = cli.build_parser().parse_args(["serve", "--port", "9000", "--host", "0.0.0.0"])
    assert (args.port, args.host, args.streamlit, args.share) == (9000, "0.0.0.0", False, False)


SERVE_FLAGS = ("--streamlit", "--host", "--port", "--share", "--downloads", "--max-file-size", "--max-request-size",
               "--read-timeout", "--max-connections", "--max-connections-per-address", "--queue-size",
               "--session-jobs", "--demo-concurrency", "--auth", "--monitoring", "--allow-url-inputs", "--delete-cache",
               "--no-mcp", "--ray", "--ray-address", "--serve-config", "--min-body-rate", "--stream-idle",
               "--stream-timeout", "--client-streams", "--client-jobs", "--client-upload-quota",
               "--anonymous-upload-retention", "--login-attempts", "--forwarded-allow-ips")
DEMO_IDS = ",".join(d.id for d in DEMOS)
# Each subcommand's own --help: what its options section (or usage line, for positionals) must name.
HELP = {
    "serve": SERVE_FLAGS,
    "stats": ("--port",),
    "list": (),
    "doctor": (),
    "download": (f"{{{DEMO_IDS}}}", "--weights"),
    "export-space": (f"{{{DEMO_IDS},hub,all}}",),
    "deploy": (f"{{{DEMO_IDS},hub}}", "--space-id", "--private", "--dry-run"),
    "new": ("id", "--root"),
    "check": ("DEMO", "--no-tests", "--list", "--root"),
    # `demohub eval|train --help` is tested below; `demohub eval|train DEMO --help` is the delegated module's parser
    "eval prax": ("--weights", "--specs", "--samples", "--limit", "--seed"),
    "train prax": ("{literal,pragmatic,specs}",),
    "train prax literal": ("--out", "--steps", "--minutes", "--lr", "--batch-size", "--seed", "--threads"),
}


def help_text(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as info:
        cli.main([*argv, "--help"])
    out = capsys.readouterr()
    assert info.value.code == 0, out.err
    return out.out


@pytest.mark.parametrize("command", list(HELP))
def test_help_of_every_subcommand_names_its_flags(command, capsys):
    text = help_text(command.split(), capsys)
    assert text.startswith(f"usage: demohub {command} "), text[:200]
    options = text.split("\noptions:\n", 1)[1] if "\noptions:\n" in text else ""
    for flag in HELP[command]:
        if flag.startswith("--"):  # listed as an option line of its own, not only somewhere in the usage
            assert re.search(rf"^  {re.escape(flag)}\b", options, re.M), f"{command}: {flag} missing\n{text}"
        else:
            assert flag in text, f"{command}: {flag} missing\n{text}"


def test_top_level_help_lists_every_subcommand(capsys):
    text = help_text([], capsys)
    commands = re.search(r"\{([a-z,-]+)\}", text)[1].split(",")
    assert sorted(commands) == sorted(["serve", "stats", "list", "download", "doctor", "export-space", "deploy",
                                       "new", "check", "eval", "train"])


def test_serve_parser_reads_every_flag():
    from apps.settings import ServeSettings, from_args

    args = cli.build_parser().parse_args(
        ["serve", "--streamlit", "--host", "0.0.0.0", "--port", "9001", "--share", "--downloads", "off",
         "--max-file-size", "5MB", "--queue-size", "7", "--session-jobs", "2", "--demo-concurrency", "3",
         "--auth", "ann:secret", "--monitoring", "--allow-url-inputs", "--delete-cache", "0",
         "--min-body-rate", "2KB", "--stream-idle", "30", "--stream-timeout", "90", "--client-streams", "3",
         "--client-jobs", "5", "--client-upload-quota", "1MB", "--anonymous-upload-retention", "60",
         "--login-attempts", "2", "--forwarded-allow-ips", "10.0.0.1,10.1.0.0/16"])
    assert args.streamlit is True
    assert from_args(args) == ServeSettings(
        host="0.0.0.0", port=9001, share=True, downloads="off", max_file_size=5_000_000, queue_size=7,
        session_jobs=2, demo_concurrency=3, auth=(("ann", "secret"),), monitoring=True, allow_url_inputs=True,
        delete_cache=0, min_body_rate=2_000, stream_idle=30, stream_timeout=90, client_streams=3, client_jobs=5,
        client_upload_quota=1_000_000, anonymous_upload_retention=60, login_attempts=2,
        forwarded_allow_ips="10.0.0.1,10.1.0.0/16")


def test_streamlit_with_a_login_is_refused_rather_than_served_without_it(capsys, monkeypatch):
    monkeypatch.setattr(cli.os, "execve", lambda *a, **k: pytest.fail("Streamlit was started"))
    assert cli.main(["serve", "--streamlit", "--auth", "ada:lovelace"]) == 2
    assert cli.STREAMLIT_NO_LOGIN in capsys.readouterr().err
    monkeypatch.setenv("DEMOHUB_AUTH", "ada:lovelace")
    assert cli.main(["serve", "--streamlit"]) == 2, "a login from the environment counts too"


def test_a_public_streamlit_hub_says_which_limits_it_lacks(capsys, monkeypatch):
    started = []
    monkeypatch.delenv("DEMOHUB_AUTH", raising=False)
    monkeypatch.setattr(cli.os, "execve", lambda path, argv, env: started.append(argv))
    assert cli.main(["serve", "--streamlit", "--host", "0.0.0.0"]) == 0
    assert started and cli.STREAMLIT_PUBLIC in capsys.readouterr().err
    assert cli.main(["serve", "--streamlit"]) == 0
    assert cli.STREAMLIT_PUBLIC not in capsys.readouterr().err, "a loopback bind is the operator's own"


def test_stats_parser_reads_its_port():
    assert cli.build_parser().parse_args(["stats", "--port", "9002"]).port == 9002


@pytest.mark.parametrize("flag", ["--help", "-h"])
@pytest.mark.parametrize("kind", ["eval", "train"])
def test_eval_and_train_help_lists_the_demos_and_points_to_their_own_help(kind, flag, capsys):
    """`demohub eval --help` used to exit 2 ("the following arguments are required: demo, rest")."""
    with pytest.raises(SystemExit) as info:
        cli.main([kind, flag])
    out = capsys.readouterr()
    assert info.value.code == 0, out.err
    assert out.out.startswith(f"usage: demohub {kind} [-h] DEMO [ARGS ...]\n"), out.out[:200]
    flat = " ".join(out.out.split())
    assert f"run `demohub {kind} DEMO --help` for that demo's flags" in flat
    assert f"DEMO one of: {', '.join(d.id for d in DEMOS)}" in flat
    assert f"Demos with `demohub {kind}` today: prax." in flat  # the demos that have an entry point


@pytest.mark.parametrize("kind", ["eval", "train"])
def test_help_after_the_demo_is_the_demos_own_and_the_demo_is_still_required(kind, capsys):
    own = help_text([kind, "prax"], capsys)
    assert own.startswith(f"usage: demohub {kind} prax ") and "DEMO" not in own
    with pytest.raises(SystemExit) as info:
        cli.main([kind])
    assert info.value.code == 2 and "the following arguments are required: DEMO" in capsys.readouterr().err
