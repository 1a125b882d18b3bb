"""The endpoints answered from what the listener knows, with no request body: ``/health``,
``/v1/models``, and a 404 for every path nobody serves."""

from __future__ import annotations

import re

from ..request._admission import DEFAULT_MODEL_ALIAS
from ._base_handler import BaseHandler
from ._error_objects import cut

__all__ = ["HealthHandler", "ModelsHandler", "NotFoundHandler"]


class HealthHandler(BaseHandler):
    """``GET /health``: ``{"status": "ok"}`` (200) or ``unavailable`` (503); no token needed,
    it tells nothing but whether the engine runs."""

    def get(self) -> None:
        engine = self.listener.engine
        ok = engine is not None and engine.healthy
        self.set_status(200 if ok else 503)
        self.finish({"status": "ok" if ok else "unavailable"})

    head = get  # (uptime checkers ask with HEAD; tornado sends no body for it)


class ModelsHandler(BaseHandler):
    """``GET /v1/models``: the one loaded model, as ``mlx_lm.server`` lists models;
    ``GET /v1/models/{id}``: that model's object, as OpenAI answers it (the server answers
    with the list filtered to it), or 404 when the engine serves another. ``default_model``,
    the name a response without ``model`` carries, is the loaded model too."""

    def get(self, model_id: str | None = None) -> None:
        if not self.authorized():
            return
        engine = self.listener.engine
        model = None
        if engine is not None and engine.healthy:
            model = {"id": engine.model_info.name, "object": "model",
                     "created": self.listener.created, "owned_by": "mlx-notebook"}
        if not model_id:
            self.finish({"object": "list", "data": [model] if model else []})
        elif model is not None and model_id in (model["id"], engine.model_info.path,
                                                DEFAULT_MODEL_ALIAS):
            self.finish({**model, "id": model_id})  # the id a response named is the id asked
        else:
            served = f"; this listener serves {model['id']!r}" if model else ""
            self.fail(404, f"The model {cut(model_id)!r} is not loaded{served}.", param="model",
                      code="model_not_found")

    head = get


class _EveryMethod:
    def __contains__(self, method: object) -> bool:
        return True


class NotFoundHandler(BaseHandler):
    SUPPORTED_METHODS = _EveryMethod()  # type: ignore[assignment]
    """A path nobody serves is a 404 whatever the method: tornado would answer a method it
    does not know (PROPFIND, TRACE, a typo) 405, allowing only OPTIONS there."""

    def prepare(self) -> None:
        stored = _STORED_RESPONSE.fullmatch(self.request.path)
        if stored:  # the openai SDK's responses.retrieve, .delete, .cancel, .input_items.list
            self.fail(404, f"The response {cut(stored[1])!r} is not stored: this server stores "
                           "no responses (each says \"store\": false); keep the one you got, "
                           "and send the whole conversation in 'input'.", code="not_found")
            return
        self.fail(404, f"There is no endpoint {cut(self.request.path)}; use /v1/chat/completions, "
                       "/v1/responses, /v1/completions, /v1/models or /health.", code="not_found")


_STORED_RESPONSE = re.compile(r"(?:/v1)?/responses/(resp_[^/]+)(?:/(?:cancel|input_items)?)?")
