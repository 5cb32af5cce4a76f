-- The data owner's setup for public_access.slt, run with the owner's rights before the
-- public session starts (as dfanon --public --init does). Four neighbouring sources:
-- t_plus adds one record with a new class, t_null one with a NULL quasi-identifier,
-- t_missing one whose age is not in the hierarchy.
-- public-policy: {"tables": ["t_hierarchy_*"], "sources": {"t": {"qi": {"age": "t_hierarchy_age", "sex": "t_hierarchy_sex"}, "informative": {"disease": "t_hierarchy_disease"}}, "t_plus": {"qi": {"age": "t_hierarchy_age", "sex": "t_hierarchy_sex"}, "informative": {"disease": "t_hierarchy_disease"}}, "t_null": {"qi": {"age": "t_hierarchy_age", "sex": "t_hierarchy_sex"}, "informative": {"disease": "t_hierarchy_disease"}}, "t_missing": {"qi": {"age": "t_hierarchy_age", "sex": "t_hierarchy_sex"}, "informative": {"disease": "t_hierarchy_disease"}}}}
-- epsilon-budget: 100
CREATE TABLE t(age INT, sex VARCHAR, disease VARCHAR) AS VALUES (30, 'M', 'A'), (40, 'F', 'B'), (50, 'M', 'A'), (30, 'F', 'A'), (40, 'M', 'C'), (50, 'F', 'B'), (30, 'M', 'B'), (40, 'F', 'A');
CREATE TABLE t_plus AS SELECT * FROM t UNION ALL VALUES (50, 'M', 'Z');
CREATE TABLE t_null AS SELECT * FROM t UNION ALL VALUES (CAST(NULL AS INT), 'M', 'A');
CREATE TABLE t_missing AS SELECT * FROM t UNION ALL VALUES (99, 'M', 'A');
CREATE TABLE t_hierarchy_age(v VARCHAR, l1 VARCHAR, l2 VARCHAR) AS VALUES ('30', '[30-50)', '*'), ('40', '[30-50)', '*'), ('50', '[50-70)', '*');
CREATE TABLE t_hierarchy_sex(v VARCHAR, l1 VARCHAR) AS VALUES ('M', '*'), ('F', '*');
CREATE TABLE t_hierarchy_disease(v VARCHAR, l1 VARCHAR) AS VALUES ('A', '*'), ('B', '*'), ('C', '*');
CREATE TABLE secret_h(v VARCHAR, l1 VARCHAR) AS VALUES ('30', '*'), ('40', '*'), ('50', '*');
CREATE VIEW t_hierarchy_view AS SELECT * FROM interval_hierarchy('30..60', '10');
