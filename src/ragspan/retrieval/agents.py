"""Agents you run (``run-retriever --retriever``): every retriever call an agent makes while
answering one question, recorded as a step of a run with steps (``io.runs.steps``).

- LangChain: any ``Runnable`` that is not itself a retriever (an agent executor, a graph, a
  chain, a ``RunnableLambda`` that calls retrievers) is invoked with the question and a
  callback handler; each retriever run it starts (``on_retriever_start``: the query) and ends
  (``on_retriever_end``: the documents) is a step, in the order the calls started.
- LlamaIndex: an object with ``query(str)`` (a query engine) or ``chat(str)`` (an agent) that
  is not a retriever is called with the question while an event handler listens on the
  instrumentation dispatcher; each ``RetrievalEndEvent`` (its query and nodes) is a step.

Documents and nodes become results as a retriever's do (``retrieval.user``). The agent's
answer is not read. A question the agent answered without a retriever call is one empty
step.
"""

from __future__ import annotations

import time
from typing import Any

from ragspan.base.errors import InputError, UsageError
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import EvalQuery
from ragspan.io.runs.anchoring import Anchor
from ragspan.retrieval.user import Raw, UserRun, langchain_raw, llamaindex_raw, span_items

Call = tuple[str | None, list[Raw]]  # (the step's query, its results)


def _langchain_agent(obj: Any) -> bool:
    try:
        from langchain_core.retrievers import BaseRetriever
        from langchain_core.runnables import Runnable
    except ImportError:
        return False
    return isinstance(obj, Runnable) and not isinstance(obj, BaseRetriever)


def _llamaindex_agent(obj: Any) -> bool:
    if callable(getattr(obj, "retrieve", None)):
        return False
    return callable(getattr(obj, "query", None)) or callable(getattr(obj, "chat", None))


def is_agent(obj: Any, framework: str = "auto") -> bool:
    """Whether ``obj`` is an agent whose retriever calls are recorded as steps. With a named
    ``framework`` (``--framework``), an agent of the other framework is a UsageError."""
    kind = "langchain" if _langchain_agent(obj) else \
        "llamaindex" if _llamaindex_agent(obj) else None
    if kind is not None and framework not in ("auto", kind):
        raise UsageError(f"--framework {framework}: the retriever is a {kind} agent "
                         f"({type(obj).__name__}); give --framework {kind} or auto")
    return kind is not None


def agent_calls(obj: Any, query: EvalQuery, id_key: str | None = None) -> list[Call]:
    """Run the agent on ``query`` and return its retriever calls in order."""
    if _langchain_agent(obj):
        return _langchain_calls(obj, query.query, id_key)
    return _llamaindex_calls(obj, query.query, id_key)


def _langchain_calls(obj: Any, question: str, id_key: str | None) -> list[Call]:
    from langchain_core.callbacks import BaseCallbackHandler

    started: dict[Any, tuple[int, str | None]] = {}
    ended: list[tuple[int, str | None, list[Raw]]] = []

    class Steps(BaseCallbackHandler):
        def on_retriever_start(self, serialized: Any, query: str, *, run_id: Any,
                               **kwargs: Any) -> None:
            started[run_id] = (len(started), query)

        def on_retriever_end(self, documents: Any, *, run_id: Any, **kwargs: Any) -> None:
            order, query = started.get(run_id, (len(started), None))
            ended.append((order, query, langchain_raw(documents, id_key)))

    obj.invoke(question, config={"callbacks": [Steps()]})
    return [(query, raw) for _, query, raw in sorted(ended, key=lambda x: x[0])]


def _llamaindex_calls(obj: Any, question: str, id_key: str | None) -> list[Call]:
    from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler
    from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent

    calls: list[Call] = []

    class Steps(BaseEventHandler):
        @classmethod
        def class_name(cls) -> str:
            return "RagspanSteps"

        def handle(self, event: Any, **kwargs: Any) -> None:
            if isinstance(event, RetrievalEndEvent):
                asked = event.str_or_query_bundle
                text = asked if isinstance(asked, str) else getattr(asked, "query_str", None)
                calls.append((text, llamaindex_raw(event.nodes, id_key)))

    dispatcher = get_dispatcher()
    handler = Steps()
    dispatcher.add_event_handler(handler)
    try:
        (obj.query if callable(getattr(obj, "query", None)) else obj.chat)(question)
    finally:
        dispatcher.event_handlers.remove(handler)
    return calls


def run_agent(obj: Any, queries: list[EvalQuery], corpus: Corpus, progress: Any = None,
              depth: int | None = None, id_key: str | None = None) -> UserRun:
    """Run the agent ``obj`` on every query: a span row with ``steps``, one per retriever
    call (each call's results checked or placed as a retriever's are, repeats dropped inside
    a call, cut at ``depth`` per call). The agent's own failure is an error naming the
    query."""
    anchor = Anchor(corpus, {q.id: q.doc_id for q in queries}, align=True,
                    suggest_flags=False)
    rows, latencies = [], []
    for n, q in enumerate(queries, start=1):
        t0 = time.perf_counter()
        try:
            calls = agent_calls(obj, q, id_key)
        except (InputError, UsageError):
            raise
        except Exception as exc:  # the user's agent failed: say where, not a traceback
            raise InputError(f"query '{q.id}': the agent raised {type(exc).__name__}: "
                             f"{exc}") from None
        latency = (time.perf_counter() - t0) * 1000.0
        steps = []
        for j, (asked, raw) in enumerate(calls):
            step: dict[str, Any] = {"retrieved": span_items(
                q, raw, corpus, anchor, depth, id_key, True, f"steps[{j}].retrieved")}
            if asked is not None:
                step = {"query": asked, **step}
            steps.append(step)
        row: dict[str, Any] = {"id": q.id, "steps": steps or [{"retrieved": []}],
                               "latency_ms": round(latency, 3)}
        if q.id in anchor.records:
            row["placed"] = anchor.records[q.id]
        rows.append(row)
        latencies.append(latency)
        if progress:
            progress("querying", n, len(queries))
    return UserRun("span", rows, [], anchor.summary() or {}, latencies)
