"""One test per item and pass, generated only by `pytest --model NAME` (see plugins/score/hooks.py)."""
import pytest


@pytest.mark.model
def test_item(item_case, model_scorer):
    result = model_scorer(item_case)
    if result.outcome != "correct":
        pytest.fail(result.explain(), pytrace=False)
