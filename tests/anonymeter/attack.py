"""Runs anonymeter's three evaluators on CSV tables and prints their figures as JSON.

Usage: attack.py ORI SYN CONTROL|- N_ATTACKS LINK_COLUMNS SECRET [MODE]

ORI, SYN and CONTROL are ';'-separated CSV files with a header and the same columns, every
value read as text (categorical), as anonymize_attack reads a generalized release.
LINK_COLUMNS is 'a,b|c,d'; SECRET names the inference's secret column (the others are
known). MODE is singling out's mode, multivariate (the default) or univariate (which, unlike
multivariate, ends when the table has few rows to single out). Each evaluator runs once;
numpy's global generator, which pandas draws the targets with, is seeded, so the targets
repeat (anonymeter's own generators for the naive baselines are not). The test
(tests/integration/release_attacks.rs) compares anonymize_attack's rates with these.
"""

import json
import sys
import warnings

import numpy as np
import pandas as pd
from anonymeter.evaluators import (
    InferenceEvaluator,
    LinkabilityEvaluator,
    SinglingOutEvaluator,
)


def read(path):
    return pd.read_csv(path, sep=";", dtype=str, keep_default_na=False)


def figures(evaluator):
    results = evaluator.results(confidence_level=0.95)
    risk = evaluator.risk(confidence_level=0.95)
    return {
        "success_rate": results.attack_rate.value,
        "success_error": results.attack_rate.error,
        "baseline_rate": results.baseline_rate.value,
        "control_rate": None if results.control_rate is None else results.control_rate.value,
        "risk": risk.value,
        "risk_low": risk.ci[0],
        "risk_high": risk.ci[1],
    }


def main():
    ori_path, syn_path, control_path, n, link, secret = sys.argv[1:7]
    mode = sys.argv[7] if len(sys.argv) > 7 else "multivariate"
    ori, syn = read(ori_path), read(syn_path)
    control = None if control_path == "-" else read(control_path)
    n = int(n)
    first, second = ([c.strip() for c in part.split(",")] for part in link.split("|"))
    known = [c for c in ori.columns if c != secret]
    out = {}
    warnings.simplefilter("ignore")
    np.random.seed(0)
    out["singling_out"] = figures(
        SinglingOutEvaluator(ori=ori, syn=syn, control=control, n_attacks=n, n_cols=3).evaluate(
            mode=mode
        )
    )
    out["linkability"] = figures(
        LinkabilityEvaluator(
            ori=ori, syn=syn, control=control, n_attacks=n, aux_cols=(first, second), n_neighbors=1
        ).evaluate(n_jobs=1)
    )
    out["inference"] = figures(
        InferenceEvaluator(
            ori=ori, syn=syn, control=control, aux_cols=known, secret=secret, n_attacks=n
        ).evaluate(n_jobs=1)
    )
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
