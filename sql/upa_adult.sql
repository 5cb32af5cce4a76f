-- UPA (Lee et al. 2017, Figs. 5-6) on the Adult data: LM and counterfeit counts of the
-- h-ceiled release next to the LM of optimal k-anonymity (no suppression), for
-- k = 3, 5, 10 at h = 0.3 and for h = 0.25, 0.30, 0.35 at k = 5.
-- Seven quasi-identifiers (the paper does not list them: Adult's first seven in ARX's
-- order), occupation as the sensitive attribute (the paper's queries filter on it).
-- Run with:  cargo run --release -p dfanon -- -f sql/upa_adult.sql

CREATE EXTERNAL TABLE adult STORED AS CSV LOCATION 'tests/data/adult/adult.csv' OPTIONS ('format.delimiter' ';', 'format.has_header' 'true');
CREATE EXTERNAL TABLE adult_hierarchy_sex STORED AS CSV LOCATION 'tests/data/adult/adult_hierarchy_sex.csv' OPTIONS ('format.delimiter' ';', 'format.has_header' 'false');
CREATE EXTERNAL TABLE adult_hierarchy_age STORED AS CSV LOCATION 'tests/data/adult/adult_hierarchy_age.csv' OPTIONS ('format.delimiter' ';', 'format.has_header' 'false');
CREATE EXTERNAL TABLE adult_hierarchy_race STORED AS CSV LOCATION 'tests/data/adult/adult_hierarchy_race.csv' OPTIONS ('format.delimiter' ';', 'format.has_header' 'false');
CREATE EXTERNAL TABLE "adult_hierarchy_marital-status" STORED AS CSV LOCATION 'tests/data/adult/adult_hierarchy_marital-status.csv' OPTIONS ('format.delimiter' ';', 'format.has_header' 'false');
CREATE EXTERNAL TABLE adult_hierarchy_education STORED AS CSV LOCATION 'tests/data/adult/adult_hierarchy_education.csv' OPTIONS ('format.delimiter' ';', 'format.has_header' 'false');
CREATE EXTERNAL TABLE "adult_hierarchy_native-country" STORED AS CSV LOCATION 'tests/data/adult/adult_hierarchy_native-country.csv' OPTIONS ('format.delimiter' ';', 'format.has_header' 'false');
CREATE EXTERNAL TABLE adult_hierarchy_workclass STORED AS CSV LOCATION 'tests/data/adult/adult_hierarchy_workclass.csv' OPTIONS ('format.delimiter' ';', 'format.has_header' 'false');

CREATE VIEW runs AS
  SELECT 'upa' AS method, 3 AS k, 0.3 AS h, key, value FROM anonymize_metadata('adult', method => 'upa',
    qi => 'sex, age, race, marital-status, education, native-country, workclass', sensitive => 'occupation', k => 3, h => 0.3, seed => 1)
  UNION ALL SELECT 'upa', 5, 0.3, key, value FROM anonymize_metadata('adult', method => 'upa',
    qi => 'sex, age, race, marital-status, education, native-country, workclass', sensitive => 'occupation', k => 5, h => 0.3, seed => 1)
  UNION ALL SELECT 'upa', 10, 0.3, key, value FROM anonymize_metadata('adult', method => 'upa',
    qi => 'sex, age, race, marital-status, education, native-country, workclass', sensitive => 'occupation', k => 10, h => 0.3, seed => 1)
  UNION ALL SELECT 'upa', 5, 0.25, key, value FROM anonymize_metadata('adult', method => 'upa',
    qi => 'sex, age, race, marital-status, education, native-country, workclass', sensitive => 'occupation', k => 5, h => 0.25, seed => 1)
  UNION ALL SELECT 'upa', 5, 0.35, key, value FROM anonymize_metadata('adult', method => 'upa',
    qi => 'sex, age, race, marital-status, education, native-country, workclass', sensitive => 'occupation', k => 5, h => 0.35, seed => 1);

-- The h-ceiled releases: node, LM and counterfeits (the paper: 125, 132, 103 for k = 3, 5,
-- 10 at h = 0.3; 138, 132, 38 for h = 0.25, 0.30, 0.35 at k = 5; LM at most 0.3).
SELECT k, h,
  MAX(CASE WHEN key = 'node' THEN value END) AS node,
  ROUND(CAST(MAX(CASE WHEN key = 'lm' THEN value END) AS DOUBLE), 4) AS lm,
  MAX(CASE WHEN key = 'counterfeits' THEN value END) AS counterfeits,
  MAX(CASE WHEN key = 'released_rows' THEN value END) AS released_rows
FROM runs GROUP BY k, h ORDER BY h, k;

-- Optimal k-anonymity without suppression, LM of the release (the paper: at least 0.37 at
-- k = 3, above 0.4 at k = 10).
SELECT 3 AS k, ROUND(lm, 4) AS lm FROM anonymize_information_loss('adult', method => 'kanon',
    qi => 'sex, age, race, marital-status, education, native-country, workclass', sensitive => 'occupation', k => 3, suppression_limit => 0)
UNION ALL SELECT 5, ROUND(lm, 4) FROM anonymize_information_loss('adult', method => 'kanon',
    qi => 'sex, age, race, marital-status, education, native-country, workclass', sensitive => 'occupation', k => 5, suppression_limit => 0)
UNION ALL SELECT 10, ROUND(lm, 4) FROM anonymize_information_loss('adult', method => 'kanon',
    qi => 'sex, age, race, marital-status, education, native-country, workclass', sensitive => 'occupation', k => 10, suppression_limit => 0)
ORDER BY k;
