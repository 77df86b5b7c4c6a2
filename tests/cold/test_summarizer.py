"""The LOG.md summarizer: seed 001's escalation and the deterministic extractive fallback."""

from __future__ import annotations

from core.errors import BackendUnavailableError
from core.memory.compaction.extractive import extractive_summary
from core.memory.files.log_format import LogEntry
from core.memory.compaction.summarizer import LogSummarizer, load_prompt, render_prompt


def entries() -> list[LogEntry]:
    ts = "2026-01-31T12:00:00.000Z"
    log = [LogEntry(n, ts, "TOOL_USE", f"routine tool call {n} returned 200 rows") for n in range(1, 60)]
    log += [
        LogEntry(60, ts, "ERROR", "KeyError: 'close' while computing returns"),
        LogEntry(61, ts, "USER_FEEDBACK", "Please report figures in EUR, not USD"),
        LogEntry(62, ts, "THOUGHT", "Decided to use adjusted close prices instead of raw close"),
        LogEntry(63, ts, "TOOL_USE", "save_fact preferred_currency=EUR", {"tool": "save_fact"}),
        LogEntry(64, ts, "NOW_UPDATE", "Writing the report", {"next_steps": ["Plot returns", "Send report"]}),
    ]
    return log


class Scripted:
    """A deterministic LLM backend: answers from a list and records the prompts it got."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_a_short_llm_summary_is_used_as_is():
    """A reply within 150% of the target is the summary, from the normal prompt."""
    llm = Scripted("The agent computed returns; user wants EUR.")
    result = LogSummarizer(llm, target_tokens=100).summarize(entries())
    assert (result.text, result.method) == ("The agent computed returns; user wants EUR.", "llm")
    assert "KeyError" in llm.prompts[0] and "{{" not in llm.prompts[0]


def test_an_oversize_reply_escalates_to_the_aggressive_prompt():
    """A reply over 150% of the target is retried once with the aggressive prompt."""
    llm = Scripted("word " * 1000, "- returns computed\n- EUR")
    result = LogSummarizer(llm, target_tokens=100).summarize(entries())
    assert result.method == "llm-aggressive" and result.text == "- returns computed\n- EUR"
    assert "AT MOST 100 tokens" in llm.prompts[1]


def test_two_oversize_replies_fall_back_to_an_extract_of_the_source_not_of_the_reply():
    """After two oversize replies the deterministic summary is built from the entries, not the LLM text."""
    llm = Scripted("blah " * 1000, "blah " * 1000)
    result = LogSummarizer(llm, target_tokens=100).summarize(entries())
    assert result.method == "deterministic"
    assert "blah" not in result.text and "KeyError" in result.text


def test_an_unreachable_backend_or_none_gives_the_deterministic_summary():
    """A BackendError from the LLM, or no LLM at all, yields the deterministic summary."""
    failing = Scripted(BackendUnavailableError("no server"))
    assert LogSummarizer(failing, 100).summarize(entries()).method == "deterministic"
    assert len(failing.prompts) == 1
    assert LogSummarizer(None, 100).summarize(entries()).method == "deterministic"


def test_extractive_summary_keeps_what_matters_within_budget():
    """Errors, user feedback, decisions, saved facts and the latest status survive; routine calls are cut."""
    text = extractive_summary(entries(), target_tokens=150)
    for needle in ("KeyError", "EUR, not USD", "Decided to use adjusted close",
                   "save_fact preferred_currency",
                   "Writing the report", "Plot returns"):
        assert needle in text
    assert text.count("routine tool call") < 10
    assert len(text) <= 150 * 4 * 1.5


def test_extractive_summary_is_never_empty():
    """Even with no entries, or only routine ones, the summary says what was compacted."""
    assert extractive_summary([], 50).strip()
    assert "seq 1-59" in extractive_summary(entries()[:59], 50)


def test_prompts_are_markdown_files_with_placeholders():
    """Both prompts live in core/memory/compaction/prompts/*.md and every placeholder is filled."""
    for name in ("log_summary", "log_summary_aggressive"):
        assert "{{entries}}" in load_prompt(name)
        rendered = render_prompt(name, entries()[:3], 80)
        assert "{{" not in rendered and "routine tool call 1" in rendered


def test_log_and_conversation_summaries_escalate_alike():
    """LOG.md compaction and LCM go normal -> aggressive -> deterministic through one escalation; a failing
    model gives LOG.md the deterministic summary and makes LCM's summary fail (its session stays
    untouched)."""
    import pytest

    from core.errors import SummarizerError
    from core.memory.compaction.escalation import summarize_escalating
    from core.memory.provider import SummarizeOptions
    from core.plugins.memory.lcm import LLMSummarizer

    prompts = ["normal", "aggressive"]
    oversize = Scripted("word " * 500, "word " * 500)
    made = summarize_escalating(oversize, prompts, 50, lambda: "extract")
    assert (made.text, made.method, oversize.prompts) == ("extract", "deterministic", prompts)
    assert summarize_escalating(Scripted("word " * 500, "short"), prompts, 50,
                                lambda: "x").method == "llm-aggressive"

    text = "\n".join(f"Line {n}: the deploy failed with error {n}. More detail follows here."
                     for n in range(40))
    options = SummarizeOptions(target_tokens=40)
    lcm = LLMSummarizer(Scripted("blah " * 400, "blah " * 400)).summarize(text, options)
    assert "blah" not in lcm and "Line 0" in lcm  # the extract of the source, as for LOG.md above
    failing = Scripted(BackendUnavailableError("no server"))
    with pytest.raises(SummarizerError):
        LLMSummarizer(failing).summarize(text, options)
    with pytest.raises(SummarizerError):
        summarize_escalating(Scripted(SummarizerError("down")), prompts, 50, lambda: "x")
    assert summarize_escalating(Scripted(SummarizerError("down")), prompts, 50, lambda: "x",
                                fallback_on_error=True).method == "deterministic"
