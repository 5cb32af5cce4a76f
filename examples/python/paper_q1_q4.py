"""The IPA paper's queries Q1-Q4 (Lee & Chung 2020, Tables 9-12) in Python: the NPS demo
data, an IPA release at epsilon = 1, each query on the original next to the release, and
each query's relative L1 error. Run from the repository's root (it reads sql/)."""
import re

import datafusion
import dfanon

ctx = datafusion.SessionContext()
dfanon.register(ctx, access="owner")
ctx.from_arrow(dfanon.sql(ctx, "SELECT * FROM nps_demo()").to_arrow_table(), "nps")
dfanon.sql(ctx, open("sql/nps_hierarchies.sql").read())  # nps_hierarchy_<column> views
ipa = dict(method="ipa", qi="age, sex, los, surgery, location", informative="disease", epsilon=1.0)
release = dfanon.anonymize(ctx, "nps", **ipa)
print(release.limit(3).to_pandas(), "\nlevels:", dfanon.metadata(ctx, "nps", **ipa)["levels"])
ctx.register_table("released", release)  # the evaluator reads the release and its means
ctx.register_table("means", dfanon.call(ctx, "anonymize_interval_means", "nps", **ipa))
ctx.sql("CREATE VIEW releases AS SELECT 'ipa' AS release, * FROM released WHERE disease LIKE 'I6%'")
ctx.sql("CREATE VIEW release_means AS SELECT 'ipa' AS release, column_name, label, mean FROM means")
paper = open("sql/paper_q1_q4.sql").read()
dfanon.sql(ctx, re.search(r"@evaluator begin(.*)-- @evaluator end", paper, re.S)[1])
compare = dfanon.sql(ctx, "SELECT * FROM paper_compare").to_pandas()
for query, rows in compare.groupby("query"):
    table = rows.pivot_table(index="age_group", values=["original", "estimate"]).round(1)
    error = (table.original - table.estimate).abs().sum() / table.original.sum()
    print(f"\n{query}: relative L1 error {error:.3f}\n{table[['original', 'estimate']]}")
