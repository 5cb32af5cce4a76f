//! MST (McKenna, Miklau & Sheldon 2021), in progress: a differentially private synthetic
//! table from noisy 1-way marginals, a maximum spanning tree of 2-way marginals chosen with
//! the exponential mechanism, its 2-way marginals measured, the tree's graphical model
//! estimated and records sampled from it. Built so far: the budget ([`budget`]), the
//! records and their marginals ([`records`]), the 1-way measurements, the domain
//! compression and the tree ([`select`]). Not yet a method: the estimation and the
//! sampling come next.

pub mod budget;
pub mod estimate;
pub mod records;
pub mod select;
