"""A catalogue of bad inputs sent through the HTTP API of one running hub: each gets a clear message, none crashes
the server, and a valid request right after it succeeds."""

from __future__ import annotations

import importlib.util

import pytest
from gradio_client import Client

import apps
from tests.robustness.cases import CATALOGUE, DECLARED_CASES, VALID, fill, make_files, outside_limits

GENERIC = "Something went wrong on our side"
READY = [d.id for d in apps.DEMOS if d.page_module and importlib.util.find_spec(d.page_module)]
CASES = [(demo, *case) for demo, cases in CATALOGUE.items() if demo in READY for case in cases]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return make_files(tmp_path_factory.mktemp("bad-files"))


@pytest.fixture(scope="module")
def client(robust_hub):
    c = Client(robust_hub[0], verbose=False)
    yield c
    c.close()


def call(client, files, api_name, args):
    return client.predict(*[fill(a, files) for a in args], api_name=api_name)


def test_every_demo_is_tried_with_bad_inputs_hand_written_ones_optional():
    """A demo's hand-written cases (CATALOGUE) are optional: the generated ones try each of its declared inputs outside
    its limits the day it is declared (a new demo adds nothing here). A demo that has hand-written cases keeps at
    least 15 of them."""
    for demo in READY:
        generated = [case for case in DECLARED_CASES if case[0] == demo]
        declared = {i.name for endpoint in apps.get_demo(demo).endpoints() for i in endpoint.inputs
                    if outside_limits(i)}
        assert {case[-1] for case in generated} == declared, demo
        assert len(CATALOGUE.get(demo, ())) + len(generated) >= 3, demo
    for demo, cases in CATALOGUE.items():
        assert len(cases) >= 15, demo


@pytest.mark.parametrize(("demo", "case", "api_name", "args", "words"), CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_bad_input_gets_a_clear_message_and_the_next_request_works(client, files, demo, case, api_name, args, words):
    with pytest.raises(ValueError) as info:  # gradio_client: AppError or ValidationError (ValueErrors), not a timeout
        call(client, files, api_name, args)
    message = str(info.value)
    assert GENERIC not in message, f"{case}: an unexpected error reached the user: {message[:300]}"
    assert "Traceback" not in message and len(message) < 2000
    assert all(w.lower() in message.lower() for w in words), f"{case}: {message[:300]}"
    valid_api, valid_args = VALID[demo]
    assert call(client, files, valid_api, valid_args) is not None


@pytest.mark.parametrize(("demo", "case", "api_name", "args", "name"), DECLARED_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in DECLARED_CASES])
def test_a_value_outside_the_declared_limits_is_refused_naming_the_input(client, files, demo, case, api_name, args,
                                                                         name):
    """Generated from the declarations (tests/robustness/cases.py ``outside_limits``): refused before the queue
    (gradio_client's ValidationError), the message marking the declared input, and the next honest call works."""
    from gradio_client.exceptions import ValidationError

    with pytest.raises(ValidationError) as info:
        call(client, files, api_name, args)
    message = str(info.value)
    assert f"- {name}: " in message and GENERIC not in message, f"{case}: {message[:300]}"
    valid_api, valid_args = VALID[demo]
    assert call(client, files, valid_api, valid_args) is not None
