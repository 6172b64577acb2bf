"""Real LangChain and LlamaIndex retrievers and agents over a small corpus of three
contracts, for ``tests/test_traces_real.py``: what each agent returned to its caller is
recorded (``SEEN``), the truth a trace must import to.

- ``lc_plain``: a chain that asks one keyword retriever;
- ``lc_two_steps``: a chain that asks the question, then a follow-up for the fee;
- ``lc_nested``: a chain over a wrapping retriever that calls two inner retrievers with its
  callbacks (as LangChain's ensemble and compression retrievers do) and passes on only the
  first's top result;
- ``li_nested``: a LlamaIndex query object over a fusion retriever of two inner ones;
- ``li_reranked``: a LlamaIndex query object whose retriever's results go through a node
  postprocessor that reranks (it dispatches LlamaIndex's rerank events, as its rerankers do)
  and keeps one.

Chunks carry their document and offset in their metadata as the frameworks' splitters write
them (LangChain ``doc_id``, ``source`` as a file path and ``start_index``; LlamaIndex
``doc_id``, ``start``, ``end``)."""

from __future__ import annotations

from typing import Any

TEXTS = {
    "msa": ("MASTER SERVICES AGREEMENT. This agreement is governed by the laws of the State "
            "of Delaware. Either party may terminate it on ninety days notice in writing."),
    "sow": ("STATEMENT OF WORK. The customer shall pay a monthly fee of ten thousand dollars "
            "within thirty days of each invoice. Late payments accrue interest."),
    "nda": ("MUTUAL NONDISCLOSURE AGREEMENT. Confidential information shall be kept secret "
            "for a term of two years after disclosure. Either party may disclose it by law."),
}
SIZE = 60
CHUNKS = [(d, s, t[s:s + SIZE]) for d, t in TEXTS.items() for s in range(0, len(t), SIZE)]
SEEN: dict[str, list[list[tuple[str, int, int]]]] = {}  # question -> steps -> spans


def _rank(query: str, docs: tuple[str, ...] | None = None) -> list[tuple[str, int, str]]:
    words = {w.strip(".,?").lower() for w in query.split() if len(w) > 3}
    scored = [(-len(words & {w.strip(".,").lower() for w in t.split()}), d, s, t)
              for d, s, t in CHUNKS if docs is None or d in docs]
    return [(d, s, t) for _, d, s, t in sorted(scored)]


def _span(d: str, s: int, t: str) -> tuple[str, int, int]:
    return (d, s, s + len(t))


# ---- LangChain ------------------------------------------------------------------------------

def _langchain() -> dict[str, Any]:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda

    class Keyword(BaseRetriever):
        k: int = 2
        docs: tuple[str, ...] | None = None

        def _get_relevant_documents(self, query: str, *,
                                    run_manager: CallbackManagerForRetrieverRun) -> list[Any]:
            return [Document(page_content=t, metadata={"doc_id": d,
                                                       "source": f"contracts/{d}.txt",
                                                       "start_index": s})
                    for d, s, t in _rank(query, self.docs)[:self.k]]

    class Wrapper(BaseRetriever):
        a: Any
        b: Any

        def _get_relevant_documents(self, query: str, *,
                                    run_manager: CallbackManagerForRetrieverRun) -> list[Any]:
            first = self.a.invoke(query, config={"callbacks": run_manager.get_child()})
            self.b.invoke(query, config={"callbacks": run_manager.get_child()})
            return first[:1]

    def seen(question: str, *steps: list[Any]) -> None:
        SEEN[question] = [[_span(doc.metadata["source"].split("/")[-1][:-4],
                                 doc.metadata["start_index"], doc.page_content)
                           for doc in step] for step in steps]

    plain = Keyword(k=2)

    def ask_plain(question: str) -> Any:
        got = plain.invoke(question)
        seen(question, got)
        return got

    def ask_twice(question: str) -> Any:
        first = plain.invoke(question)
        second = plain.invoke("monthly fee payments")
        seen(question, first, second)
        return first + second

    wrapper = Wrapper(a=Keyword(k=2, docs=("msa",)), b=Keyword(k=2, docs=("sow",)))

    def ask_nested(question: str) -> Any:
        got = wrapper.invoke(question)
        seen(question, got)
        return got

    return {"lc_plain": RunnableLambda(ask_plain), "lc_two_steps": RunnableLambda(ask_twice),
            "lc_nested": RunnableLambda(ask_nested)}


# ---- LlamaIndex -----------------------------------------------------------------------------

def _llamaindex() -> dict[str, Any]:
    from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
    from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    dispatcher = get_dispatcher(__name__)

    class Keyword(BaseRetriever):
        def __init__(self, docs: tuple[str, ...] | None = None, k: int = 2) -> None:
            super().__init__()
            self.docs, self.k = docs, k

        def _retrieve(self, query_bundle: QueryBundle) -> list[Any]:
            return [NodeWithScore(node=TextNode(text=t, id_=f"{d}:{s}", metadata={
                "doc_id": d, "start": s, "end": s + len(t)}), score=1.0 / (i + 1))
                for i, (d, s, t) in enumerate(_rank(query_bundle.query_str, self.docs)[:self.k])]

    class Fusion(BaseRetriever):
        def __init__(self, a: Any, b: Any) -> None:
            super().__init__()
            self.a, self.b = a, b

        def _retrieve(self, query_bundle: QueryBundle) -> list[Any]:
            return (self.a.retrieve(query_bundle) + self.b.retrieve(query_bundle))[:2]

    class KeepLast(BaseNodePostprocessor):
        """Reranks by putting the last first and keeps one (a stand-in model)."""

        def _postprocess_nodes(self, nodes: list[Any], query_bundle: Any = None) -> list[Any]:
            dispatcher.event(ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=1,
                                              model_name="keep-last"))
            out = list(reversed(nodes))[:1]
            dispatcher.event(ReRankEndEvent(nodes=out))
            return out

    def record(question: str, nodes: list[Any]) -> None:
        SEEN[question] = [[(n.node.metadata["doc_id"], n.node.metadata["start"],
                            n.node.metadata["end"]) for n in nodes]]

    class Engine:
        def __init__(self, retriever: Any, post: Any = None) -> None:
            self.retriever, self.post = retriever, post

        @dispatcher.span  # type: ignore[misc]
        def query(self, question: str) -> Any:
            nodes = self.retriever.retrieve(QueryBundle(question))
            if self.post is not None:
                nodes = self.post.postprocess_nodes(nodes, query_bundle=QueryBundle(question))
            record(question, nodes)
            return nodes

    return {"li_nested": Engine(Fusion(Keyword(("nda",)), Keyword(("msa",)))),
            "li_reranked": Engine(Keyword(None, 3), KeepLast())}


def __getattr__(name: str) -> Any:  # ``--retriever trace_agents:lc_nested`` and the tests
    made = (_langchain() if name.startswith("lc_") else _llamaindex()
            if name.startswith("li_") else None)
    if made is None or name not in made:
        raise AttributeError(name)
    return made[name]
