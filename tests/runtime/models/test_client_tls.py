"""The TLS context of a provider client (docs/decisions.md "Start-up of a fresh agent task"):
a client of an ``http://`` endpoint loads no CA bundle (it never makes a TLS connection), and
its context still refuses every TLS peer; any other endpoint gets the process's shared context
with certifi's bundle."""

from __future__ import annotations

import ssl

from support.chat_server import completion

from agentflow.runtime.models import http
from agentflow.runtime.models.base import ChatRequest, Message
from agentflow.runtime.models.openai import OpenAIClient


def test_an_http_endpoint_gets_a_context_without_ca_certificates_that_still_verifies():
    context = http.client_ssl_context("HTTP://127.0.0.1:8000/v1")
    assert context is http.plain_http_context()
    assert context.get_ca_certs() == []
    assert context.cert_store_stats()["x509_ca"] == 0
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert http.client_ssl_context("https://api.openai.com/v1") is http.shared_ssl_context()


async def test_a_client_of_an_http_endpoint_answers_without_loading_the_ca_bundle(chat_server):
    chat_server.script([completion("hello")])
    http.shared_ssl_context.cache_clear()
    client = OpenAIClient(
        provider="scripted", base_url=chat_server.url, model="m", api_key="k" * 20
    )
    try:
        response = await client.chat(ChatRequest(messages=[Message(role="user", content="hi")]))
    finally:
        await client.aclose()
    assert response.text == "hello"
    assert http.shared_ssl_context.cache_info().currsize == 0
