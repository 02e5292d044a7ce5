"""The differential test: upstream kube-scheduler judges Ballast's filters, pod by pod.

- scenario: seeded random nodes, namespaces, volumes and pods (a feature table);
- upstream: kube-scheduler with a recording extender that reads its feasible set;
- ballast_side: Ballast's verdict from its own cache and default profile, on the same state;
- checker: an independent check of every placement Ballast makes (validity);
- runner: one seed, both phases; report: mismatches, compared and printed.

`python -m tests.differential --seed N [--pods M]` runs one seed on its own sandbox and prints
every mismatch; tests/integration/test_differential.py runs a fixed seed list in `make test`.
"""
