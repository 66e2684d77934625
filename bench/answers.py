"""Answer quality on the sample corpus, and the calibration of the not-found threshold.

    .venv/bin/python bench/answers.py [--data-dir DIR] [--calibrate] [--json OUT]

Questions: the evaluation set in examples/eval/sample (answerable, each with its evidence
string and often its page) and bench/unanswerable.jsonl (about things no document mentions).
The sample corpus is ingested through the project's ingest into DIR (a temporary folder by
default; an already ingested DIR is reused).

The model is the configured endpoint when RAG_ASSETS_LLM_BASE_URL and RAG_ASSETS_LLM_MODEL
are set, otherwise the local OpenAI-compatible stub of the tests, scripted to answer with
the text of source [1]: with the stub the figures measure retrieval, routing and
the gate, not a model's wording. Per question set:

- answered: share of answerable questions answered (not "not found", not rejected);
- value: the evidence string appears in the answer text;
- page: a citation's pages hold the evidence page (questions that give one);
- not found: share of unanswerable questions answered "not found", and model calls there.

`--calibrate` prints, for thresholds around the default, the share of answerable questions
that pass the evidence gate and the share of unanswerable ones it stops.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from dagster import DagsterInstance

from rag_assets.llm.client import LLMClient
from rag_assets.llm.settings import LLMSettings
from rag_assets.retrieval.answer import Answer, answer, model_client
from rag_assets.retrieval.evaluation.sets import load_eval_sets
from rag_assets.retrieval.grounding import sentences
from rag_assets.retrieval.relevance import NOT_FOUND_THRESHOLD
from rag_assets.retrieval.tools.toolbox import fold, open_toolbox
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "examples" / "corpus"
EVAL = ROOT / "examples" / "eval" / "sample"
UNANSWERABLE = Path(__file__).resolve().parent / "unanswerable.jsonl"
THRESHOLDS = [round(0.20 + 0.025 * i, 3) for i in range(13)]
_FIRST_SOURCE = re.compile(r"^\[1\] \([^\n]*\)\n(.*?)\n\n(?:\[2\] \(|Question: )", re.DOTALL | re.M)


def ensure_ingested(data_dir: Path) -> Settings:
    settings = Settings(data_dir=data_dir, template="auto")
    if not (settings.asset_storage_root and Path(settings.asset_storage_root).exists()):
        outcomes = ingest(settings, [CORPUS], instance=DagsterInstance.ephemeral())
        failed = [o.summary() for o in outcomes if not o.success]
        if failed:
            sys.exit(f"ingest failed: {failed}")
    return settings


def stub_answer(request) -> object:
    """The scripted model: source [1]'s text, every sentence cited."""
    from rag_assets_tests.support.openai_stub import Behaviour

    if request.tool_names:
        return Behaviour(text="")
    match = _FIRST_SOURCE.search(request.text)
    if not match:
        return Behaviour(text=request.text.rsplit("\n", 1)[-1])
    body = " ".join(match.group(1).split())
    return Behaviour(text=" ".join(f"{s.rstrip('.。')} [1]." for s in sentences(body)))


def run(settings: Settings, client: LLMClient | None, threshold: float) -> dict:
    answerable = [q for s in load_eval_sets(EVAL) for q in s.questions]
    unanswerable = [json.loads(line) for line in UNANSWERABLE.read_text().splitlines() if line]
    rows = []
    with open_toolbox(settings) as box:
        for q in answerable:
            result = answer(q.question, box, client, threshold=threshold)
            rows.append(_score(q.id, True, result, q.targets[0].evidence, q.targets[0].page))
        for q in unanswerable:
            result = answer(q["question"], box, client, threshold=threshold)
            rows.append(_score(q["id"], False, result, [], None))
    return {"rows": rows, "summary": _summary(rows)}


def _score(
    qid: str, answerable: bool, result: Answer, evidence: list[str], page: int | None
) -> dict:
    text = fold(result.answer)
    pages = [(c.page_start, c.page_end or c.page_start) for c in result.citations if c.page_start]
    return {
        "id": qid,
        "answerable": answerable,
        "status": result.status,
        "evidence_score": result.evidence.score,
        "unknown_names": result.evidence.unknown_names,
        "value": bool(evidence) and all(fold(e) in text for e in evidence),
        "page": None if page is None else any(a <= page <= b for a, b in pages),
        "model_calls": result.model_calls,
    }


def _summary(rows: list[dict]) -> dict:
    yes = [r for r in rows if r["answerable"]]
    no = [r for r in rows if not r["answerable"]]
    paged = [r for r in yes if r["page"] is not None]
    not_found = [r for r in no if r["status"] == "not_found"]
    return {
        "answerable": len(yes),
        "answered": sum(r["status"] in ("answered", "no_model") for r in yes) / len(yes),
        "value": sum(r["value"] for r in yes) / len(yes),
        "page": sum(r["page"] for r in paged) / len(paged) if paged else None,
        "unanswerable": len(no),
        "not_found": len(not_found) / len(no),
        "model_calls_on_not_found": sum(r["model_calls"] for r in not_found),
    }


def calibrate(rows: list[dict]) -> list[dict]:
    table = []
    for threshold in THRESHOLDS:
        passes = [not r["unknown_names"] and r["evidence_score"] >= threshold for r in rows]
        yes = [p for p, r in zip(passes, rows, strict=True) if r["answerable"]]
        no = [not p for p, r in zip(passes, rows, strict=True) if not r["answerable"]]
        table.append(
            {
                "threshold": threshold,
                "answerable_pass": sum(yes) / len(yes),
                "unanswerable_stopped": sum(no) / len(no),
            }
        )
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--threshold", type=float, default=NOT_FOUND_THRESHOLD)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="answers-bench-"))
    settings = ensure_ingested(data_dir)
    client = model_client(settings)
    if client is not None:
        report = run(settings, client, args.threshold)
        model = f"endpoint model {client.settings.model}"
    else:
        from rag_assets_tests.support.openai_stub import serve_stub

        with serve_stub() as stub:
            stub.respond = stub_answer
            stub_client = LLMClient(LLMSettings(base_url=stub.base_url, model="stub"))
            report = run(settings, stub_client, args.threshold)
        model = "the scripted stub (the text of source [1])"
    summary = report["summary"]
    print(f"# model: {model}; threshold {args.threshold}")
    print(
        f"answerable {summary['answerable']}: answered {summary['answered']:.2f}, "
        f"value in answer {summary['value']:.2f}, cited page = evidence page {summary['page']:.2f}"
    )
    print(
        f"unanswerable {summary['unanswerable']}: not found {summary['not_found']:.2f}, "
        f"model calls on not found {summary['model_calls_on_not_found']}"
    )
    if args.calibrate:
        report["calibration"] = calibrate(report["rows"])
        print("threshold  answerable pass  unanswerable stopped")
        for row in report["calibration"]:
            print(
                f"{row['threshold']:9.3f}  {row['answerable_pass']:15.2f}  "
                f"{row['unanswerable_stopped']:20.2f}"
            )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
