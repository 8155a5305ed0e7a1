"""An injected model fault raised from a callback is not logged by LangChain as a callback error (one warning
line per fault flooded a battery's terminal); a real error of another callback still is."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from chaoskit_langchain import ChaosCallbackHandler
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage

import chaoskit
from chaoskit import ModelHTTPError, Plan
from examples.support.model import ScriptedChatModel

MANAGER = "langchain_core.callbacks.manager"


class Broken(BaseCallbackHandler):
    raise_error = False

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        raise ValueError("a bug in another handler")


def test_an_injected_model_fault_is_raised_without_langchains_callback_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = ScriptedChatModel(policy=lambda messages: AIMessage("hi"))
    plan = Plan(faults=[{"type": "overloaded", "target": "model", "on_call": 1}])
    handler = ChaosCallbackHandler(model_faults=True)
    with caplog.at_level(logging.WARNING, logger=MANAGER), chaoskit.episode("logs", plan=plan):
        with pytest.raises(ModelHTTPError):
            model.invoke([HumanMessage("hello")], config={"callbacks": [handler]})
        assert model.invoke([HumanMessage("hello")], config={"callbacks": [handler, Broken()]}).text == "hi"
    logged = [r.getMessage() for r in caplog.records if r.name == MANAGER]
    assert logged == ["Error in Broken.on_chat_model_start callback: ValueError('a bug in another handler')"]
