import pytest


@pytest.fixture
def page(browser, hub_url):
    """A fresh page that records console errors and failed requests to the hub itself."""
    context = browser.new_context()
    pg = context.new_page()
    pg.console_errors = []
    pg.on("console", lambda m: m.type == "error" and pg.console_errors.append(m.text))
    pg.on("pageerror", lambda e: pg.console_errors.append(str(e)))
    yield pg
    context.close()
