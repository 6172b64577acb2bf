"""Print the reproduced Chroma chunking table beside the published one (percent).

Usage: python examples/chunking_table.py OUT   (after examples/reproduce_chunking.sh)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# Smith & Troynikov 2024, all-MiniLM-L6-v2: recall, precision, precision_omega, IoU (%)
PUBLISHED = {
    "recursive-250-125": ("Recursive 250 / 125", 78.7, 4.9, 21.9, 4.9),
    "tokentext-250-125": ("TokenText 250 / 125", 82.4, 3.6, 11.4, 3.5),
    "recursive-250-0": ("Recursive 250 / 0", 78.5, 5.4, 26.7, 5.4),
    "tokentext-250-0": ("TokenText 250 / 0", 77.1, 3.3, 16.4, 3.3),
    "recursive-200-0": ("Recursive 200 / 0", 75.7, 6.5, 31.2, 6.5),
    "tokentext-200-0": ("TokenText 200 / 0", 76.6, 4.1, 19.1, 4.1),
}


def main() -> None:
    out = Path(sys.argv[1])
    print("| chunker (tokens / overlap) | recall | precision | precision_Ω | IoU | "
          "complete grounding@5 | characters / query @5 | complete grounding@2000c |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for cfg, (label, *pub) in PUBLISHED.items():
        s = json.loads((out / f"score-{cfg}.json").read_text("utf-8"))["predicate"]["summary"]
        m = s["metrics"]
        got = (100 * m["chroma_recall@5"], 100 * m["chroma_precision@5"],
               100 * s["chunking"]["precision_omega"], 100 * m["iou@5"])
        cells = [f"{g:.1f} ({p:.1f})" for g, p in zip(got, pub)]
        print(f"| {label} | {' | '.join(cells)} | {m['complete_grounding@5']:.3f} | "
              f"{m['retrieved_chars@5']:,.0f} | {m['complete_grounding@2000c']:.3f} |")
    print("\nmeasured (published); recall, precision, precision_Ω and IoU in %")


if __name__ == "__main__":
    main()
