-- The IPA paper's real-world queries Q1-Q4 (Lee & Chung 2020, Tables 9-12) on the original
-- data and on releases, printed as the paper's tables with each query's relative L1 error
-- sum |original - estimate| / sum original.
-- Run with:  cargo run --release -p dfanon -- -f sql/nps_hierarchies.sql sql/paper_q1_q4.sql
--
-- Row labels follow the demo data (src/demo/nps/): in Tables 9-10 the row L counts ages
-- [L-5, L-1] (FLOOR(age/5)*5 + 5), in Tables 11-12 the row L averages ages [L-10, L-1].
--
-- Reading a release (the evaluator, docs/METHODS.md §1.12.2):
--   * an age interval is spread uniformly over the integers it covers, within the tables'
--     ages 0..89, and counted per 5-year (Q1, Q2) or 10-year (Q3, Q4) group: gen_spread();
--   * a length of stay is the mean the release publishes for its interval
--     (anonymize_interval_means, IPA by default), else its midpoint, gen_mid(); '*' has
--     neither and is left out of AVG;
--   * sex or surgery '*' (generalized or suppressed) matches each of its two values with
--     weight 1/2, so a record counts as w_sex * w_surgery * (its share of the age group);
--   * a group without any estimate is 0.

-- 1. The data: 1,361,000 synthetic NPS-shaped patients whose stroke statistics are the
--    paper's "Original" columns.
CREATE TABLE IF NOT EXISTS nps AS SELECT * FROM nps_demo();

-- 2. Releases, stroke rows only (the queries never look at other diseases):
--    IPA at epsilon = 1 (the defaults: utility node score, split 0.1/0.3/0.3/0.25/0.05 with
--    0.05 for the interval means, t = 2, counterfeit values from the noisy marginal),
--    optimal 10-anonymity with at most 5% suppression, and a DP histogram at epsilon = 1
--    over the node age=1, los=1, location=1. Only IPA publishes interval means.
CREATE TABLE releases AS
  SELECT 'ipa' AS release, * FROM anonymize('nps', method => 'ipa',
      qi => 'age, sex, los, surgery, location', informative => 'disease', epsilon => 1.0)
  WHERE disease LIKE 'I6%'
  UNION ALL
  SELECT 'kanon' AS release, * FROM anonymize('nps', method => 'kanon',
      qi => 'age, sex, los, surgery, location', informative => 'disease', k => 10)
  WHERE disease LIKE 'I6%'
  UNION ALL
  SELECT 'dp_histogram' AS release, * FROM anonymize('nps', method => 'dp_histogram',
      qi => 'age, sex, los, surgery, location', informative => 'disease', epsilon => 1.0,
      levels => 'age=1, sex=0, los=1, surgery=0, location=1')
  WHERE disease LIKE 'I6%';

CREATE TABLE release_means AS
  SELECT 'ipa' AS release, column_name, label, mean FROM anonymize_interval_means('nps',
      method => 'ipa', qi => 'age, sex, los, surgery, location', informative => 'disease',
      epsilon => 1.0);

SELECT key, value FROM anonymize_metadata('nps', method => 'ipa',
    qi => 'age, sex, los, surgery, location', informative => 'disease', epsilon => 1.0)
  WHERE key IN ('levels', 'released_rows');
SELECT key, value FROM anonymize_metadata('nps', method => 'kanon',
    qi => 'age, sex, los, surgery, location', informative => 'disease', k => 10)
  WHERE key IN ('levels', 'released_rows');

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

-- 3. Tables 9-12: age group | original | IPA | k-anonymization.
SELECT age_group AS "Age group (Table 9: Q1, male, count)", ROUND(MAX(original), 1) AS "Original",
       ROUND(MAX(CASE WHEN release = 'ipa' THEN estimate END), 1) AS "IPA",
       ROUND(MAX(CASE WHEN release = 'kanon' THEN estimate END), 1) AS "k-anonymization"
FROM paper_compare WHERE query = 'Q1' GROUP BY age_group ORDER BY age_group;

SELECT age_group AS "Age group (Table 10: Q2, female, count)", ROUND(MAX(original), 1) AS "Original",
       ROUND(MAX(CASE WHEN release = 'ipa' THEN estimate END), 1) AS "IPA",
       ROUND(MAX(CASE WHEN release = 'kanon' THEN estimate END), 1) AS "k-anonymization"
FROM paper_compare WHERE query = 'Q2' GROUP BY age_group ORDER BY age_group;

SELECT age_group AS "Age group (Table 11: Q3, male, mean stay)", ROUND(MAX(original), 1) AS "Original",
       ROUND(MAX(CASE WHEN release = 'ipa' THEN estimate END), 1) AS "IPA",
       ROUND(MAX(CASE WHEN release = 'kanon' THEN estimate END), 1) AS "k-anonymization"
FROM paper_compare WHERE query = 'Q3' GROUP BY age_group ORDER BY age_group;

SELECT age_group AS "Age group (Table 12: Q4, female, mean stay)", ROUND(MAX(original), 1) AS "Original",
       ROUND(MAX(CASE WHEN release = 'ipa' THEN estimate END), 1) AS "IPA",
       ROUND(MAX(CASE WHEN release = 'kanon' THEN estimate END), 1) AS "k-anonymization"
FROM paper_compare WHERE query = 'Q4' GROUP BY age_group ORDER BY age_group;

-- 4. Relative L1 error per query, next to the paper's own (computed from its Tables 9-12).
SELECT e.query,
       ROUND(MAX(CASE WHEN release = 'ipa' THEN rel_l1 END), 3) AS ipa,
       MAX(p.ipa) AS paper_ipa,
       ROUND(MAX(CASE WHEN release = 'kanon' THEN rel_l1 END), 3) AS kanon,
       MAX(p.kanon) AS paper_kanon,
       ROUND(MAX(CASE WHEN release = 'dp_histogram' THEN rel_l1 END), 3) AS dp_histogram
FROM paper_error e
JOIN (VALUES ('Q1', 0.128, 0.500), ('Q2', 0.148, 0.345), ('Q3', 0.375, 3.145), ('Q4', 0.326, 2.705))
  AS p(query, ipa, kanon) ON p.query = e.query
GROUP BY e.query ORDER BY e.query;

-- 5. Information loss (NCP + EMD + Rate, and its mean: the paper's scale) of each release.
SELECT * FROM anonymize_information_loss('nps', method => 'ipa',
    qi => 'age, sex, los, surgery, location', informative => 'disease', epsilon => 1.0)
UNION ALL
SELECT * FROM anonymize_information_loss('nps', method => 'kanon',
    qi => 'age, sex, los, surgery, location', informative => 'disease', k => 10)
UNION ALL
SELECT * FROM anonymize_information_loss('nps', method => 'dp_histogram',
    qi => 'age, sex, los, surgery, location', informative => 'disease', epsilon => 1.0,
    levels => 'age=1, sex=0, los=1, surgery=0, location=1');
