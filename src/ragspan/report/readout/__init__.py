"""``ragspan report``: several score reports of one eval set as one document a developer
(``developer``) or a client (``client``) reads, in Markdown or as one self-contained HTML
file.

- ``levers``: the levers of a recorded pipeline configuration and the pairs isolating one;
- ``build``: the numbers (per configuration, against the baseline, the lever backlog);
- ``developer`` and ``client``: those numbers as a ``document``; ``svg``: its two plots.
"""
