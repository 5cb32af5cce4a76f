-- Generalization hierarchies of the IPA reference implementation for the NPS data
-- (docs/METHODS.md §1.12.1), in ARX layout: column 0 the raw value, column i its level-i label.
-- They follow anonymize()'s naming convention <table>_hierarchy_<column>, so
-- qi => 'age, sex, los, surgery, location' finds them without ':table'.
CREATE VIEW nps_hierarchy_age AS
  SELECT * FROM interval_hierarchy('1..100', '10', '0,30,60,100');
CREATE VIEW nps_hierarchy_sex AS
  SELECT * FROM (VALUES ('M', '*'), ('F', '*')) AS h(value, level_1);
CREATE VIEW nps_hierarchy_los AS
  SELECT * FROM interval_hierarchy('1..400', '1,2,5,10,30,400', '1,2,400');
CREATE VIEW nps_hierarchy_surgery AS
  SELECT * FROM (VALUES ('Y', '*'), ('N', '*')) AS h(value, level_1);
CREATE VIEW nps_hierarchy_location AS
  SELECT * FROM interval_hierarchy('11,21..26,31..39', '11,12,21,27,31,40', '11,12,21,40');
-- The demo's disease codes (every code nps_demo() can hold) and their groups: the public
-- code list a public user names for dp_histogram, informative => 'disease:nps_hierarchy_disease'.
CREATE VIEW nps_hierarchy_disease AS
  SELECT * FROM nps_disease_hierarchy();
