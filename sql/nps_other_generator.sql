-- A second NPS-shaped generator, independent of nps_demo(): written in SQL, with its own
-- distributions (older patients, strokes at 0.1 % + 0.04 % per year of age, 100 stroke
-- codes among about 700, exponential stays with a heavy tail, skewed locations), and
-- deterministic (each column hashes the row number with its own constants). It checks that
-- the IPA results hold on data the methods were not developed on:
--   cargo run --release -p dfanon -- -f sql/nps_hierarchies.sql sql/nps_other_generator.sql sql/paper_q1_q4.sql
-- (paper_q1_q4.sql keeps an existing table nps). ROWS below sets the size.
CREATE TABLE nps_uniform AS
  SELECT
    CAST(((value * 1103515245 + 12345) % 2147483648 * 1664525 + 1013904223) % 2147483648 AS DOUBLE) / 2147483648.0 AS ua,
    CAST(((value * 22695477 + 1) % 2147483648 * 1103515245 + 12345) % 2147483648 AS DOUBLE) / 2147483648.0 AS us,
    CAST(((value * 134775813 + 7) % 2147483648 * 214013 + 2531011) % 2147483648 AS DOUBLE) / 2147483648.0 AS up,
    CAST(((value * 69069 + 11) % 2147483648 * 1664525 + 1013904223) % 2147483648 AS DOUBLE) / 2147483648.0 AS ud,
    CAST(((value * 1566083941 + 13) % 2147483648 * 22695477 + 1) % 2147483648 AS DOUBLE) / 2147483648.0 AS ue,
    CAST(((value * 1812433253 + 17) % 2147483648 * 134775813 + 1) % 2147483648 AS DOUBLE) / 2147483648.0 AS ul,
    CAST(((value * 214013 + 19) % 2147483648 * 1566083941 + 3) % 2147483648 AS DOUBLE) / 2147483648.0 AS ut,
    CAST(((value * 16807 + 23) % 2147483648 * 1812433253 + 5) % 2147483648 AS DOUBLE) / 2147483648.0 AS ug,
    CAST(((value * 48271 + 29) % 2147483648 * 69069 + 7) % 2147483648 AS DOUBLE) / 2147483648.0 AS uh
  FROM generate_series(1, 1000000);  -- ROWS

CREATE TABLE nps_draft AS
  SELECT *, CAST(1 + FLOOR(99.999 * POWER(ua, 0.7)) AS INT) AS age FROM nps_uniform;

CREATE TABLE nps_stroke AS
  SELECT *, up < 0.001 + 0.0004 * age AS stroke FROM nps_draft;

CREATE TABLE IF NOT EXISTS nps AS
  SELECT
    age,
    CASE WHEN us < 0.48 THEN 'M' ELSE 'F' END AS sex,
    CAST(LEAST(400, 1 + FLOOR(-LN(1.0 - ul) * (CASE WHEN stroke THEN 9.0 ELSE 3.0 END)
                                * (CASE WHEN ut < 0.02 THEN 8.0 ELSE 1.0 END))) AS INT) AS los,
    CASE WHEN ug < (CASE WHEN stroke THEN 0.1 ELSE 0.25 END) THEN 'Y' ELSE 'N' END AS surgery,
    CAST(make_array(11, 21, 22, 23, 24, 25, 26, 31, 32, 33, 34, 35, 36, 37, 38, 39)
           [1 + CAST(FLOOR(POWER(uh, 1.5) * 16) AS INT)] AS INT) AS location,
    CASE WHEN stroke
      THEN 'I6' || CAST(CAST(FLOOR(ud * 10) AS INT) AS VARCHAR) || CAST(CAST(FLOOR(ue * 10) AS INT) AS VARCHAR)
      ELSE substr('ABCDEFGHJKLMNOPQRSTUVW', 1 + CAST(FLOOR(ud * 22) AS INT), 1)
           || lpad(CAST(CAST(FLOOR(POWER(ue, 2) * 30) AS INT) AS VARCHAR), 2, '0')
    END AS disease
  FROM nps_stroke;

DROP TABLE nps_uniform;
DROP TABLE nps_draft;
DROP TABLE nps_stroke;

SELECT COUNT(*) AS patients, COUNT(DISTINCT disease) AS diseases,
       SUM(CASE WHEN disease LIKE 'I6%' THEN 1 ELSE 0 END) AS strokes,
       ROUND(AVG(los), 2) AS mean_stay, MIN(age) AS min_age, MAX(age) AS max_age
FROM nps;
