# Publish reads only the analysis and graded files (and the raw manifest): it knows no suite.
# It writes everything a reader opens, in one job (`sealedeval publish`): result.json,
# report.md, the scorecards, every figure, report.html and report.pdf. Each figure is drawn once
# (the same SVG bytes go into results/figures/ and inline into report.html), by `threads`
# forked processes while the job reads the samples; a figure's bytes depend only on its spec.
# Separate figures and pdf jobs each paid the start-up and re-read result.json, and report.html
# drew every figure a second time (benchmarks/analysis.py).
# --allow-incomplete: a result NOT AS SEALED is written with every report saying so (a failed
# job's outputs would be deleted, leaving the reader nothing that says why); the build then ends
# with that line and exit 1 (main.smk's onsuccess, workflow/preflight.end_build).
rule publish:
    input:
        analyses=expand("results/analysis/{suite}.json", suite=SUITES),
        graded=expand("results/graded/{suite}.parquet", suite=SUITES),
        runs=all_run_markers,
    output:
        result="results/result.json",
        report="results/report.md",
        # One self-contained page: summary, sections, inline SVG figures, every sample.
        html="results/report.html",
        pdf="results/report.pdf",
        # Each suite decides its scorecard files (publish.scorecards): a directory output.
        scorecards=directory("results/scorecards"),
        # PNG + SVG per figure: every figure has exactly one producing rule, this one.
        figures=directory("results/figures"),
    log:
        "logs/publish.log",
    threads: 2
    params:
        config=CONFIG_ARGS,
        suite_configs=all_suite_configs,
    shell:
        "sealedeval --log {log} publish --allow-incomplete --jobs {threads} {params.config}"
