"""The hub over HTTP: catalog through gradio_client, one route per demo, isolation of a broken demo."""

import json
import tempfile
from pathlib import Path

import requests
from gradio_client import Client

import apps
from apps import catalog, hub
from shared.pool import ModelPool
from shared.registry import Demo


def test_catalog_through_gradio_client(hub_url):
    client = Client(hub_url, verbose=False)
    papers = client.predict("", False, api_name="/catalog")
    assert len(papers) == len(catalog.load_catalog()) >= 35
    assert len({p["title"] for p in papers}) == len(papers), "each paper once"
    with_demo = client.predict("", True, api_name="/catalog")
    assert sorted(p["demo"] for p in with_demo) == sorted(d.id for d in apps.DEMOS)
    found = client.predict("regular expressions pragmatic", False, api_name="/catalog")
    assert [p["demo"] for p in found] == ["prax"]
    client.close()


def test_the_catalog_search_is_bounded_and_says_why(hub_url):
    client = Client(hub_url, verbose=False)
    for query, fragment in (("diffusion " * 30, "300 characters long; the limit is 200"),
                            ("a " * 21, "21 words; use at most 20"), (10**30, "must be text, not a number")):
        try:
            client.predict(query, False, api_name="/catalog")
        except Exception as error:  # gradio_client raises the validator's sentence
            assert fragment in str(error), str(error)
        else:
            raise AssertionError(f"{query!r:.40} was searched")
    assert client.predict("diffusion", False, api_name="/catalog"), "the next search works"
    client.close()


def test_example_files_are_served_by_name_and_config_names_no_server_path(hub_url):
    from apps.ui import EXAMPLES_ROUTE, served_examples

    assert any(demo == "tag2text" for demo, _ in served_examples), "the Tag2Text page registered its examples"
    image = requests.get(f"{hub_url}{EXAMPLES_ROUTE}/tag2text/beach.png", timeout=30)
    assert image.status_code == 200 and image.headers["content-type"] == "image/png" and image.content[:4] == b"\x89PNG"
    for name in ("tag2text/../page.py", "tag2text/%2e%2e%2fpage.py", "prax/beach.png", "tag2text/missing.png"):
        assert requests.get(f"{hub_url}{EXAMPLES_ROUTE}/{name}", timeout=30).status_code == 404, name
    for page in ("config", "tag2text"):
        text = requests.get(f"{hub_url}/{page}", timeout=30).text
        assert "beach.png" in text and str(Path(tempfile.gettempdir())) + "/" not in text, page
        assert "/gradio_api/file=" not in text, page


def test_every_demo_has_a_route(hub_url):
    for demo in apps.DEMOS:
        response = requests.get(f"{hub_url}/{demo.id}", timeout=30)
        assert response.status_code == 200, demo.id
    assert requests.get(hub_url, timeout=30).status_code == 200


def test_landing_page_config_lists_cards_and_catalog(hub_url):
    config = requests.get(f"{hub_url}/config", timeout=30).json()
    text = json.dumps(config)
    for demo in apps.DEMOS:
        assert f'data-demo=\\"{demo.id}\\"' in text
    assert text.count("catalog-entry") >= 35


def test_pool_internals_are_not_a_public_api(hub_url):
    info = requests.get(f"{hub_url}/gradio_api/info", timeout=30).json()
    assert "/catalog" in info["named_endpoints"]
    assert not any("pool" in name for name in info["named_endpoints"]), "operators read it with `demohub stats`"


def test_broken_page_is_isolated(tmp_path, monkeypatch, caplog):
    (tmp_path / "broken_demo_page.py").write_text("raise RuntimeError('weights folder is corrupt')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    good = apps.get_demo("prax")
    broken = Demo(id="broken", title="Broken", tagline="x", summary="x", paper=good.paper, weight_sets=good.weight_sets,
                  pipeline="broken_demo_page:P", page="broken_demo_page")
    missing = Demo(id="later", title="Later", tagline="x", summary="x", paper=good.paper, weight_sets=good.weight_sets,
                   pipeline="nowhere:P", page="apps.nowhere.page")
    (tmp_path / "failing_build_page.py").write_text("def build(ctx):\n    raise KeyError('no such checkpoint')\n")
    failing = Demo(id="failing", title="Failing", tagline="x", summary="x", paper=good.paper,
                   weight_sets=good.weight_sets, pipeline="failing_build_page:P", page="failing_build_page")
    pool = ModelPool(budget_bytes=10**6)
    with caplog.at_level("ERROR", logger="demohub"):
        result = hub.import_page(broken)
    assert result.status == "error" and "error id" in result.reason
    assert "weights folder is corrupt" not in result.reason, "visitors read a sentence; the log has the detail"
    assert any("weights folder is corrupt" in r.getMessage() for r in caplog.records)
    assert hub.import_page(missing).status == "coming-soon"
    monkeypatch.setattr(hub, "DEMOS", (broken, missing, failing, *apps.DEMOS))
    blocks = hub.build_hub(pool)
    paths = [getattr(p, "path", None) or p for p in getattr(blocks, "pages", [])]
    assert all(any(name in str(p) for p in paths) for name in ("broken", "later", "failing", "prax"))
    text = str(blocks.config)
    assert "could not be built (error id" in text
    assert "no such checkpoint" not in text and "coming soon" in text
    assert 'data-demo="failing"' in text and "Failed to load" in text.split('data-demo="failing"')[1].split("</div>")[0]
