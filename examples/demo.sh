#!/usr/bin/env bash
# The main job on the bundled CUAD example: score a baseline and a candidate span run, then
# gate the candidate with `ragspan compare`. Every artifact goes to demo-out/.
set -uo pipefail
PY=${1:-python3}
RAGSPAN=("$PY" -m ragspan)
EX=examples/cuad
OUT=demo-out
mkdir -p "$OUT"
for name in baseline candidate; do
  "${RAGSPAN[@]}" -q score --eval-set "$EX/eval.jsonl" --run "$EX/run-$name.jsonl" \
    --corpus "$EX/corpus.jsonl" --k 3 --k 5 --out "$OUT/score-$name.json" --format table \
    > "$OUT/score-$name.txt" || exit $?
done
echo "== baseline ==" && cat "$OUT/score-baseline.txt"
"${RAGSPAN[@]}" -q compare --baseline "$OUT/score-baseline.json" \
  --candidate "$OUT/score-candidate.json" --out "$OUT/compare.json" --format markdown \
  | tee "$OUT/compare.md"
code=${PIPESTATUS[0]}
echo
echo "gate exit code: $code (0 pass, 4 fail); artifacts in $OUT/"
# the demo itself succeeds when the gate ran and decided (pass or fail)
[ "$code" -eq 0 ] || [ "$code" -eq 4 ]
