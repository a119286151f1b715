"""`demohub new` writes a new demo's skeleton (into a temporary checkout root, never this one) that imports and
registers; `demohub check` says what a demo lacks and which generated file is stale, and selects the tests that
cover it. The newest demo is the one checked: it has nothing left to do."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import shlex
import shutil
import subprocess
import sys
import textwrap

import pytest

import apps
from apps import authoring
from shared.registry import Demo
from tests.commands import REPO, checkout_env

NEWEST = "codesage"  # the newest demo: `check` finds nothing missing (tests named for it would join its selection)
NEW_ID = "paper_demo"


def demohub(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "apps.cli", *args], capture_output=True, text=True,
                          env=checkout_env(), cwd=REPO, timeout=300)


def test_new_writes_the_skeleton_and_says_what_comes_next(tmp_path):
    done = demohub("new", NEW_ID, "--root", str(tmp_path))
    assert done.returncode == 0, done.stderr
    files = [f"apps/{NEW_ID}/__init__.py", f"apps/{NEW_ID}/checks.py", f"apps/{NEW_ID}/pipeline.py",
             f"apps/{NEW_ID}/api.py", f"tests/fixtures/tiny_{NEW_ID}.py", f"tests/{NEW_ID}/__init__.py"]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == sorted(files)
    for file in files:
        assert f"  {file}\n" in done.stdout
    for step in ('"demo": "paper_demo"', "apps/catalog.json", "tests/fixtures/tiny_paper_demo.py",
                 "python -m apps.api_docs", "demohub check paper_demo"):
        assert step in done.stdout.partition("Next:")[2], step
    assert not (REPO / "apps" / NEW_ID).exists() and not (REPO / "tests" / NEW_ID).exists()


def test_the_skeleton_imports_registers_and_checks_its_example_and_says_what_is_left(tmp_path):
    """In a fresh interpreter with the temporary root's demo beside this checkout's packages: the ``DEMO`` is a
    ``Demo`` found from its folder, the API's endpoint is built and its example passes its checks, the pipeline
    follows the contract's shape and its unwritten methods say what to write; and `check` lists what is left."""
    root = tmp_path / "checkout"
    assert demohub("new", NEW_ID, "--root", str(root)).returncode == 0
    for file in ("apps/catalog.json", "requirements.txt", "constraints.txt", "README.md", "docs/api.md",
                 "checkpoints/README.md"):
        (root / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / file, root / file)
    script = textwrap.dedent(f"""
        import inspect, json, sys
        from pathlib import Path
        import apps, tests
        root = Path({str(root)!r})
        apps.__path__.insert(0, str(root / "apps"))  # the new demo's package beside this checkout's
        tests.__path__.insert(0, str(root / "tests"))  # tests.fixtures, a namespace package, follows
        from apps import registry
        from shared.registry import Demo
        from shared.pipeline import Pipeline
        found = registry.discover(root / "apps")
        demo = found[0]
        registry.DEMOS = (*registry.DEMOS, demo)
        [endpoint] = demo.endpoints()
        [example] = endpoint.example_calls()
        cls = demo.pipeline_class()
        params = inspect.signature(cls.from_pretrained).parameters
        unwritten = []
        for call in (lambda: cls.from_pretrained(root, device="cpu"), lambda: cls.__call__(None, "text"),
                     lambda: __import__("tests.fixtures.tiny_{NEW_ID}").fixtures.tiny_{NEW_ID}.build_default(root),
                     lambda: __import__("tests.fixtures.tiny_{NEW_ID}").fixtures.tiny_{NEW_ID}.official_repo(root)):
            try:
                call()
            except NotImplementedError as error:
                unwritten.append(str(error))
        from apps import authoring
        print(json.dumps({{
            "found": [d.id for d in found], "is_demo": isinstance(demo, Demo), "title": demo.title,
            "endpoint": endpoint.name, "checked": repr(endpoint.check_call(None, example.arguments)),
            "pipeline": cls.__name__, "is_pipeline": issubclass(cls, Pipeline) and bool(cls.components),
            "keyword_only": [params[n].kind is inspect.Parameter.KEYWORD_ONLY for n in ("device", "dtype")],
            "unwritten": unwritten, "problems": authoring.problems("{NEW_ID}", root),
        }}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=checkout_env(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["found"] == [NEW_ID] and out["is_demo"] and out["title"] == "PaperDemo: what it does"
    assert out["endpoint"] == f"run_{NEW_ID}"
    assert out["checked"] == "PaperDemoInputs(text='an example a visitor starts from')"
    assert out["pipeline"] == "PaperDemoPipeline" and out["is_pipeline"] and out["keyword_only"] == [True, True]
    assert len(out["unwritten"]) == 4 and all(text.startswith("Write ") and text.endswith(".")
                                              for text in out["unwritten"])
    assert out["problems"] == [
        f"apps/{NEW_ID}/__init__.py still has the skeleton's placeholders (title, tagline, summary, the paper's "
        f"title, its arxiv_id, {NEW_ID}-base's repo_id, {NEW_ID}-base's size_bytes, {NEW_ID}-base's license): write "
        "the demo's own.",
        f"PaperDemoPipeline.from_pretrained still raises NotImplementedError: write it (apps/{NEW_ID}/pipeline.py).",
        f"PaperDemoPipeline.__call__ still raises NotImplementedError: write it (apps/{NEW_ID}/pipeline.py).",
        f"tests/fixtures/tiny_{NEW_ID}.py's build_default still raises NotImplementedError: write it.",
        f"tests/fixtures/tiny_{NEW_ID}.py's official_repo still raises NotImplementedError: write it.",
        f"tests/{NEW_ID}/ has no test file: test what the demo does beyond its declarations (its pipeline on the "
        "tiny checkpoints, its checks).",
        f'apps/catalog.json has no paper whose "demo" is "{NEW_ID}": set it on the paper\'s entry.',
        "docs/api.md is stale: run python -m apps.api_docs.",
        "checkpoints/README.md is stale: run python -m apps.api_docs.",
        "README.md is stale: run python -m apps.api_docs.",
        *[f"spaces/{name}/{file} is stale: run python -m apps.api_docs." for name in (NEW_ID, "hub")
          for file in ("README.md", "app.py", "requirements.txt")],
        f"docs/screenshots/{NEW_ID}.png is missing (the README's picture): run scripts/screenshots -k {NEW_ID}.",
    ]


def demo_fields(source: str) -> list[str]:
    [call] = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
              and getattr(node.func, "id", "") == "Demo"]
    return [k.arg for k in call.keywords]


def test_the_skeleton_names_every_field_a_demo_has_as_the_docs_template_does():
    """Every ``Demo`` field is written out, in docs/adding-a-demo.md's template's order: an author sees each one."""
    page = (REPO / "docs" / "adding-a-demo.md").read_text(encoding="utf-8")
    [template] = [code for code in re.findall(r"```python\n(.*?)```", page, re.S) if "DEMO = Demo(" in code]
    written = demo_fields(authoring.skeleton(NEW_ID)[f"apps/{NEW_ID}/__init__.py"])
    assert written == demo_fields(template)
    assert sorted(written) == sorted(f.name for f in dataclasses.fields(Demo))


@pytest.mark.parametrize(("demo_id", "said"), [
    (NEWEST, f"demohub: '{NEWEST}' is already a demo (apps/{NEWEST}/): choose another id, or run demohub check "
             f"{NEWEST}."),
    ("Paper-Demo", "demohub: 'Paper-Demo' cannot be a demo's id: it is its folder apps/<id>/, its route /<id> and a "
                   "Python module name, so write it in lower case letters"),
    ("class", "demohub: 'class' cannot be a demo's id"),
    ("taken", "demohub: apps/taken already exists under "),
], ids=["a-demo-already", "not-lower-case", "a-keyword", "a-folder-there"])  # no id names the demo: see NEWEST
def test_new_refuses_an_id_in_a_sentence_and_writes_nothing(demo_id, said, tmp_path):
    (tmp_path / "apps" / "taken").mkdir(parents=True)
    done = demohub("new", demo_id, "--root", str(tmp_path))
    assert done.returncode == 2 and done.stderr.startswith(said) and "Traceback" not in done.stderr, done.stderr
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")] == ["apps", "apps/taken"]


def test_check_finds_nothing_missing_for_the_newest_demo():
    done = demohub("check", NEWEST, "--no-tests")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == f"{NEWEST}: nothing to do; tests: not run (--no-tests)", done.stdout
    assert f"Its glue is {authoring.glue_lines(NEWEST)} lines (scripts/glue-lines), within 150." in done.stdout


def copy_of_the_checked_files(root, demo_id: str) -> None:
    """What `check` reads of a checkout, for one demo, copied under ``root``."""
    names = ["apps/catalog.json", "requirements.txt", "constraints.txt", "README.md", "docs/api.md",
             "checkpoints/README.md", f"docs/screenshots/{demo_id}.png", f"tests/fixtures/tiny_{demo_id}.py",
             "tests/browser/test_docs_screenshots.py"]
    names += [p.relative_to(REPO).as_posix() for folder in (f"apps/{demo_id}", f"tests/{demo_id}",
                                                            f"spaces/{demo_id}", "spaces/hub")
              for p in (REPO / folder).glob("*.*") if p.is_file()]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, root / name)


def test_check_names_each_stale_generated_file_and_the_command_that_rewrites_it(tmp_path):
    copy_of_the_checked_files(tmp_path, NEWEST)
    done = demohub("check", NEWEST, "--no-tests", "--root", str(tmp_path))
    assert done.returncode == 0 and "nothing to do" in done.stdout, done.stdout  # the copy is complete
    requirements = tmp_path / "spaces" / NEWEST / "requirements.txt"
    requirements.write_text(requirements.read_text() + "leftover==1.0\n")
    api = tmp_path / "docs" / "api.md"
    api.write_text(api.read_text().replace("/search_code", "/search", 1))
    (tmp_path / "docs" / "screenshots" / f"{NEWEST}.png").unlink()
    done = demohub("check", NEWEST, "--no-tests", "--root", str(tmp_path))
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "docs/api.md is stale: run python -m apps.api_docs.",
        f"spaces/{NEWEST}/requirements.txt is stale: run python -m apps.api_docs.",
        f"docs/screenshots/{NEWEST}.png is missing (the README's picture): run scripts/screenshots -k {NEWEST}.",
        f"Its glue is {authoring.glue_lines(NEWEST)} lines (scripts/glue-lines), within 150.",
        f"{NEWEST}: 3 things to do; tests: not run (--no-tests)",
    ]


def collected(command: str) -> list[str]:
    """The test ids that `check --list`'s command selects."""
    where, _, line = command.partition(" && ")
    assert where == f"cd {shlex.quote(str(REPO))}"
    env, *argv = shlex.split(line)
    assert env == f"PYTHONPATH={REPO}"
    done = subprocess.run([*argv, "--collect-only", "-q", "-p", "no:cacheprovider"], capture_output=True, text=True,
                          cwd=REPO, env=checkout_env(), timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_the_selection_is_the_demos_folder_and_every_generated_test_that_names_it_or_its_endpoints():
    done = demohub("check", NEWEST, "--list")
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 1, done.stdout + done.stderr
    ids = collected(done.stdout.strip())
    assert any(i.startswith(f"tests/{NEWEST}/test_") for i in ids)
    folders = list(dict.fromkeys(i.split("/")[1] for i in ids))
    assert folders == sorted(folders), "the whole suite's order (a session fixture of one folder meets the next)"
    for kind in ("tests/shared/test_api.py::test_every_declared_example_passes_its_checks_and_every_limit_is_"
                 "enforced[search_code]",  # by endpoint
                 "tests/robustness/test_bad_inputs.py::test_a_value_outside_the_declared_limits_is_refused_naming_"
                 f"the_input[{NEWEST}-search_code-top_k-below-minimum]",  # by demo, endpoint, input and case
                 f"tests/shared/test_contract_all.py::test_pipeline_follows_the_contract[{NEWEST}]",  # by demo
                 f"tests/hub/test_spaces.py::test_committed_space_folder_is_fresh[{NEWEST}]",
                 f"tests/hub/test_page_words.py::test_no_page_shows_an_api_word[{NEWEST}-generated-form]",
                 "tests/browser/test_docs_screenshots.py::test_a_generated_page_says_what_it_needs_and_fills_in_its_"
                 f"first_example[{NEWEST}]",
                 f"tests/browser/test_layout.py::test_the_iframe_snippet_takes_the_embedded_views_own_height_at_720px"
                 f"[{NEWEST}]",
                 "tests/security/test_exposure.py::test_an_endpoint_never_reads_a_server_file_its_caller_names["
                 "search_code-files]",  # by endpoint and input
                 "tests/ray/test_serve_ray.py::test_every_demo_answers_as_in_process[embed_code]"):
        assert kind in ids, kind
    generated = [i for i in ids if i.startswith(authoring.GENERATED_TESTS)]
    assert all(NEWEST in i or "[search_code" in i or "[embed_code" in i for i in generated), generated


def test_an_endpoint_named_by_a_common_word_selects_only_its_own_tests():
    """GeoDiffusion's `generate` picks its parametrised tests, not every test with "generated" in its name."""
    ids = collected(authoring.shown(authoring.pytest_command("geodiffusion")[0]))
    assert "tests/shared/test_api.py::test_every_example_a_page_offers_is_a_call_that_passes_its_checks[generate]" \
        in ids
    assert [i for i in ids if "geodiffusion" not in i and "[generate" not in i and "[encode_layout" not in i] == []


def test_pytest_counts_read_its_last_line():
    assert authoring.pytest_counts("==== 40 passed, 1047 deselected, 3 warnings in 95.20s (0:01:35) ====\n") == \
        "40 passed"
    assert authoring.pytest_counts("= 2 failed, 38 passed, 1 skipped, 9 deselected in 9.10s =") == \
        "2 failed, 38 passed, 1 skipped"
    assert authoring.pytest_counts("tests/hub/test_cli.py ....  [100%]") == ""


def test_run_tests_shows_pytests_output_and_returns_its_exit_code_and_counts(monkeypatch, capsys):
    monkeypatch.setattr(authoring, "selection", lambda demo_id, root: [
        "tests/hub/test_authoring.py", "-p", "no:cacheprovider", "-k", "test_pytest_counts_read_its_last_line"])
    assert authoring.run_tests(NEWEST) == (0, "1 passed")
    out = capsys.readouterr().out
    assert out.startswith(f"cd {REPO} && PYTHONPATH={REPO} ") and "test_authoring.py ." in out
    monkeypatch.setattr(authoring, "selection", lambda demo_id, root: [
        "tests/hub/test_authoring.py", "-p", "no:cacheprovider", "-k", "no_such_test"])
    assert authoring.run_tests(NEWEST) == (5, "pytest exited with 5")


@pytest.mark.parametrize("demo", apps.DEMOS, ids=lambda d: d.id)
def test_every_demo_declares_an_example_for_every_input_as_check_asks_a_new_one(demo):
    """What `demohub check` asks of a new demo's API (an example for every input, each run function found), every
    demo's declaration has: the generated tests and example calls start from it."""
    assert authoring._api_problems(demo) == []
