"""`demohub` works offline: list, doctor, download's message, delegation, and its exit codes."""

import os
import subprocess
import sys

import pytest

from apps import cli


def run_cli(*args, tmp_path, **env):
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub"), **env}
    return subprocess.run([sys.executable, "-m", "apps.cli", *args], capture_output=True, text=True,
                          env=full_env, timeout=120)


def test_list_offline_shows_every_weight_set(tmp_path):
    result = run_cli("list", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "tag2text-swin-14m" in result.stdout and "4.48 GB" in result.stdout
    assert result.stdout.count("KaiChen1998/geodiffusion-") == 5
    assert "unavailable" in result.stdout


def test_doctor_offline(tmp_path):
    result = run_cli("doctor", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Offline       yes" in result.stdout
    assert "torch" in result.stdout and "CUDA" in result.stdout
    assert str(tmp_path / "hub") in result.stdout and "GB free" in result.stdout


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


@pytest.mark.parametrize("command", ["list", "doctor", "download", "eval", "train", "serve"])
def test_help_for_every_command(command):
    with pytest.raises(SystemExit) as info:
        cli.build_parser().parse_args([command, "--help"] if command not in ("eval", "train") else ["--help"])
    assert info.value.code == 0
