"""The offline peak study (issue 45 item 2): `python -m bench.peaks`, `make bench-peaks`.

predictors.py holds the formulas (pure functions a scheduler can reuse), study.py the pods,
placements and forecasts, run.py the scores and the rules that pick a predictor, __main__.py
the command line and the result, plot.py the picture. docs/peaks.md says what it measured.
"""
