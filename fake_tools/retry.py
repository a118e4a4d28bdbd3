"""Retry-After in every form real APIs send it: ``retry.headers(form, seconds, now)`` writes one,
``retry.wait(headers, now)`` reads back the wait whichever form was sent (see ``FORMS``)."""

from toolchaos.fake_tools._retry import ANTHROPIC, EPOCH, FORMS, OPENAI, SECONDS, duration, headers, wait

__all__ = ["ANTHROPIC", "EPOCH", "FORMS", "OPENAI", "SECONDS", "duration", "headers", "wait"]
