"""Azure OpenAI (``kind = "azure-openai"`` and ``"azure-openai-responses"``; docs/models.md
"Azure OpenAI").

Azure serves OpenAI's models from a resource endpoint (``https://RESOURCE.openai.azure.com``,
``base_url`` or ``AZURE_OPENAI_ENDPOINT``) in two URL shapes:

- ``azure_api = "v1"`` (the default): ``{endpoint}/openai/v1/chat/completions`` (and
  ``/openai/v1/responses``), OpenAI-compatible, the deployment's name as ``model`` in the body;
  ``?api-version=…`` only when ``api_version`` is written (``"preview"`` for preview features);
- ``azure_api = "deployments"``: the classic
  ``{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…`` (``api_version``
  defaults to :data:`DEFAULT_API_VERSION`).

Either way the model name in flow.toml is the *deployment's* name. The key goes in the
``api-key`` header (``api_key_env``), or a Microsoft Entra ID token as ``Authorization: Bearer``
(``entra_token_env``); both are redacted like every secret. Azure's own reply fields are read:
``prompt_filter_results`` / a choice's ``content_filter_results`` that say ``filtered`` (and
``finish_reason: content_filter``) are a ``content_filter`` error naming the categories, as is a
Responses reply whose ``content_filters`` say ``blocked``; a 404 ``DeploymentNotFound`` says
which deployment is missing and that the model name is the deployment's. Everything else —
payloads, streams, usage, retries (``retry-after-ms`` honoured, :mod:`.http`) — is the OpenAI
adapters'.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from agentflow.errors import ConfigError, ModelError, ModelErrorKind
from agentflow.runtime.models.base import ChatRequest, ChatResponse
from agentflow.runtime.models.openai import OpenAIClient
from agentflow.runtime.models.openai_responses import OpenAIResponsesClient
from agentflow.runtime.provider_options import read_token_file

#: ``api-version`` of the classic deployment URLs when ``api_version`` is not written: the
#: latest generally available data-plane inference version.
DEFAULT_API_VERSION = "2024-10-21"


def resource_endpoint(base_url: str) -> str:
    """The resource endpoint of ``base_url``, without a trailing ``/openai/v1`` or ``/openai``
    someone pasted from the portal (``https://r.openai.azure.com/openai/v1/`` →
    ``https://r.openai.azure.com``)."""
    url = base_url.rstrip("/")
    for tail in ("/openai/v1", "/openai"):
        if url.lower().endswith(tail):
            return url[: -len(tail)]
    return url


def filtered_categories(results: Any) -> list[str]:
    """``["violence (medium)", "jailbreak"]``: the categories of an Azure
    ``content_filter_results`` object that say ``filtered: true`` (with their severity)."""
    if not isinstance(results, dict):
        return []
    out = []
    for name, verdict in results.items():
        if isinstance(verdict, dict) and verdict.get("filtered") is True:
            severity = verdict.get("severity")
            out.append(f"{name} ({severity})" if isinstance(severity, str) else str(name))
    return out


def reply_filter(data: Any) -> str | None:
    """What Azure's content filter stopped in a chat-completions reply ``data``, or None: the
    prompt (``prompt_filter_results``) or the answer (a choice's ``content_filter_results``, or
    ``finish_reason: content_filter``), with the filtered categories."""
    if not isinstance(data, dict):
        return None
    prompt: list[str] = []
    for item in data.get("prompt_filter_results") or []:
        if isinstance(item, dict):
            prompt += filtered_categories(item.get("content_filter_results"))
    if prompt:
        return f"the prompt was filtered: {', '.join(prompt)}"
    for choice in data.get("choices") or []:
        if not isinstance(choice, dict):
            continue
        answer = filtered_categories(choice.get("content_filter_results"))
        if answer or choice.get("finish_reason") == "content_filter":
            detail = f": {', '.join(answer)}" if answer else " (finish_reason content_filter)"
            return f"the answer was filtered{detail}"
    return None


class _Azure:
    """What both Azure clients share: the endpoint, the ``api-key`` / Entra ID header, the
    ``api-version`` query and the DeploymentNotFound message."""

    provider: str
    model: str
    base_url: str
    _api_key: str | None
    _headers: dict[str, str]

    def __init__(
        self,
        *,
        azure_api: str = "v1",
        api_version: str | None = None,
        entra: bool = False,
        token_file: str | None = None,
        **options: Any,
    ):
        super().__init__(**options)  # the OpenAI client this is mixed into
        self._setup(azure_api, api_version, entra, token_file)

    def _setup(
        self, azure_api: str, api_version: str | None, entra: bool, token_file: str | None = None
    ) -> None:
        self.azure_api = azure_api
        self.api_version = api_version
        self.entra = entra or token_file is not None
        self.token_file = token_file
        self.endpoint = resource_endpoint(self.base_url)

    def _read_token(self) -> str:
        """The token of :attr:`token_file` now (:func:`read_token_file`); an unreadable file is
        a permanent ModelError naming it."""
        assert self.token_file is not None
        try:
            return read_token_file(self.token_file)
        except ConfigError as e:
            raise ModelError(
                f"model provider '{self.provider}': {e}", kind=ModelErrorKind.PERMANENT
            ) from None

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """One inference (the OpenAI client's ``chat``). With :attr:`token_file`, the token is
        read from the file before the request, and once more after an HTTP 401: a token that
        changed meanwhile (renewed by whatever keeps the file) is sent in one more try; an
        unchanged one makes the 401 the error, naming the file."""
        try:
            first: ChatResponse = await super().chat(request)  # type: ignore[misc]  # the OpenAI client mixed in
            return first
        except ModelError as exc:
            if exc.status == 401 and self.token_file is not None:
                sent = self._api_key
                if self._read_token() != sent:
                    try:
                        again_reply: ChatResponse = await super().chat(request)  # type: ignore[misc]
                        return again_reply
                    except ModelError as again:
                        exc = again
                if exc.status == 401:
                    raise ModelError(
                        f"{exc}; the Entra ID token in {self.token_file} (entra_token_file) was "
                        "refused: the file is read before each request and again after a 401 "
                        "— keep a current token in it",
                        kind=exc.kind,
                        status=401,
                    ) from None
            raise self._explained(exc) from None

    def _query(self) -> str:
        version = self.api_version
        if self.azure_api == "deployments":
            version = version or DEFAULT_API_VERSION
        return f"?api-version={quote(version, safe='')}" if version else ""

    def _request_headers(self) -> dict[str, str]:
        if self.token_file is not None:  # read before each request: a renewed token is sent
            self._api_key = self._read_token()
        headers = {"Content-Type": "application/json", **self._headers}
        if self._api_key:
            if self.entra:
                headers["Authorization"] = f"Bearer {self._api_key}"
            else:
                headers["api-key"] = self._api_key
        return headers

    def _explained(self, exc: ModelError) -> ModelError:
        """``exc``; for a 404 DeploymentNotFound a message naming the deployment, for another
        404 (a URL shape the endpoint does not serve) one naming the endpoint and shape."""
        text = str(exc).lower()
        if exc.status == 404 and "deployment" not in text:
            return ModelError(
                f"{exc}; check that base_url is the resource's endpoint "
                f"(https://RESOURCE.openai.azure.com; the URL was {self.endpoint}) and that it "
                f'serves azure_api = "{self.azure_api}"',
                kind=exc.kind,
                status=404,
            )
        if exc.status != 404:
            return exc
        return ModelError(
            f"model provider '{self.provider}': Azure OpenAI has no deployment '{self.model}' at "
            f"{self.endpoint} (HTTP 404 DeploymentNotFound). The model name in flow.toml is the "
            "deployment's name (Azure portal → Deployments), not the model's; a deployment "
            "created in the last few minutes may not be ready yet",
            kind=ModelErrorKind.PERMANENT,
            status=404,
        )

    def _filtered(self, what: str) -> ModelError:
        return ModelError(
            f"model provider '{self.provider}': Azure's content filter stopped the request "
            f"({what})",
            kind=ModelErrorKind.CONTENT_FILTER,
        )


class AzureOpenAIClient(_Azure, OpenAIClient):
    """Chat Completions on Azure OpenAI (``kind = "azure-openai"``). Options: those of
    :class:`~agentflow.runtime.models.openai.OpenAIClient` (``base_url`` is the resource
    endpoint, ``model`` the deployment), plus ``azure_api`` (``"v1"`` | ``"deployments"``),
    ``api_version`` (None: none for v1, :data:`DEFAULT_API_VERSION` for deployments) and
    ``entra`` (the key is a Microsoft Entra ID token: ``Authorization: Bearer`` instead of
    ``api-key``). Raises ModelError as the OpenAI client does, ``content_filter`` for a reply
    Azure's filter stopped (:func:`reply_filter`)."""

    @property
    def chat_url(self) -> str:
        """The deployment URL, or the v1 endpoint, with its ``api-version``."""
        if self.azure_api == "deployments":
            path = f"/openai/deployments/{quote(self.model, safe='')}/chat/completions"
        else:
            path = "/openai/v1/chat/completions"
        return f"{self.endpoint}{path}{self._query()}"

    async def _send(
        self, url: str, payload: dict[str, Any], headers: dict[str, str], request: ChatRequest
    ) -> Any:
        data = await super()._send(url, payload, headers, request)
        what = reply_filter(data)
        if what is not None:
            raise self._filtered(what)
        return data


class AzureOpenAIResponsesClient(_Azure, OpenAIResponsesClient):
    """The Responses API on Azure OpenAI (``kind = "azure-openai-responses"``,
    ``{endpoint}/openai/v1/responses``); options as :class:`AzureOpenAIClient` (only the v1
    shape serves it). A reply whose ``content_filters`` say ``blocked`` is a
    ``content_filter`` error."""

    @property
    def url(self) -> str:
        """The v1 Responses endpoint with its ``api-version``."""
        return f"{self.endpoint}/openai/v1/responses{self._query()}"

    async def _send_responses(
        self, payload: dict[str, Any], headers: dict[str, str], request: ChatRequest
    ) -> Any:
        data = await super()._send_responses(payload, headers, request)
        for item in (data.get("content_filters") if isinstance(data, dict) else None) or []:
            if isinstance(item, dict) and item.get("blocked") is True:
                found = filtered_categories(item.get("content_filter_results"))
                source = item.get("source_type") or "content"
                raise self._filtered(f"the {source} was blocked: {', '.join(found) or 'blocked'}")
        return data
