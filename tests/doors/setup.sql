-- The owner's tables for the door tests: published hierarchies and two neighbouring sources.
CREATE TABLE h_age(v VARCHAR, l1 VARCHAR, l2 VARCHAR) AS VALUES
  ('25', '[20-40)', '*'), ('30', '[20-40)', '*'), ('40', '[40-60)', '*'),
  ('50', '[40-60)', '*'), ('60', '[60-80)', '*');
CREATE TABLE h_sex(v VARCHAR, l1 VARCHAR) AS VALUES ('M', '*'), ('F', '*');
CREATE TABLE h_disease(v VARCHAR, l1 VARCHAR) AS VALUES ('A', '*'), ('B', '*'), ('C', '*');
CREATE TABLE h_los(v VARCHAR, l1 VARCHAR) AS SELECT CAST(value AS VARCHAR), '*' FROM generate_series(1, 30);
CREATE TABLE visits(id INT, name VARCHAR, age INT, sex VARCHAR, disease VARCHAR) AS VALUES
  (1, 'Ann', 40, 'F', 'A'), (2, 'Bob', 40, 'M', 'B'), (3, 'Cem', 50, 'M', 'A'),
  (4, 'Dora', 50, 'F', 'A'), (5, 'Eli', 60, 'M', 'B'), (6, 'Fay', 60, 'F', 'B'),
  (7, 'Gus', 40, 'M', 'B'), (8, 'Hana', 50, 'F', 'A'), (9, 'Ivo', 60, 'M', 'A'),
  (10, 'Jo', 40, 'F', 'A');
CREATE TABLE visits_plus AS SELECT * FROM visits UNION ALL VALUES (11, 'Kim', 25, 'F', 'Z');
