-- The main job on the embedded demo data:
--   generate NPS-shaped data -> Parquet -> IPA release -> the paper's Q1 on original vs release.
-- Run with:  cargo run --release -- -f sql/nps_hierarchies.sql sql/demo.sql

-- 1. 1,361,000 synthetic patients, written to Parquet and read back as the source table.
COPY (SELECT * FROM nps_demo()) TO 'out/nps.parquet' STORED AS PARQUET;
CREATE EXTERNAL TABLE nps STORED AS PARQUET LOCATION 'out/nps.parquet';
SELECT COUNT(*) AS patients, COUNT(DISTINCT disease) AS diseases FROM nps;

-- 2. Hierarchies: sql/nps_hierarchies.sql (run before this file) creates nps_hierarchy_<column>.

-- 3. The IPA release over the full 256-node lattice, epsilon = 1 (split 0.1/0.3/0.3/0.3).
CREATE TABLE released AS
  SELECT * FROM anonymize('nps', method => 'ipa',
      qi => 'age, sex, los, surgery, location', informative => 'disease',
      epsilon => 1.0, suppression_threshold => 2);
SELECT * FROM anonymize_metadata('nps', method => 'ipa',
      qi => 'age, sex, los, surgery, location', informative => 'disease',
      epsilon => 1.0, suppression_threshold => 2)
  WHERE key IN ('levels', 'epsilon', 'released_rows', 'seeded', 'dropped_columns');
SELECT * FROM released LIMIT 5;
COPY released TO 'out/released.parquet' STORED AS PARQUET;

-- 4. Q1 (male, no surgery, stroke; per 5-year age group) on the original data.
--    Row label L covers ages [L-5, L-1], as in the paper's Table 9.
SELECT FLOOR(age / 5) * 5 + 5 AS age_group, COUNT(*) AS original
FROM nps
WHERE sex = 'M' AND surgery = 'N' AND disease LIKE 'I6%'
GROUP BY 1 ORDER BY 1;

-- 5. The same question on the release: count per released age value (an interval when age
--    was generalized; '*' rows are suppressed records and cannot be attributed).
SELECT age, COUNT(*) AS released
FROM released
WHERE sex IN ('M', '*') AND surgery IN ('N', '*') AND disease LIKE 'I6%'
GROUP BY age ORDER BY age;
