-- The data owner's setup for public_dates.slt: admissions with a TIMESTAMP, its
-- quasi-identifier bound by the release policy to a published date hierarchy.
-- public-policy: {"tables": ["stay_months", "sexes", "diagnoses"], "sources": {"stays": {"qi": {"admitted": "stay_months", "sex": "sexes"}, "informative": {"diagnosis": "diagnoses"}}}}
-- epsilon-budget: 10
CREATE TABLE stays AS SELECT to_timestamp_seconds(1546329600 + (value * 7 % 365) * 86400 + (value % 13) * 3600) AS admitted, CASE WHEN value % 2 = 0 THEN 'F' ELSE 'M' END AS sex, CASE WHEN value % 3 = 0 THEN 'I63' ELSE 'J18' END AS diagnosis FROM range(0, 2000);
CREATE TABLE stay_months AS SELECT * FROM date_hierarchy('2019-01-01..2019-12-31', levels => 'month|quarter|year');
CREATE TABLE sexes(value VARCHAR, level_1 VARCHAR) AS VALUES ('F', '*'), ('M', '*');
CREATE TABLE diagnoses(value VARCHAR, level_1 VARCHAR) AS VALUES ('I63', '*'), ('J18', '*');
