-- The server example's source: 1,361,000 synthetic NPS-shaped patients, in memory.
-- (sql/nps_hierarchies.sql, run before this file, makes the hierarchies nps_hierarchy_*.)
CREATE TABLE nps AS SELECT * FROM nps_demo();
