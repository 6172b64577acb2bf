"""One module per subcommand: read the inputs, call the pure core, return the report.

``score``, ``compare``, ``convert``, ``validate``, ``validate_report``, ``adapt``,
``import_benchmark`` (``ragspan import ...``), ``leakage``, ``overlap``, ``run_retriever``,
``metrics`` (a listing of the registry: no input, no envelope);
``output`` writes a command's result (report and files, all or none) and prints it;
``eval_build`` is what ``adapt`` and ``import`` share.

These are the only modules that build report envelopes (``ragspan.report.envelope``); ``cli/``
imports nothing of ragspan but this package (and ``errors``, ``logs``, ``options``), each
command's module only when that command runs. A command module imports the ragspan modules
it uses at its top; optional packages (torch, qdrant-client, pyarrow, scipy) load inside
the functions that need them.
"""
