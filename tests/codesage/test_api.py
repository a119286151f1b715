"""CodeSage's two endpoints from outside, on a running hub with the tiny checkpoint: gradio_client gets the
pipeline's own answers; a hostile upload (a zip bomb, a zip of too many files, a binary file) is refused with a
sentence and the next honest call is answered."""

from __future__ import annotations

import zipfile

import pytest

from apps.codesage import corpus
from apps.codesage.api import EXAMPLES
from shared.weights import REPO_ROOT
from tests.conftest import tiny_hub_running

QUESTION = "find an item in a sorted list"


@pytest.fixture(scope="module")
def hub(tiny_root, tmp_path_factory):
    with tiny_hub_running(tiny_root, tmp_path_factory, 2_000_000_000) as (url, pool):
        yield url


@pytest.fixture(scope="module")
def client(hub):
    from gradio_client import Client

    client = Client(hub, verbose=False)
    yield client
    client.close()


def files(*paths):
    from gradio_client import handle_file

    return [handle_file(str(p)) for p in paths]


def search(client, query=QUESTION, code="", uploads=(), top_k=3):
    return client.predict(query, code, list(uploads), top_k, None, api_name="/search_code")


def test_search_code_answers_the_pipelines_ranking(client, hub, tiny_root):
    from apps.codesage.pipeline import CodeSagePipeline

    out = search(client, uploads=files(*(REPO_ROOT / p for p in EXAMPLES)))
    local = CodeSagePipeline.from_pretrained(tiny_root / "codesage" / "codesage-small")(
        QUESTION, "", [REPO_ROOT / p for p in EXAMPLES], 3).to_dict()
    assert [(m["file"], m["start"], m["end"]) for m in out["matches"]] == \
           [(m["file"], m["start"], m["end"]) for m in local["matches"]]
    assert [m["score"] for m in out["matches"]] == pytest.approx([m["score"] for m in local["matches"]], abs=1e-4)
    assert out["searched"] == local["searched"] > 3 and "/" not in out["matches"][0]["file"], "no server path"


def test_embed_code_is_a_unit_vector_the_search_compares(client):
    out = client.predict("def add(a, b):\n    return a + b", None, api_name="/embed_code")
    assert out["dimensions"] == len(out["embedding"]) == 32
    assert sum(v * v for v in out["embedding"]) == pytest.approx(1.0, abs=1e-5)
    assert out["tokens"] > 1 and out["truncated"] is False


def _zip(tmp_path, name, members):
    path = tmp_path / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path


@pytest.mark.parametrize(("case", "words"), [
    ("bomb", "No code to search (bomb.zip/a.py left out: larger than"),
    ("many", f"At most {corpus.MAX_FILES} source files per search"),
    ("binary", "No code to search (noise.py left out: not a text file.)"),
    ("not-utf8", "No code to search (latin.py left out: not UTF-8 text.)"),
])
def test_a_hostile_upload_gets_a_sentence_and_the_next_search_is_answered(client, tmp_path, case, words):
    path = {
        "bomb": lambda: _zip(tmp_path, "bomb.zip", {"a.py": b"0" * (64 * 1024 * 1024)}),
        "many": lambda: _zip(tmp_path, "many.zip", {f"f{i}.py": b"x = 1\n" for i in range(corpus.MAX_FILES + 1)}),
        "binary": lambda: (tmp_path / "noise.py").write_bytes(b"\x00\x01" * 1000) and tmp_path / "noise.py",
        "not-utf8": lambda: (tmp_path / "latin.py").write_bytes("caf\xe9 = 1".encode("latin-1")) and
        tmp_path / "latin.py",
    }[case]()
    with pytest.raises(ValueError) as info:  # gradio_client's AppError: the sentence, no traceback
        search(client, uploads=files(path))
    assert words in str(info.value) and "Traceback" not in str(info.value)
    assert search(client, code="def f():\n    pass\n")["searched"] == 1


def test_a_zip_of_a_repository_is_searched_member_by_member(client, tmp_path):
    archive = _zip(tmp_path, "repo.zip", {f"src/{p.rsplit('/', 1)[1]}": (REPO_ROOT / p).read_bytes()
                                          for p in EXAMPLES} | {"README.md": b"# words", ".git/HEAD": b"ref"})
    out = search(client, uploads=files(archive), top_k=50)
    assert {m["file"] for m in out["matches"]} == {f"repo.zip/src/{p.rsplit('/', 1)[1]}" for p in EXAMPLES}
