"""The chat completion request a judge sends, as the endpoint receives it."""

import json

from judging.backends.chat import ChatBackend
from judging.testing.scripted_server import ScriptedServer

SCHEMA = {"type": "object", "properties": {"rating": {"type": "integer"}}, "required": ["rating"]}
MESSAGES = [{"role": "system", "content": "You rate jokes."}, {"role": "user", "content": "Rate: Joke 1."}]


def send(*, structured: bool, schema: dict | None) -> dict:
    received: list[dict] = []

    def answer(request: dict) -> str:
        received.append(request)
        return json.dumps({"rating": 2})

    with ScriptedServer(answer) as server:
        backend = ChatBackend(
            base_url=server.url,
            api_key="k",
            model="judge-model",
            temperature=0.3,
            max_tokens=40,
            timeout=10,
            structured_output=structured,
        )
        try:
            completion = backend.complete(MESSAGES, schema)
        finally:
            backend.close()
    assert completion.content == '{"rating": 2}'
    assert len(received) == 1
    return received[0]


class TestTheRequestBody:
    def test_it_carries_the_model_messages_sampling_settings_and_the_schema(self):
        request = send(structured=True, schema=SCHEMA)
        assert request["model"] == "judge-model"
        assert request["messages"] == MESSAGES
        assert request["temperature"] == 0.3
        assert request["max_tokens"] == 40
        assert request["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True},
        }

    def test_without_structured_output_no_response_format_is_sent(self):
        request = send(structured=False, schema=SCHEMA)
        assert request["messages"] == MESSAGES
        assert "response_format" not in request
