"""The trainer and the evaluator end to end at toy sizes, through their main(argv) entry points."""

import json

import pytest

from apps.prax import evaluate, train
from apps.prax.pipeline import PraxPipeline

TINY = ["--d-model", "32", "--d-ff", "64", "--layers", "1", "--decoder-layers", "1", "--heads", "2"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("train")
    assert train.main(["literal", "--out", str(root / "lit"), "--steps", "4", "--batch-size", "4", *TINY]) == 0
    assert train.main(["pragmatic", "--init", str(root / "lit"), "--out", str(root / "prag"), "--rounds", "2",
                       "--targets", "3", "--samples", "4", "--spec-size", "2", "--batch-size", "4",
                       "--replay", "0.5"]) == 0
    return root


def _log(path):
    return [json.loads(line) for line in (path / "train_log.jsonl").read_text().splitlines()]


def test_literal_training_writes_hf_folder_and_log(trained):
    folder = trained / "lit"
    assert {p.name for p in folder.iterdir()} >= {"config.json", "model.safetensors", "train_log.jsonl"}
    log = _log(folder)
    assert log[0]["event"] == "config" and log[0]["argv"]["steps"] == 4
    assert log[-1]["event"] == "done" and log[-1]["steps"] == 4
    config = json.loads((folder / "config.json").read_text())
    assert config["vocab_size"] == 384 and config["d_model"] == 32 and config["tie_word_embeddings"] is False
    assert config["prax_max_program_chars"] == train.MAX_PROGRAM_CHARS  # what the pipeline samples up to, plus ten
    assert PraxPipeline.from_pretrained(folder, device="cpu")([("ab", "+")], k=1, num_samples=2).n_samples == 2


def test_pragmatic_self_play_logs_rounds_of_prefix_data(trained):
    log = _log(trained / "prag")
    rounds = [r for r in log if r["event"] == "round"]
    assert [r["round"] for r in rounds] == [1, 2]
    assert rounds[0]["rows"] == 6 and rounds[1]["rows"] == 12  # 3 targets x 2 prefixes per round, accumulated
    assert [r["replay_rows"] for r in rounds] == [3, 6]  # --replay 0.5: half as many fresh random-spec rows
    assert (trained / "prag" / "model.safetensors").is_file()


def test_spec_files_and_evaluation(trained, tmp_path, capsys, monkeypatch):
    specs = tmp_path / "specs.json"
    assert train.main(["specs", "--mode", "random", "--out", str(specs), "--n", "3", "--size", "3"]) == 0
    rows = json.loads(specs.read_text())
    assert len(rows) == 3 and all(len(r["examples"]) == 3 for r in rows)
    rsa_specs = tmp_path / "rsa.json"
    assert train.main(["specs", "--mode", "rsa", "--out", str(rsa_specs), "--n", "2", "--size", "2",
                       "--listener", str(trained / "lit"), "--samples", "4"]) == 0
    assert all(len(r["examples"]) == 2 for r in json.loads(rsa_specs.read_text()))
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "ckpts"))
    (tmp_path / "ckpts" / "prax").mkdir(parents=True)
    (tmp_path / "ckpts" / "prax" / "tiny-literal").symlink_to(trained / "lit")
    capsys.readouterr()
    assert evaluate.main(["--weights", "tiny-literal", "--specs", str(specs), "--samples", "4", "--limit", "2"]) == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["n"] == 2 and 0 <= last["top1"] <= last["top10"] <= 1


def test_evaluate_reports_bad_spec_files(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert evaluate.main(["--weights", "tiny-literal", "--specs", str(bad)]) == 2
    missing = tmp_path / "missing.json"
    assert evaluate.main(["--weights", "tiny-literal", "--specs", str(missing)]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_evaluate_reads_the_peoples_sets_by_default_and_scores_the_search_and_the_listener_alone(capsys):
    """``demohub eval prax`` with no ``--specs``: the evaluation set people wrote. ``--weights search`` scores the
    search alone (no samples); ``--listener-only`` the listener's samples without the search, which answer fewer
    sets (the first five here: every one has a consistent regex of the program space, and the search finds it)."""
    def last(argv):
        assert evaluate.main(argv) == 0
        return json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    alone = last(["--weights", "search", "--limit", "5"])
    assert alone["specs"] == str(evaluate.PEOPLE_SPECS) and alone["n"] == 5 and alone["samples"] == 0
    assert alone["no_guess"] == 0 and alone["seconds_per_set"] > 0
    listener = last(["--weights", "tiny-literal", "--limit", "5", "--samples", "8", "--listener-only"])
    both = last(["--weights", "tiny-literal", "--limit", "5", "--samples", "8"])
    assert both["no_guess"] == 0 and listener["no_guess"] > 0  # 8 samples of the tiny listener miss some sets
    assert both["top10"] >= listener["top10"]
