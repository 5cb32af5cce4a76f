-- The main job on the embedded demo data:
--   generate NPS-shaped data -> Parquet -> IPA release -> the paper's Q1-Q4 on original vs release.
-- Run with:  cargo run --release -p dfanon -- -f sql/nps_hierarchies.sql sql/demo.sql

-- 1. 1,361,000 synthetic patients, written to Parquet and read back as the source table.
COPY (SELECT * FROM nps_demo()) TO 'out/nps.parquet' STORED AS PARQUET;
CREATE EXTERNAL TABLE nps STORED AS PARQUET LOCATION 'out/nps.parquet';
SELECT COUNT(*) AS patients, COUNT(DISTINCT disease) AS diseases FROM nps;

-- 2. Hierarchies: sql/nps_hierarchies.sql (run before this file) creates nps_hierarchy_<column>.

-- 3. The IPA release over the full 256-node lattice, epsilon = 1 (the default split
--    0.1/0.3/0.3/0.25/0.05): the node with the best expected information loss on the true
--    class sizes is chosen by the exponential mechanism (node_score => 'utility', the
--    default), then perturbed once; counterfeit values come from a noisy histogram of the
--    diseases (counterfeit_values => 'marginal'), and each released interval of age and
--    length of stay gets a noisy mean (anonymize_interval_means). The release states what
--    it is for: Q1-Q4 group by 5-year age bands, sex, surgery and length of stay
--    (workload: the node choice keeps those columns as fine as the queries need), and the
--    counterfeit diseases are drawn per age label (counterfeit_by). Over 50 draws the 95th
--    percentile of every query's error is below the paper's (docs/EVALUATION.md).
CREATE TABLE released AS
  SELECT * FROM anonymize('nps', method => 'ipa',
      qi => 'age, sex, los, surgery, location', informative => 'disease',
      epsilon => 1.0, suppression_threshold => 2,
      workload => 'age:5, sex, surgery, los', counterfeit_by => 'age');
SELECT * FROM anonymize_metadata('nps', method => 'ipa',
      qi => 'age, sex, los, surgery, location', informative => 'disease',
      epsilon => 1.0, suppression_threshold => 2,
      workload => 'age:5, sex, surgery, los', counterfeit_by => 'age')
  WHERE key IN ('levels', 'node_score', 'workload', 'epsilon', 'score_sensitivity', 'released_rows', 'seeded', 'dropped_columns');
SELECT * FROM released LIMIT 5;
SELECT * FROM anonymize_interval_means('nps', method => 'ipa',
      qi => 'age, sex, los, surgery, location', informative => 'disease',
      epsilon => 1.0, suppression_threshold => 2,
      workload => 'age:5, sex, surgery, los', counterfeit_by => 'age')
  WHERE column_name = 'los';
-- The release written to Parquet, from the same call (the same cached draw, charged once):
-- a COPY of a release writes its guarantee card beside it, out/released.parquet.manifest.json
-- (method, epsilon and the ledger entry, hierarchy fingerprints, what is proven and what not).
COPY (SELECT * FROM anonymize('nps', method => 'ipa',
      qi => 'age, sex, los, surgery, location', informative => 'disease',
      epsilon => 1.0, suppression_threshold => 2,
      workload => 'age:5, sex, surgery, los', counterfeit_by => 'age')) TO 'out/released.parquet' STORED AS PARQUET;

-- 4. Q1 (male, no surgery, stroke; per 5-year age group) on the original data.
--    Row label L covers ages [L-5, L-1], as in the paper's Table 9.
SELECT FLOOR(age / 5) * 5 + 5 AS age_group, COUNT(*) AS original
FROM nps
WHERE sex = 'M' AND surgery = 'N' AND disease LIKE 'I6%'
GROUP BY 1 ORDER BY 1;

-- 5. Q1-Q4 on the original next to the release, with the evaluator of sql/paper_q1_q4.sql
--    (an age interval is spread uniformly over its ages; docs/METHODS.md §1.12.2). The
--    section between the markers is a copy of that file's (tests/integration/paper_evaluator.rs checks).
CREATE TABLE releases AS SELECT 'ipa' AS release, * FROM released WHERE disease LIKE 'I6%';
CREATE TABLE release_means AS
  SELECT 'ipa' AS release, column_name, label, mean FROM anonymize_interval_means('nps',
      method => 'ipa', qi => 'age, sex, los, surgery, location', informative => 'disease',
      epsilon => 1.0, suppression_threshold => 2,
      workload => 'age:5, sex, surgery, los', counterfeit_by => 'age');

-- @evaluator begin
-- Needs tables nps (the original), releases(release, age, sex, los, surgery, location,
-- disease) holding the stroke rows of one or more releases, and release_means(release,
-- column_name, label, mean) holding the interval means a release publishes
-- (anonymize_interval_means; none for releases read by midpoints).

-- The rows of Tables 9-12.
CREATE OR REPLACE VIEW paper_rows AS
  SELECT 'Q1' AS query, value AS age_group FROM generate_series(5, 90, 5)
  UNION ALL SELECT 'Q2', value FROM generate_series(5, 90, 5)
  UNION ALL SELECT 'Q3', value FROM generate_series(10, 90, 10)
  UNION ALL SELECT 'Q4', value FROM generate_series(10, 90, 10);

