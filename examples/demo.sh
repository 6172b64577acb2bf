#!/usr/bin/env bash
# The main job on the bundled CUAD example: run a baseline and a candidate retrieval pipeline,
# score both, and gate the candidate with `ragspan compare`. Every artifact goes to demo-out/.
# Embedded defaults only: exact index, packaged MiniLM, embedding cache in ~/.cache/ragspan
# (or $RAGSPAN_CACHE_DIR), so a second run embeds nothing.
set -uo pipefail
PY=${1:-python3}
RAGSPAN=("$PY" -m ragspan)
EX=examples/cuad
OUT=demo-out
mkdir -p "$OUT"
start=$(date +%s)
for pair in baseline:dense-fixed candidate:hybrid-clause; do
  name=${pair%%:*}; config=${pair#*:}
  echo "== run-retriever: $name ($config) =="
  "${RAGSPAN[@]}" run-retriever --corpus "$EX/corpus.jsonl" --eval-set "$EX/eval.jsonl" \
    --config "examples/configs/$config.toml" --out "$OUT/run-$name.jsonl" \
    --chunks-out "$OUT/chunks-$name.jsonl" --report "$OUT/run-retriever-$name.json" \
    --format table > "$OUT/run-retriever-$name.txt" || exit $?
  "${RAGSPAN[@]}" -q validate --eval-set "$EX/eval.jsonl" --corpus "$EX/corpus.jsonl" \
    --chunks "$OUT/chunks-$name.jsonl" --out "$OUT/validate-$name.json" --format table \
    > "$OUT/validate-$name.txt" || exit $?
  "${RAGSPAN[@]}" -q score --eval-set "$EX/eval.jsonl" --run "$OUT/run-$name.jsonl" \
    --corpus "$EX/corpus.jsonl" --chunks "$OUT/chunks-$name.jsonl" --k 3 --k 5 --budget-grid \
    --out "$OUT/score-$name.json" --format table \
    > "$OUT/score-$name.txt" || exit $?
done
echo "== baseline score ==" && cat "$OUT/score-baseline.txt"
echo "== candidate score ==" && cat "$OUT/score-candidate.txt"
"${RAGSPAN[@]}" -q compare --baseline "$OUT/score-baseline.json" \
  --candidate "$OUT/score-candidate.json" --out "$OUT/compare.json" --format markdown \
  | tee "$OUT/compare.md"
code=${PIPESTATUS[0]}
# both configurations side by side, for a person: the report as one self-contained page
"${RAGSPAN[@]}" -q report "$OUT/score-baseline.json" "$OUT/score-candidate.json" \
  --out "$OUT/report.html" --format json > /dev/null || exit $?
echo
echo "side by side: $OUT/report.html"
echo "gate exit code: $code (0 pass, 4 fail); $(( $(date +%s) - start )) s; artifacts in $OUT/"
# the demo itself succeeds when the gate ran and decided (pass or fail)
[ "$code" -eq 0 ] || [ "$code" -eq 4 ]
