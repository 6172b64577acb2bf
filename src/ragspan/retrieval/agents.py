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

One step per call the model saw: a retriever run with a retriever run among its ancestors
(LangChain's ``parent_run_id`` chain over every run the handler sees; LlamaIndex's span
parents, recorded by a span handler) is folded into the outermost one, whose results are
what reached the agent (wrapping retrievers: ensemble, compression, multi-query, fusion,
router; LlamaIndex's ``retrieve`` > ``_retrieve``). With LlamaIndex, a rerank that is not
inside a retriever (``ReRankEndEvent``: a node postprocessor of a query engine) replaces
the results of the step it follows with its nodes. The run's report counts both
(``nested_calls_folded``, ``reranked_steps``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from msgspec import UNSET

from ragspan.base.errors import InputError, UsageError
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import EvalQuery
from ragspan.io.runs.anchoring import Anchor
from ragspan.records.run_rows import RunRow, RunStep
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


@dataclass
class Folded:
    """What recording one question's calls folded: nested retriever calls, reranked steps."""

    nested: int = 0
    reranked: int = 0


def agent_calls(obj: Any, query: EvalQuery, id_key: str | None = None,
                folded: Folded | None = None) -> list[Call]:
    """Run the agent on ``query`` and return the retriever calls the model saw, in order."""
    folded = folded if folded is not None else Folded()
    if _langchain_agent(obj):
        return _langchain_calls(obj, query.query, id_key, folded)
    return _llamaindex_calls(obj, query.query, id_key, folded)


def _inside(run: Any, parents: dict[Any, Any], retrievers: set[Any]) -> bool:
    """Whether a run (or span) has a retriever run among its ancestors."""
    seen = {run}
    up = parents.get(run)
    while up is not None and up not in seen:
        if up in retrievers:
            return True
        seen.add(up)
        up = parents.get(up)
    return False


def _langchain_calls(obj: Any, question: str, id_key: str | None,
                     folded: Folded) -> list[Call]:
    from langchain_core.callbacks import BaseCallbackHandler

    started: dict[Any, tuple[int, str | None]] = {}
    parents: dict[Any, Any] = {}
    retrievers: set[Any] = set()
    ended: list[tuple[int, str | None, list[Raw]]] = []

    class Steps(BaseCallbackHandler):  # LangChain's callback signatures: arguments unused
        def _run(self, run_id: Any, parent_run_id: Any) -> None:
            parents[run_id] = parent_run_id

        def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any,
                           parent_run_id: Any = None, **kwargs: Any) -> None:  # noqa: ARG002
            self._run(run_id, parent_run_id)

        def on_tool_start(self, serialized: Any, input_str: Any, *, run_id: Any,
                          parent_run_id: Any = None, **kwargs: Any) -> None:  # noqa: ARG002
            self._run(run_id, parent_run_id)

        def on_llm_start(self, serialized: Any, prompts: Any, *, run_id: Any,
                         parent_run_id: Any = None, **kwargs: Any) -> None:  # noqa: ARG002
            self._run(run_id, parent_run_id)

        def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: Any,
                                parent_run_id: Any = None, **kwargs: Any) -> None:  # noqa: ARG002
            self._run(run_id, parent_run_id)

        def on_retriever_start(self, serialized: Any, query: str, *, run_id: Any,
                               parent_run_id: Any = None, **kwargs: Any) -> None:  # noqa: ARG002
            self._run(run_id, parent_run_id)
            retrievers.add(run_id)
            started[run_id] = (len(started), query)

        def on_retriever_end(self, documents: Any, *, run_id: Any, **kwargs: Any) -> None:  # noqa: ARG002
            if _inside(run_id, parents, retrievers):
                folded.nested += 1
                return
            order, query = started.get(run_id, (len(started), None))
            ended.append((order, query, langchain_raw(documents, id_key)))

    obj.invoke(question, config={"callbacks": [Steps()]})
    return [(query, raw) for _, query, raw in sorted(ended, key=lambda x: x[0])]


def _llamaindex_calls(obj: Any, question: str, id_key: str | None,
                      folded: Folded) -> list[Call]:
    from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined, unused-ignore]
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler
    from llama_index.core.instrumentation.events.rerank import ReRankEndEvent
    from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent
    from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler
    from llama_index.core.retrievers import BaseRetriever

    calls: list[Call] = []
    parents: dict[Any, Any] = {}
    retrievers: set[Any] = set()

    class Spans(SimpleSpanHandler):  # type: ignore[misc, unused-ignore]
        def new_span(self, id_: str, bound_args: Any, instance: Any = None,
                     parent_span_id: Any = None, tags: Any = None,
                     **kwargs: Any) -> Any:
            parents[id_] = parent_span_id
            if isinstance(instance, BaseRetriever):
                retrievers.add(id_)
            return super().new_span(id_, bound_args, instance, parent_span_id, tags,
                                    **kwargs)

    class Steps(BaseEventHandler):  # type: ignore[misc, unused-ignore]
        @classmethod
        def class_name(cls) -> str:
            return "RagspanSteps"

        def handle(self, event: Any, **kwargs: Any) -> None:
            span = getattr(event, "span_id", None)
            if isinstance(event, RetrievalEndEvent):
                if _inside(span, parents, retrievers):
                    folded.nested += 1
                    return
                asked = event.str_or_query_bundle
                text = asked if isinstance(asked, str) else getattr(asked, "query_str", None)
                calls.append((text, llamaindex_raw(event.nodes, id_key)))
            elif isinstance(event, ReRankEndEvent) and calls and \
                    span not in retrievers and not _inside(span, parents, retrievers):
                calls[-1] = (calls[-1][0], llamaindex_raw(event.nodes, id_key))
                folded.reranked += 1

    dispatcher = get_dispatcher()
    handler, spans = Steps(), Spans()
    dispatcher.add_event_handler(handler)
    dispatcher.add_span_handler(spans)
    try:
        (obj.query if callable(getattr(obj, "query", None)) else obj.chat)(question)
    finally:
        dispatcher.event_handlers.remove(handler)
        dispatcher.span_handlers.remove(spans)
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
    folded = Folded()
    for n, q in enumerate(queries, start=1):
        t0 = time.perf_counter()
        try:
            calls = agent_calls(obj, q, id_key, folded)
        except (InputError, UsageError):
            raise
        except Exception as exc:  # the user's agent failed: say where, not a traceback
            raise InputError(f"query '{q.id}': the agent raised {type(exc).__name__}: "
                             f"{exc}") from None
        latency = (time.perf_counter() - t0) * 1000.0
        steps = [RunStep(query=UNSET if asked is None else asked,
                         retrieved=span_items(q, raw, corpus, anchor, depth, id_key, True,
                                              f"steps[{j}].retrieved"))
                 for j, (asked, raw) in enumerate(calls)]
        rows.append(RunRow(id=q.id, steps=steps or [RunStep(retrieved=[])],
                           latency_ms=round(latency, 3), placed=anchor.records.get(q.id, UNSET)))
        latencies.append(latency)
        if progress:
            progress("querying", n, len(queries))
    return UserRun("span", rows, [], anchor.summary(), latencies,
                   {"nested_calls_folded": folded.nested, "reranked_steps": folded.reranked})
