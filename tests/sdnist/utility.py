"""Scores a release against its source with SDNist's own code (the PyPI package `sdnist`,
2.4): its k-marginal score, propensity mean squared error and unique exact matches, for
`anonymize_utility`'s figures to be checked against (tests/integration/release_utility.rs).

    python utility.py SOURCE.csv RELEASE.csv OUT_DIR

Both files have a header and the same columns. Every column is coded the way
`anonymize_utility` codes it before its decision tree: the values of both tables, in numeric
order when every one is a number, else in text order. Prints one JSON object.
"""

import json
import sys

import numpy as np
import pandas as pd
import sdnist.report  # noqa: F401  (first: sdnist's metrics import its report package)
from sdnist.metrics.kmarginal import KMarginal
from sdnist.metrics.propensity import PropensityMSE
from sdnist.metrics.unique_exact_matches import unique_exact_matches


def order(values):
    try:
        return sorted(values, key=float)
    except ValueError:
        return sorted(values)


def main(source_csv, release_csv, out_dir):
    from pathlib import Path

    source = pd.read_csv(source_csv, dtype=str, keep_default_na=False)
    release = pd.read_csv(release_csv, dtype=str, keep_default_na=False)
    for column in source.columns:
        codes = {v: i for i, v in enumerate(order(set(source[column]) | set(release[column])))}
        source[column] = source[column].map(codes).astype(np.int64)
        release[column] = release[column].map(codes).astype(np.int64)

    k_marginal = KMarginal(source, release)
    k_marginal.compute_score()
    # The tree draws the order of the features at random (random_state None reads
    # numpy's global generator): seeded, the figure repeats.
    np.random.seed(0)
    propensity = PropensityMSE(source, release, Path(out_dir))
    pmse = propensity.compute_score()
    matched, matched_percent, unique, _ = unique_exact_matches(source, release)
    print(
        json.dumps(
            {
                "k_marginal": float(k_marginal.score),
                "pmse": float(pmse),
                "unique_exact_matches": int(matched),
                "unique_exact_match_percent": float(matched_percent),
                "unique_source_records": int(unique),
            }
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:4])
