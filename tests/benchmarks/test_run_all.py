"""benchmarks/run_all.py --only: the sections it does not rerun are kept exactly as they were."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run_all():
    spec = importlib.util.spec_from_file_location("run_all", ROOT / "benchmarks" / "run_all.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_only_keeps_the_sections_it_does_not_rerun(tmp_path, capsys):
    run_all = _run_all()
    old = tmp_path / "BENCHMARKS.md"
    bodies = {title: f"Command: `{command}`\n\n| kept | {i} |"
              for i, (title, _, command) in enumerate(run_all.BENCHMARKS)}
    old.write_text("# Benchmarks\n\nold header\n\n" + "\n".join(f"## {t}\n\n{b}\n" for t, b in bodies.items()))
    assert run_all.existing_sections(old) == bodies
    run_all.main(["--out", str(old), "--only", "no-benchmark-has-this-word"])
    new = old.read_text()
    assert "old header" not in new and "- Machine:" in new
    assert run_all.existing_sections(old) == bodies
    assert [line for line in new.splitlines() if line.startswith("## ")] == [f"## {t}" for t in bodies]
    capsys.readouterr()


def test_sections_measured_by_hand_are_always_kept(tmp_path, capsys):
    run_all = _run_all()
    old = tmp_path / "BENCHMARKS.md"
    by_hand = {title: f"| by hand | {i} |" for i, title in enumerate(run_all.BY_HAND)}
    rerunnable = {title: "| kept |" for title, _, _ in run_all.BENCHMARKS}  # kept too: nothing is rerun here
    old.write_text("# Benchmarks\n\n" + "\n".join(f"## {t}\n\n{b}\n" for t, b in {**rerunnable, **by_hand}.items()))
    run_all.main(["--out", str(old), "--only", "no-benchmark-has-this-word"])
    assert {t: run_all.existing_sections(old)[t] for t in by_hand} == by_hand
    capsys.readouterr()


def test_a_rerun_section_keeps_its_notes_by_hand_and_the_scripts_own_notes(tmp_path, capsys, monkeypatch):
    run_all = _run_all()
    title, _, command = run_all.BENCHMARKS[0]
    old = tmp_path / "BENCHMARKS.md"
    old.write_text(f"# Benchmarks\n\n## {title}\n\nCommand: `{command}`\n\n| old | 1 |\n\n> Measured by hand: a note.\n"
                   "> Its second line.\n\nStray prose the rerun replaces.\n")
    printed = "progress 1/2\n| new | 2 |\n|---|---|\nNote: the script's own remark.\n| again | 3 |\ndone\n"
    monkeypatch.setattr(run_all.subprocess, "run", lambda *a, **k: run_all.subprocess.CompletedProcess(a, 0, printed))
    run_all.main(["--out", str(old), "--only", title.split()[0]])
    section = run_all.existing_sections(old)[title]
    assert "| old | 1 |" not in section and "Stray prose" not in section and "progress" not in section
    assert section.endswith("| new | 2 |\n|---|---|\n\nNote: the script's own remark.\n\n| again | 3 |\n\n"
                            "> Measured by hand: a note.\n> Its second line.")
    capsys.readouterr()
