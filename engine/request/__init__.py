"""The request path, in the order a request travels it.

``_admission`` (validate an OpenAI-style body) -> ``_rendering`` (chat template or
``_prompt_encoders``, tokens, cache segments) -> ``_prompt_cache`` (reuse a prefix) ->
``_job`` (what the caller and the engine thread share) -> ``_scheduler`` on
``_engine_thread`` (``_single_stream`` alone, mlx-lm's batch otherwise) -> ``_reply_stream``
(detokenize, stop strings, the StreamFilter) -> ``_handle`` (the caller's events) ->
``_responses`` (OpenAI chunks and objects). ``_inspection`` runs the stages before
scheduling and stops there. Everything here is private: ``mlx_notebook.engine`` exports the
public names.
"""
