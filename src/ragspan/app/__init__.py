"""One module per subcommand: read the inputs, call the pure core, return the report.

``score``, ``compare``, ``convert``, ``validate``, ``validate_report``, ``adapt``,
``import_benchmark`` (``ragspan import ...``), ``leakage``, ``overlap``, ``run_retriever``,
``metrics`` (a listing of the registry: no input, no envelope);
``output`` writes a command's result (report and files, all or none) and prints it;
``eval_build`` is what ``adapt`` and ``import`` share.

These are the only modules that build report envelopes (``ragspan.report.envelope``); ``cli.py``
imports nothing of ragspan but this package (and ``errors``, ``logs``). Importing the
package or a command module is light: heavy modules are imported inside ``run``.
"""
