"""The shapes a model must answer in: pydantic models whose JSON schema is sent with the request.

Loaded on first use (``core.llm``'s face imports this module when ``SummaryReply`` is first asked
for): importing pydantic and building a model costs about 0.1 s, which a process that never
summarises (a recall, an MCP server's reads) would otherwise pay at start-up.
"""

from __future__ import annotations

import pydantic

from core.llm.structured import strip_think


class SummaryReply(pydantic.BaseModel):
    """A summary: the one shape every summarizer (LOG.md, LCM, the session handoff) asks for."""

    model_config = pydantic.ConfigDict(extra="ignore")

    summary: str = pydantic.Field(min_length=1, description="The summary, as Markdown text.")

    @pydantic.field_validator("summary")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = strip_think(value).strip()
        if not value:
            raise ValueError("the summary is blank")
        return value