-- Q1-Q4 on the original data (the paper's SQL, with the tables' row labels).
CREATE OR REPLACE VIEW paper_original AS
  SELECT 'Q1' AS query, CAST(FLOOR(age / 5) * 5 + 5 AS BIGINT) AS age_group, CAST(COUNT(*) AS DOUBLE) AS value
  FROM nps WHERE sex = 'M' AND surgery = 'N' AND disease LIKE 'I6%' GROUP BY 2
  UNION ALL
  SELECT 'Q2', CAST(FLOOR(age / 5) * 5 + 5 AS BIGINT), CAST(COUNT(*) AS DOUBLE)
  FROM nps WHERE sex = 'F' AND surgery = 'N' AND disease LIKE 'I6%' GROUP BY 2
  UNION ALL
  SELECT 'Q3', CAST(FLOOR(age / 10) * 10 + 10 AS BIGINT), AVG(los)
  FROM nps WHERE sex = 'M' AND surgery = 'N' AND disease LIKE 'I6%' GROUP BY 2
  UNION ALL
  SELECT 'Q4', CAST(FLOOR(age / 10) * 10 + 10 AS BIGINT), AVG(los)
  FROM nps WHERE sex = 'F' AND surgery = 'N' AND disease LIKE 'I6%' GROUP BY 2;

-- Q1-Q4 estimated from each release.
CREATE OR REPLACE VIEW paper_estimate AS
  WITH weighted AS (
    SELECT releases.release, age,
           CASE sex WHEN 'M' THEN 1.0 WHEN '*' THEN 0.5 ELSE 0.0 END
             * CASE surgery WHEN 'N' THEN 1.0 WHEN '*' THEN 0.5 ELSE 0.0 END AS w_male,
           CASE sex WHEN 'F' THEN 1.0 WHEN '*' THEN 0.5 ELSE 0.0 END
             * CASE surgery WHEN 'N' THEN 1.0 WHEN '*' THEN 0.5 ELSE 0.0 END AS w_female,
           COALESCE(m.mean, gen_mid(los)) AS los_mid
    FROM releases LEFT JOIN release_means m
      ON m.release = releases.release AND m.column_name = 'los' AND m.label = releases.los
    WHERE disease LIKE 'I6%'),
  five AS (
    SELECT release, w_male, w_female, unnest(gen_spread(age, 5, 0, 89)) AS s FROM weighted),
  ten AS (
    SELECT release, w_male, w_female, los_mid, unnest(gen_spread(age, 10, 0, 89)) AS s
    FROM weighted WHERE los_mid IS NOT NULL)
  SELECT release, 'Q1' AS query, s['group'] + 5 AS age_group, SUM(w_male * s['weight']) AS value
  FROM five GROUP BY 1, 3
  UNION ALL
  SELECT release, 'Q2', s['group'] + 5, SUM(w_female * s['weight']) FROM five GROUP BY 1, 3
  UNION ALL
  SELECT release, 'Q3', s['group'] + 10,
         SUM(w_male * s['weight'] * los_mid) / NULLIF(SUM(w_male * s['weight']), 0)
  FROM ten GROUP BY 1, 3
  UNION ALL
  SELECT release, 'Q4', s['group'] + 10,
         SUM(w_female * s['weight'] * los_mid) / NULLIF(SUM(w_female * s['weight']), 0)
  FROM ten GROUP BY 1, 3;

-- Original next to every release's estimate, one row per table row.
CREATE OR REPLACE VIEW paper_compare AS
  SELECT r.release, g.query, g.age_group,
         COALESCE(o.value, 0.0) AS original, COALESCE(e.value, 0.0) AS estimate
  FROM (SELECT DISTINCT release FROM releases) r
  CROSS JOIN paper_rows g
  LEFT JOIN paper_original o ON o.query = g.query AND o.age_group = g.age_group
  LEFT JOIN paper_estimate e
    ON e.release = r.release AND e.query = g.query AND e.age_group = g.age_group;

-- Relative L1 error of each query on each release.
CREATE OR REPLACE VIEW paper_error AS
  SELECT release, query, SUM(ABS(original - estimate)) / SUM(original) AS rel_l1
  FROM paper_compare GROUP BY release, query;
-- @evaluator end

SELECT query, age_group, ROUND(original, 1) AS original, ROUND(estimate, 1) AS released
FROM paper_compare WHERE query = 'Q1' ORDER BY age_group;
SELECT query, ROUND(rel_l1, 3) AS relative_l1_error FROM paper_error ORDER BY query;

-- 6. The data owner's report of this release: one HTML page with risk and utility before
--    and after, as pictures (owner-only; the same release, so nothing is drawn or charged).
SELECT * FROM anonymize_report('nps', method => 'ipa',
      qi => 'age, sex, los, surgery, location', informative => 'disease',
      epsilon => 1.0, suppression_threshold => 2,
      workload => 'age:5, sex, surgery, los', counterfeit_by => 'age', path => 'out/report.html');
SELECT releases, epsilon_spent FROM privacy_budget();
